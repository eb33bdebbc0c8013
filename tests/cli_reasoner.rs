//! The reasoning agent of seeds 000 and 003 through the binary (issue
//! 43): `examples/configs/reasoner.yaml` runs offline, and every reasoner
//! turn's prompt — the agent's and its branched copies' — is checked for
//! the placeholders the seed describes, from the model calls `--record`
//! writes.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use std::collections::BTreeMap;

use common::{run, text, write};

const EXAMPLE: &str = include_str!("../examples/configs/reasoner.yaml");

/// The placeholders of the example's instructions, cut out of a system
/// prompt by the text around them.
fn placeholders(system: &str) -> BTreeMap<&'static str, String> {
    let marks = [
        (
            "conversation",
            "Conversation so far:\n",
            "\nWhere the task stands: ",
        ),
        (
            "current_state",
            "Where the task stands: ",
            "\nEarlier states:\n",
        ),
        (
            "previous_states",
            "Earlier states:\n",
            "\nResults of your last actions:\n",
        ),
        (
            "action_result",
            "Results of your last actions:\n",
            "\nWhat they left to remember:\n",
        ),
        (
            "action_memory",
            "What they left to remember:\n",
            "\nAttached: ",
        ),
        (
            "attachments",
            "Attached: ",
            "\n\n\nAnswer with one JSON object",
        ),
    ];
    marks
        .iter()
        .map(|(name, before, after)| {
            let start = system
                .find(before)
                .unwrap_or_else(|| panic!("{before}: {system}"))
                + before.len();
            let end = start
                + system[start..]
                    .find(after)
                    .unwrap_or_else(|| panic!("{after}: {system}"));
            (*name, system[start..end].to_string())
        })
        .collect()
}

/// One reasoner turn as it was asked: its placeholders, and what its
/// conversation says.
struct Asked {
    filled: BTreeMap<&'static str, String>,
    chat: String,
    answers: usize,
}

fn reasoner_turns(dir: &std::path::Path) -> Vec<Asked> {
    let calls = std::fs::read_to_string(dir.join("rec/model_calls.jsonl")).unwrap();
    calls
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).unwrap())
        // Calls are keyed by agent path: the agent's own at `…/thinker`,
        // its copies' at `…/thinker/actions/B`, `…/actions/D/actions/X`.
        // Its copies are told apart from the actions' other agents (the
        // writer, summarizers, researchers) by the agent's own prompt.
        .filter(|c| {
            let path = c["agent"].as_str().unwrap_or_default();
            let system = c["request"]["messages"][0]["System"]["content"]
                .as_str()
                .unwrap_or_default();
            (path == "thinker" || path.contains("/thinker"))
                && system.contains("Results of your last actions:\n")
        })
        .map(|c| {
            let messages = c["request"]["messages"].as_array().unwrap().clone();
            let system = messages[0]["System"]["content"].as_str().unwrap();
            Asked {
                filled: placeholders(system),
                chat: serde_json::to_string(&messages[1..]).unwrap(),
                answers: messages
                    .iter()
                    .filter(|m| m.get("Assistant").is_some())
                    .count(),
            }
        })
        .collect()
}

/// The turn of the copy whose chat holds `mark` (the agent's own when
/// `None`), after `answers` earlier answers.
fn turn<'a>(turns: &'a [Asked], mark: Option<&str>, answers: usize) -> &'a Asked {
    let found: Vec<&Asked> = turns
        .iter()
        .filter(|t| match mark {
            Some(m) => t.chat.contains(m),
            None => !t.chat.contains("The result of action"),
        })
        .filter(|t| t.answers == answers)
        .collect();
    assert_eq!(found.len(), 1, "{mark:?} after {answers} answers");
    found[0]
}

