//! The built-in tools a config can name: `calculator`, `current_time`,
//! `word_count`, `emit_event`, `yield_output`.

use std::sync::Arc;
use std::time::SystemTime;

use serde::Deserialize;
use troupe_agents::{FunctionTool, Tool, schemars};

use crate::arithmetic::evaluate;

/// The names of the built-in tools.
pub const BUILTIN_TOOLS: &[&str] = &[
    "calculator",
    "current_time",
    "word_count",
    "emit_event",
    "yield_output",
];

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
        crate::builtin_emit::NAME => Arc::new(crate::builtin_emit::EmitEvent::new()),
        crate::builtin_yield::NAME => Arc::new(crate::builtin_yield::YieldOutput::new()),
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
