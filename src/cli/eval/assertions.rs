//! A case's assertions checked against what its run showed: each failed
//! one a line saying what was expected and what was seen.

use serde_json::Value;

use super::observe::Observed;
use super::suite::Checks;

/// The assertions of `checks` that `seen` fails, in words (none: passed).
pub(crate) fn failures(checks: &Checks, seen: &Observed, extra_cost: f64) -> Vec<String> {
    let mut out = Vec::new();
    let answer = seen.answer.as_str();
    for text in &checks.contains {
        if !answer.contains(text.as_str()) {
            out.push(format!("the answer does not contain `{text}`"));
        }
    }
    if let Some(re) = &checks.matches {
        match regex::Regex::new(re) {
            Ok(r) if r.is_match(answer) => {}
            Ok(_) => out.push(format!("the answer does not match /{re}/")),
            Err(e) => out.push(format!("bad regex /{re}/: {e}")),
        }
    }
    let parsed = serde_json::from_str::<Value>(answer.trim());
    if let Some(schema) = &checks.schema {
        match (&parsed, jsonschema::validator_for(schema)) {
            (Err(e), _) => out.push(format!("the answer is not JSON ({e})")),
            (_, Err(e)) => out.push(format!("bad schema: {e}")),
            (Ok(v), Ok(validator)) => {
                if let Some(e) = validator.iter_errors(v).next() {
                    out.push(format!(
                        "the answer fails the schema at `{}`: {e}",
                        e.instance_path()
                    ));
                }
            }
        }
    }
    for (pointer, want) in &checks.field {
        match &parsed {
            Err(e) => out.push(format!(
                "the answer is not JSON ({e}), no field `{pointer}`"
            )),
            Ok(v) => match v.pointer(pointer) {
                Some(got) if got == want => {}
                Some(got) => out.push(format!("field `{pointer}` is {got}, not {want}")),
                None => out.push(format!("the answer has no field `{pointer}`")),
            },
        }
    }
    for tool in &checks.tool_called {
        let calls: Vec<&Value> = seen
            .events
            .iter()
            .filter(|e| e["type"] == "tool_call" && e["call"]["name"] == tool.name.as_str())
            .collect();
        if calls.is_empty() {
            out.push(format!("tool `{}` was not called", tool.name));
        } else if let Some(want) = &tool.arguments {
            let fits = calls.iter().any(|c| {
                let args = c["call"]["arguments"]
                    .as_str()
                    .and_then(|a| serde_json::from_str::<Value>(a).ok())
                    .unwrap_or(Value::Null);
                want.iter().all(|(k, v)| args.get(k) == Some(v))
            });
            if !fits {
                out.push(format!(
                    "tool `{}` was not called with {}",
                    tool.name,
                    Value::Object(want.clone())
                ));
            }
        }
    }
    if let Some(order) = &checks.order {
        let spoke = speakers(&seen.events);
        // The agents named spoke in this order; others may speak between.
        let mut left = spoke.iter();
        let in_order = order.iter().all(|name| left.any(|path| names(path, name)));
        if !in_order {
            out.push(format!(
                "agents did not speak in the order [{1}] (they spoke: [{0}])",
                spoke.join(", "),
                order.join(", ")
            ));
        }
    }
    for kind in &checks.event {
        if !seen.events.iter().any(|e| e["type"] == kind.as_str()) {
            out.push(format!("no `{kind}` event"));
        }
    }
    if let Some(max) = checks.max_turns
        && seen.turns > max
    {
        out.push(format!("{} turns, more than {max}", seen.turns));
    }
    if let Some(max) = checks.max_cost {
        let cost = seen.cost + extra_cost;
        if cost > max {
            out.push(format!("cost ${cost:.6}, more than ${max}"));
        }
    }
    if let Some(max) = checks.max_latency_ms
        && seen.latency_ms > max
    {
        out.push(format!("{} ms, more than {max} ms", seen.latency_ms));
    }
    out
}

/// The paths of the agents that produced messages, in order, a speaker
/// repeated in a row counted once.
pub(crate) fn speakers(events: &[Value]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for e in events.iter().filter(|e| e["type"] == "message_produced") {
        let Some(path) = e["path"].as_str() else {
            continue;
        };
        if out.last().map(String::as_str) != Some(path) {
            out.push(path.to_string());
        }
    }
    out
}

/// Whether `name` (an agent's name or path) names the agent at `path`.
fn names(path: &str, name: &str) -> bool {
    path == name || path.ends_with(&format!("/{name}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn checks(yaml: &str) -> Checks {
        serde_saphyr::from_str(yaml).unwrap()
    }

    #[test]
    fn each_assertion_fails_with_what_it_saw() {
        let seen = Observed {
            answer: r#"{"approved": true, "notes": "ok"}"#.into(),
            events: vec![
                json!({"type": "message_produced", "path": "t/a"}),
                json!({"type": "message_produced", "path": "t/a"}),
                json!({"type": "tool_call", "path": "t/b", "call": {"name": "calc", "arguments": "{\"x\":1,\"y\":2}"}}),
                json!({"type": "message_produced", "path": "t/b"}),
            ],
            turns: 3,
            cost: 0.01,
            latency_ms: 50,
            ..Observed::default()
        };
        let ok = checks(
            "{contains: approved, matches: 'notes', schema: {type: object, required: [approved]}, field: {/approved: true}, tool_called: {name: calc, arguments: {x: 1}}, order: [a, t/b], event: [tool_call], max_turns: 3, max_cost: 0.02, max_latency_ms: 50}",
        );
        assert_eq!(failures(&ok, &seen, 0.0), Vec::<String>::new());
        let bad = checks(
            "{contains: [nope], matches: '^x', schema: {type: array}, field: {/approved: false}, tool_called: [{name: calc, arguments: {x: 2}}, {name: other}], order: [b, a], event: handoff, max_turns: 2, max_cost: 0.015, max_latency_ms: 49}",
        );
        let got = failures(&bad, &seen, 0.01);
        assert_eq!(got.len(), 11, "{got:#?}");
        assert!(got.contains(&"field `/approved` is true, not false".to_string()));
        assert!(got.contains(
            &"agents did not speak in the order [b, a] (they spoke: [t/a, t/b])".to_string()
        ));
    }
}