#[test]
fn the_reasoner_example_fills_every_prompt_as_the_seed_says() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "reasoner.yaml", EXAMPLE);
    let out = run(
        dir.path(),
        &[
            "run",
            "--offline",
            "--no-input",
            "--record",
            "rec",
            "reasoner.yaml",
            "Write a note on oat milk",
        ],
    );
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{err}");
    // Ended by the reasoner's status, with its last response.
    assert!(
        stdout.contains("Oat milk: oats and water, foams well, a little sugar."),
        "{stdout}"
    );
    let turns = reasoner_turns(dir.path());
    // The agent: three turns; B, C, D, X, Y: one each, D two.
    assert_eq!(turns.len(), 9);

    // The agent's first turn: the task, nothing done yet.
    let first = &turn(&turns, None, 0).filled;
    assert_eq!(first["conversation"], "User: Write a note on oat milk");
    for empty in [
        "current_state",
        "previous_states",
        "action_result",
        "action_memory",
    ] {
        assert_eq!(first[empty], "", "{empty}");
    }

    // Its second turn sees the groups' results: [[A], [B, C, D], [E]]
    // with the summarizer after the parallel group, and their memories.
    let second = &turn(&turns, None, 1).filled;
    let result = &second["action_result"];
    for id in ["A", "B", "C", "D", "B+C+D", "E"] {
        assert!(
            result.contains(&format!("<Action id=\"{id}\">")),
            "{id}: {result}"
        );
    }
    assert!(
        result.contains("<ActionResult>B: about 120 kcal a cup.</ActionResult>"),
        "{result}"
    );
    assert!(result.contains("The branches agree"), "{result}");
    let memory = &second["action_memory"];
    assert!(
        memory.contains("A: counted 8 words, 1 lines, 36 characters"),
        "{memory}"
    );
    assert!(
        memory.contains("B: noted: Oat milk has about 120 kcal a cup."),
        "{memory}"
    );
    // D's memory carries what its own branches X and Y kept.
    assert!(memory.contains("D: counted 4 words"), "{memory}");
    assert!(memory.contains("X: counted 3 words"), "{memory}");
    assert_eq!(second["current_state"], "[ongoing] gathering facts");
    assert_eq!(second["previous_states"], "");
    assert_eq!(
        second["conversation"],
        "User: Write a note on oat milk\nAgent: Looking into oat milk."
    );

    // The third, after the dependency graph F -> G.
    let third = &turn(&turns, None, 2).filled;
    assert!(third["action_result"].contains("<Action id=\"F\">"));
    assert!(third["action_result"].contains("<Action id=\"G\">"));
    assert!(
        !third["action_result"].contains("<Action id=\"A\">"),
        "replaced, not kept"
    );
    assert_eq!(
        third["action_memory"],
        "F: noted: Oat milk has about 120 kcal a cup."
    );
    assert_eq!(
        third["current_state"],
        "[ongoing] checking the draft against one more source"
    );
    assert_eq!(third["previous_states"], "[ongoing] gathering facts");
    assert!(third["conversation"].ends_with("Agent: Checking the draft."));

    // B inherits the agent's states and conversation, and sees A's result
    // as an attachment of its step.
    let b = &turn(&turns, Some("The result of action B"), 0).filled;
    assert_eq!(b["current_state"], "[ongoing] gathering facts");
    assert_eq!(
        b["conversation"],
        "User: Write a note on oat milk\nAgent: Looking into oat milk."
    );
    assert!(b["action_result"].contains("<Action id=\"B\">"));
    assert_eq!(
        b["action_memory"],
        "B: noted: Oat milk has about 120 kcal a cup."
    );
    assert!(
        b["attachments"].contains("<attachment id=\"A\""),
        "{}",
        b["attachments"]
    );

    // C starts fresh: no states, no conversation, only its result.
    let c = &turn(&turns, Some("The result of action C"), 0).filled;
    assert_eq!(c["current_state"], "");
    assert_eq!(c["conversation"], "");
    assert!(c["action_result"].contains("<Action id=\"C\">"));

    // D starts fresh and branches again; X inherits D's state.
    let d = &turn(&turns, Some("The result of action D"), 1).filled;
    for id in ["X", "Y", "X+Y"] {
        assert!(
            d["action_result"].contains(&format!("<Action id=\"{id}\">")),
            "{id}"
        );
    }
    assert_eq!(d["current_state"], "[ongoing] foam to check twice");
    let x = &turn(&turns, Some("The result of action X"), 0).filled;
    assert_eq!(x["current_state"], "[ongoing] foam to check twice");
    assert_eq!(
        x["action_memory"],
        "X: counted 3 words, 1 lines, 14 characters"
    );
}

/// A reasoner whose answer is not one fails its run saying so.
#[test]
fn a_reasoner_answer_that_is_not_one_fails_the_run_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "bad.yaml",
        r#"version: 1
