//! The `calculator` tool's arithmetic: numbers, `+ - * / % ^`,
//! parentheses.

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
