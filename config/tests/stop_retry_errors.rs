//! Malformed stop conditions and retries: each must fail to load with a
//! diagnostic naming the file, the line and column (inside a stop
//! expression: the column of the fault), the field, and what is wrong.
//! (Apart from `config_errors.rs` to keep both files short.)

use troupe_config::Config;

/// A valid preamble the cases build on.
const BASE: &str = "version: 1
models:
  m: {provider: scripted, replies: [hi]}
agents:
  a: {model: m}
  b: {model: m}
";

struct Case {
    name: &'static str,
    yaml: String,
    /// `t.yaml:LINE:COL: field `FIELD``, then a piece of the message.
    at: &'static str,
    field: &'static str,
    says: &'static str,
}

fn with_base(
    name: &'static str,
    rest: &str,
    at: &'static str,
    field: &'static str,
    says: &'static str,
) -> Case {
    Case {
        name,
        yaml: format!("{BASE}{rest}"),
        at,
        field,
        says,
    }
}

/// Stop expressions (located inside the expression), stop fields, and
/// retries: patterns, and where a retry cannot go.
fn stop_and_retry_cases() -> Vec<Case> {
    let seq = "workflow:\n  sequential: {participants: [a]}\n";
    let stop = |name, expr: &str, at, says| {
        with_base(
            name,
            &format!("{seq}  stop: {expr}\n"),
            at,
            "workflow.stop",
            says,
        )
    };
    vec![
        // `  stop: ` is 8 columns: a plain expression starts at column 9.
        stop(
            "unknown stop kind in an expression",
            "max_messages(10) | nope(3)",
            "t.yaml:9:28",
            "unknown stop condition `nope`",
        ),
        stop(
            "a count that is no number, inside a quoted expression",
            "\"max_messages(ten) | stop_message\"",
            "t.yaml:9:23",
            "`ten` is not a whole number",
        ),
        stop(
            "an expression that ends after an operator",
            "\"text_mention(APPROVE) |\"",
            "t.yaml:9:33",
            "expected a stop condition",
        ),
        stop(
            "a group never closed",
            "\"(max_turns(3) & stop_message\"",
            "t.yaml:9:38",
            "expected `)` closing the group",
        ),
        stop(
            "a bad timeout in an expression",
            "timeout(soon) | max_turns(4)",
            "t.yaml:9:17",
            "`soon` is not a duration",
        ),
        stop(
            "handoff with two targets",
            "\"handoff(user, boss)\"",
            "t.yaml:9:24",
            "`handoff` takes one argument",
        ),
        stop(
            "external in a config",
            "\"max_turns(9) | external\"",
            "t.yaml:9:25",
            "`troupe run` already stops gracefully on Ctrl-C",
        ),
        stop(
            "a functional condition in a config",
            "\"custom(f) | max_turns(2)\"",
            "t.yaml:9:10",
            "it has no text form",
        ),
        with_base(
            "an expression nested in any:",
            &format!("{seq}  stop: {{any: [\"max_turns(2)\", \"stop_message(now)\"]}}\n"),
            "t.yaml:9:46",
            "workflow.stop.any[1]",
            "`stop_message` takes no arguments",
        ),
        with_base(
            "stop_message: false",
            &format!("{seq}  stop: {{stop_message: false}}\n"),
            "t.yaml:9:24",
            "workflow.stop.stop_message",
            "`stop_message: false` never holds",
        ),
        with_base(
            "text_message with no sources",
            &format!("{seq}  stop: {{text_message: []}}\n"),
            "t.yaml:9:24",
            "workflow.stop.text_message",
            "an empty list never holds",
        ),
        with_base(
            "a bad regex in retry.on",
            "workflow:\n  steps:\n    - {agent: a, retry: {max_attempts: 2, on: [timeout, {pattern: \"rate (limit\"}]}}\n",
            "t.yaml:9:67",
            "workflow.steps[0].retry.on[1].pattern",
            "invalid regular expression",
        ),
        with_base(
            "a retry pattern that matches everything",
            "workflow:\n  graph:\n    nodes: [{agent: a, retry: {max_attempts: 1, on: [{pattern: \".*\"}]}}]\n",
            "t.yaml:9:64",
            "workflow.graph.nodes[0].retry.on[0].pattern",
            "matches every error text",
        ),
        with_base(
            "an unknown key beside pattern",
            "workflow:\n  steps:\n    - {agent: a, retry: {max_attempts: 1, on: [{pattern: x, regex: y}]}}\n",
            "t.yaml:9",
            "",
            "regex",
        ),
        with_base(
            "goto into a retried parallel block",
            "workflow:\n  steps:\n    - id: par\n      retry: {max_attempts: 1}\n      steps: [{agent: a}, {agent: b}]\n    - condition: \"{{ $steps.par.output }}\"\n      true: a\n",
            "t.yaml:13:13",
            "workflow.steps[1].true",
            "step `a` is inside parallel block `par`, which has `retry:`",
        ),
        with_base(
            "retry on a condition step",
            "workflow:\n  steps:\n    - agent: a\n    - condition: \"{{ $steps.a.output }}\"\n      retry: {max_attempts: 1}\n      true: [{agent: b}]\n",
            "t.yaml:11:7",
            "workflow.steps[1].retry",
            "`retry` does not belong on a condition step",
        ),
    ]
}

#[test]
fn stop_expressions_and_retry_rules_are_located() {
    let cases = stop_and_retry_cases();
    let mut failures = Vec::new();
    for c in &cases {
        let text = match Config::parse(&c.yaml, "t.yaml") {
            Ok(_) => {
                failures.push(format!("{}: loaded without error", c.name));
                continue;
            }
            Err(e) => e.to_string(),
        };
        let head = if c.field.is_empty() {
            format!("{}:", c.at)
        } else {
            format!("{}: field `{}`: ", c.at, c.field)
        };
        if !text
            .lines()
            .any(|l| l.starts_with(&head) && l.contains(c.says))
        {
            failures.push(format!(
                "{}: expected a line starting `{head}` saying `{}`, got:\n{text}",
                c.name, c.says
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