models:
  m: {provider: scripted}
agents:
  thinker: {model: m, script: ["I think we are done"]}
  writer: {model: m, script: [ok]}
workflow:
  reasoner: {agent: thinker, actions: [writer]}
"#,
    );
    let out = run(
        dir.path(),
        &["run", "--offline", "--no-input", "bad.yaml", "go"],
    );
    let err = text(&out.stderr);
    assert_ne!(out.status.code(), Some(0), "{err}");
    assert!(err.contains("not a reasoner answer"), "{err}");
}

/// An MCP tool's result carries its action memory in
/// `_meta["troupe/memory"]`: the next reasoner turn sees it.
#[test]
fn an_mcp_results_memory_reaches_the_next_reasoner_turn() {
    let dir = tempfile::tempdir().unwrap();
    let server = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/mcp_server.py");
    let config = format!(
        r#"version: 1
models:
  m: {{provider: scripted}}
agents:
  thinker:
    model: m
    instructions: "Results: {{action_result}} Memory: {{action_memory}} End."
    script:
      - structured: {{status: ongoing, next_actions: [[{{id: L, action: remember, input: oats}}]]}}
      - structured: {{status: completed, response: done}}
workflow:
  reasoner:
    agent: thinker
    tools:
      - mcp: {{command: python3, args: ["{server}"], tools: [remember]}}
"#
    );
    write(dir.path(), "mcp.yaml", &config);
    let out = run(
        dir.path(),
        &[
            "run",
            "--offline",
            "--no-input",
            "--record",
            "rec",
            "mcp.yaml",
            "go",
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let calls = std::fs::read_to_string(dir.path().join("rec/model_calls.jsonl")).unwrap();
    let second: serde_json::Value = serde_json::from_str(calls.lines().nth(1).unwrap()).unwrap();
    let system = second["request"]["messages"][0]["System"]["content"]
        .as_str()
        .unwrap();
    assert!(
        system.contains("<ActionResult>a long page about oats</ActionResult>"),
        "{system}"
    );
    assert!(
        system.contains("Memory: L: oats: worth keeping End."),
        "{system}"
    );
}

/// A reasoner that never says `completed` stops at `max_iterations`,
/// saying so, after running what each turn asked.
#[test]
fn a_reasoner_that_never_completes_stops_at_its_ceiling() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "loop.yaml",
        r#"version: 1
models:
  m: {provider: scripted, when_exhausted: repeat_last}
agents:
  thinker:
    model: m
    script:
      - structured: {status: ongoing, response: again, next_actions: [[{action: word_count, input: one two}]]}
workflow:
  reasoner: {agent: thinker, actions: [word_count], max_iterations: 2}
"#,
    );
    let out = run(
        dir.path(),
        &[
            "run",
            "--offline",
            "--no-input",
            "--events",
            "jsonl",
            "loop.yaml",
            "go",
        ],
    );
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        stdout.contains("Stopped after 2 reasoner turns (max_iterations)"),
        "{stdout}"
    );
    let answers = stdout.matches("\"reasoner_answer\"").count();
    assert_eq!(answers, 2, "{stdout}");
}

/// The workflow's stop condition judges each batch: a batch it stops ends
/// the loop, saying why.
#[test]
fn a_stop_condition_that_holds_in_a_batch_ends_the_loop() {
    let dir = tempfile::tempdir().unwrap();
    write(
        dir.path(),
        "stop.yaml",
        r#"version: 1
models:
  m: {provider: scripted, when_exhausted: repeat_last}
agents:
  thinker:
    model: m
    script:
      - structured: {status: ongoing, response: again, next_actions: [[{action: writer, input: write}]]}
  writer: {model: m, script: ["done, STOP here"]}
workflow:
  reasoner: {agent: thinker, actions: [writer], max_iterations: 50}
  stop: {text_mention: STOP}
"#,
    );
    let out = run(
        dir.path(),
        &[
            "run",
            "--offline",
            "--no-input",
            "--quiet",
            "stop.yaml",
            "go",
        ],
    );
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert_eq!(
        stdout.trim_end(),
        "Stopped by the stop condition: text_mention(\"STOP\"): 'writer' mentioned it"
    );
}
