//! The built-in tools a config can name: `calculator`, `current_time`,
//! `word_count`.

use std::sync::Arc;
use std::time::SystemTime;

use serde::Deserialize;
use troupe_agents::{FunctionTool, Tool, schemars};

/// The names of the built-in tools.
pub const BUILTIN_TOOLS: &[&str] = &["calculator", "current_time", "word_count"];

#[derive(Deserialize, schemars::JsonSchema)]
struct CalculatorArgs {
    /// An arithmetic expression: numbers, `+ - * / % ^`, parentheses.
    expression: String,
}

#[derive(Deserialize, schemars::JsonSchema)]
struct NoArgs {}

#[derive(Deserialize, schemars::JsonSchema)]
struct TextArgs {
    /// The text to count.
    text: String,
}

/// A built-in tool by name, or `None` for an unknown name.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use troupe_config::builtin_tool;
/// use troupe_agents::ToolContext;
///
/// let calc = builtin_tool("calculator").unwrap();
/// let out = calc.call(r#"{"expression": "2 * (3 + 4)"}"#, ToolContext::detached("c1")).await.unwrap();
/// assert_eq!(out.content, "14");
/// # }
/// ```
pub fn builtin_tool(name: &str) -> Option<Arc<dyn Tool>> {
    let tool: Arc<dyn Tool> = match name {
        "calculator" => Arc::new(FunctionTool::new(
            "calculator",
            "Evaluates an arithmetic expression (numbers, + - * / % ^, parentheses) and returns the result.",
            |a: CalculatorArgs| async move { evaluate(&a.expression).map(format_number) },
        )),
        "current_time" => Arc::new(FunctionTool::new(
            "current_time",
            "The current date and time in UTC (RFC 3339).",
            |_: NoArgs| async move {
                Ok::<_, String>(humantime::format_rfc3339_seconds(SystemTime::now()).to_string())
            },
        )),
        "word_count" => Arc::new(FunctionTool::new(
            "word_count",
            "Counts the words, lines and characters of a text.",
            |a: TextArgs| async move {
                Ok::<_, String>(format!(
                    "{} words, {} lines, {} characters",
                    a.text.split_whitespace().count(),
                    a.text.lines().count(),
                    a.text.chars().count()
                ))
            },
        )),
        _ => return None,
    };
    Some(tool)
}

fn format_number(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e15 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

/// Evaluates arithmetic with a recursive-descent parser; nesting is
/// bounded so hostile input cannot exhaust the stack.
pub(crate) fn evaluate(expression: &str) -> Result<f64, String> {
    let mut p = Parser {
        chars: expression.chars().filter(|c| !c.is_whitespace()).collect(),
        pos: 0,
        depth: 0,
    };
    let v = p.sum()?;
    if p.pos != p.chars.len() {
        return Err(format!(
            "unexpected `{}` at position {}",
            p.chars[p.pos],
            p.pos + 1
        ));
    }
    if v.is_finite() {
        Ok(v)
    } else {
        Err("the result is not a finite number".into())
    }
}

struct Parser {
    chars: Vec<char>,
    pos: usize,
    depth: usize,
}

impl Parser {
    fn peek(&self) -> Option<char> {
        self.chars.get(self.pos).copied()
    }
    fn sum(&mut self) -> Result<f64, String> {
        let mut v = self.product()?;
        while let Some(op @ ('+' | '-')) = self.peek() {
            self.pos += 1;
            let r = self.product()?;
            v = if op == '+' { v + r } else { v - r };
        }
        Ok(v)
    }
    fn product(&mut self) -> Result<f64, String> {
        let mut v = self.power()?;
        while let Some(op @ ('*' | '/' | '%')) = self.peek() {
            self.pos += 1;
            let r = self.power()?;
            v = match op {
                '*' => v * r,
                '/' if r == 0.0 => return Err("division by zero".into()),
                '/' => v / r,
                _ if r == 0.0 => return Err("division by zero".into()),
                _ => v % r,
            };
        }
        Ok(v)
    }
    fn power(&mut self) -> Result<f64, String> {
        let base = self.unary()?;
        if self.peek() == Some('^') {
            self.pos += 1;
            let exp = self.power()?;
            return Ok(base.powf(exp));
        }
        Ok(base)
    }
    fn unary(&mut self) -> Result<f64, String> {
        self.depth += 1;
        if self.depth > 64 {
            return Err("the expression nests too deeply".into());
        }
        let v = match self.peek() {
            Some('-') => {
                self.pos += 1;
                -self.unary()?
            }
            Some('+') => {
                self.pos += 1;
                self.unary()?
            }
            Some('(') => {
                self.pos += 1;
                let v = self.sum()?;
                if self.peek() != Some(')') {
                    return Err("missing `)`".into());
                }
                self.pos += 1;
                v
            }
            Some(c) if c.is_ascii_digit() || c == '.' => {
                let start = self.pos;
                while self
                    .peek()
                    .is_some_and(|c| c.is_ascii_digit() || c == '.' || c == 'e' || c == 'E')
                {
                    self.pos += 1;
                }
                let text: String = self.chars[start..self.pos].iter().collect();
                text.parse::<f64>()
                    .map_err(|_| format!("`{text}` is not a number"))?
            }
            Some(c) => return Err(format!("unexpected `{c}` at position {}", self.pos + 1)),
            None => return Err("the expression ends too early".into()),
        };
        self.depth -= 1;
        Ok(v)
    }
}

#[cfg(test)]
mod tests {
    use super::evaluate;

    #[test]
    fn arithmetic() {
        assert_eq!(evaluate("1 + 2 * 3").unwrap(), 7.0);
        assert_eq!(evaluate("(1 + 2) * 3").unwrap(), 9.0);
        assert_eq!(evaluate("2 ^ 3 ^ 2").unwrap(), 512.0);
        assert_eq!(evaluate("-4 / 2").unwrap(), -2.0);
        assert!(evaluate("1 / 0").is_err());
        assert!(evaluate("2 +").is_err());
        assert!(evaluate("(((").is_err());
        assert!(evaluate(&"(".repeat(10_000)).is_err());
    }
}
