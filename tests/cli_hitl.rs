//! Human in the loop through the `troupe` binary, each answer given in a
//! process of its own: two questions raised in parallel inside a nested
//! workflow, tool approval (granted and denied), a `user:` agent in a
//! round robin, and a run without a durable store. The example config and
//! questions asked inline on a terminal: `cli_hitl_example.rs`.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]

mod common;
use common::{
    final_thread, jsonl, listed, produced, request_id, result_line, run, run_listed, text,
    tool_results, write,
};

use std::path::Path;

use troupe::{Content, Thread, message::ToolResult};

/// The tool results agent `path` (`survey/alice`: a nested one) keeps in
/// its own thread: what its model is shown after its calls.
fn results_of(thread: &Thread, path: &str) -> Vec<ToolResult> {
    let own = path.split('/').fold(thread, |t, name| {
        t.child(name)
            .unwrap_or_else(|| panic!("no thread for `{name}` of `{path}`"))
    });
    own.messages()
        .iter()
        .filter_map(|m| match &m.content {
            Content::ToolResults(r) => Some(r.clone()),
            _ => None,
        })
        .flatten()
        .collect()
}

/// A `steps:` workflow whose first step is a named workflow running two
/// agents in parallel, each asking the user, and then a step that needs
/// both.
const NESTED: &str = "version: 1
models:
  m: {provider: scripted}
agents:
  alice:
    model: m
    tools: [ask_user]
    script:
      - tool_call: {name: ask_user, arguments: {question: \"Which colour?\"}}
      - \"alice: colour noted\"
  bob:
    model: m
    tools: [ask_user]
    script:
      - tool_call: {name: ask_user, arguments: {question: \"Which size?\"}}
      - \"bob: size noted\"
  summary: {model: m, script: [\"summary: colour and size\"]}
  editor: {model: m, script: [\"editor: both noted\"]}
workflows:
  survey:
    steps:
      - type: parallel
        id: both
        steps: [{agent: alice}, {agent: bob}]
      - agent: summary
workflow:
  steps:
    - workflow: survey
    - agent: editor
checkpoint: {store: sqlite, path: state/runs.db}
";

#[test]
fn two_parallel_questions_in_a_nested_workflow_are_answered_in_two_processes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), "survey.yaml", NESTED);
    let cfg = path.to_str().expect("utf-8");

    // Both agents ask; the run ends waiting on both, by their ids there.
    let out = run(
        dir.path(),
        &["run", "--no-input", "--run-id", "s", cfg, "a t-shirt"],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{err}");
    let runs = listed(dir.path(), cfg);
    assert_eq!(runs[0]["run_id"], "s");
    assert_eq!(runs[0]["status"], "waiting_for_input", "{}", runs[0]);
    let colour = request_id(&runs[0]["requests"], "Which colour?");
    let size = request_id(&runs[0]["requests"], "Which size?");
    assert!(colour.starts_with("survey/alice-"), "{colour}");
    assert!(size.starts_with("survey/bob-"), "{size}");
    for (id, prompt) in [(&colour, "Which colour?"), (&size, "Which size?")] {
        assert!(
            err.contains(&format!("? survey asks ({id}): {prompt}")),
            "{err}"
        );
    }
    // The same as JSON lines: the result line and the events name both.
    let out = run(
        dir.path(),
        &[
            "run",
            "--no-input",
            "--events",
            "jsonl",
            "--run-id",
            "j",
            cfg,
            "a t-shirt",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let result = result_line(&out);
    assert_eq!(result["status"], "waiting_for_input", "{result}");
    let ids = [
        request_id(&result["requests"], "Which colour?"),
        request_id(&result["requests"], "Which size?"),
    ];
    let raised: Vec<String> = jsonl(&out)
        .iter()
        .filter(|e| e["type"] == "input_requested" && e["path"] == "workflow/survey")
        .filter_map(|e| e["request"].as_str().map(String::from))
        .collect();
    assert_eq!(raised, ids, "{}", text(&out.stdout));

    let table = text(&run(dir.path(), &["runs", cfg]).stdout);
    let row = table.lines().nth(2).expect("a row for s, below j's");
    assert!(row.starts_with("s "), "{table}");
    assert!(row.contains("waiting_for_input"), "{table}");
    assert!(row.ends_with(&format!("{colour}, {size}")), "{table}");

    // The id the agent has inside the nested workflow is not the run's.
    let inner = colour.trim_start_matches("survey/");
    let out = run(
        dir.path(),
        &[
            "run",
            "--resume",
            "s",
            "--answer",
            &format!("{inner}=red"),
            cfg,
        ],
    );
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!("run `s` has no question `{inner}`")),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "it waits on: {colour} (survey: Which colour?), {size} (survey: Which size?)"
        )),
        "{err}"
    );

    // One answer, in a new process: the other question still waits.
    let out = run(
        dir.path(),
        &[
            "run",
            "--no-input",
            "--events",
            "jsonl",
            "--resume",
            "s",
            "--answer",
            &format!("{size}=large"),
            cfg,
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let result = result_line(&out);
    assert_eq!(result["status"], "waiting_for_input", "{result}");
    assert_eq!(
        result["requests"],
        serde_json::json!([{"id": colour, "agent": "survey", "prompt": "Which colour?"}])
    );
    let bob = tool_results(&out);
    assert_eq!(bob.len(), 1, "{bob:?}");
    assert_eq!(bob[0].0, "workflow/survey/bob");
    assert_eq!(bob[0].1["content"], "large");
    assert_eq!(
        produced(&out),
        [(
            "workflow/survey/bob".to_string(),
            "bob: size noted".to_string()
        )]
    );
    let s = run_listed(dir.path(), cfg, "s");
    assert_eq!(s["requests"].as_array().map(Vec::len), Some(1), "{s}");

    // The other answer, in another: the run finishes.
    let out = run(
        dir.path(),
        &[
            "run",
            "--no-input",
            "--events",
            "jsonl",
            "--resume",
            "s",
            "--answer",
            &format!("{colour}=red"),
            cfg,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let result = result_line(&out);
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(result["final_response"], "editor: both noted");
    assert_eq!(result["requests"], serde_json::json!([]));
    let alice = tool_results(&out);
    assert_eq!(alice.len(), 1, "{alice:?}");
    assert_eq!(alice[0].0, "workflow/survey/alice");
    assert_eq!(alice[0].1["content"], "red");
    // The step after the parallel block ran once both had their answer,
    // and the run went on from it.
    assert_eq!(
        produced(&out),
        [
            ("workflow/survey/alice", "alice: colour noted"),
            ("workflow/survey/summary", "summary: colour and size"),
            ("workflow/survey", "summary: colour and size"),
            ("workflow/editor", "editor: both noted"),
        ]
        .map(|(p, t)| (p.to_string(), t.to_string()))
    );
    let s = run_listed(dir.path(), cfg, "s");
    assert_eq!(s["status"], "completed", "{s}");

    // Each answer is the result of its own agent's call, in the thread
    // the run ended with.
    let thread = final_thread(&path, "s");
    for (agent, answer) in [("survey/alice", "red"), ("survey/bob", "large")] {
        let results = results_of(&thread, agent);
        assert_eq!(results.len(), 1, "{agent}: {results:?}");
        assert_eq!(results[0].name, "ask_user");
        assert_eq!(results[0].content, answer, "{agent}");
        assert!(!results[0].is_error);
    }
}

/// A clerk whose calculator waits for the user's yes.
const APPROVAL: &str = "version: 1
models:
  m: {provider: scripted}
agents:
  clerk:
    model: m
    tools:
      - calculator: {approval: true}
    script:
      - tool_call: {name: calculator, arguments: {expression: \"6 * 7\"}}
      - \"Refund worked out.\"
checkpoint: {store: sqlite, path: state/runs.db}
";

/// Starts run `id` of `cfg`, which stops to ask about the calculator
/// call; the request's id.
fn asks_for_approval(dir: &Path, cfg: &str, id: &str) -> String {
    let out = run(
        dir,
        &[
            "run",
            "--no-input",
            "--events",
            "jsonl",
            "--run-id",
            id,
            cfg,
            "refund",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    assert!(tool_results(&out).is_empty(), "the tool ran unapproved");
    let result = result_line(&out);
    request_id(
        &result["requests"],
        r#"approve calculator({"expression":"6 * 7"})? yes/no"#,
    )
}

#[test]
fn an_approved_tool_runs_and_a_denied_one_tells_the_model() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(dir.path(), "clerk.yaml", APPROVAL);
    let cfg = path.to_str().expect("utf-8");
    let answer = |run_id: &str, request: &str, text: &str| {
        run(
            dir.path(),
            &[
                "run",
                "--no-input",
                "--events",
                "jsonl",
                "--resume",
                run_id,
                "--answer",
                &format!("{request}={text}"),
                cfg,
            ],
        )
    };

    // Approved: the calculator runs, and the model goes on from its result.
    let request = asks_for_approval(dir.path(), cfg, "yes");
    let out = answer("yes", &request, "yes");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let ran = tool_results(&out);
    assert_eq!(ran.len(), 1, "{ran:?}");
    assert_eq!(ran[0].0, "workflow/clerk");
    assert_eq!(ran[0].1["name"], "calculator");
    assert_eq!(ran[0].1["content"], "42");
    assert_eq!(ran[0].1["is_error"], false);
    assert_eq!(result_line(&out)["final_response"], "Refund worked out.");

    // Denied: it does not run; the model's next request carries the
    // denial, with the user's words, as the call's result.
    let request = asks_for_approval(dir.path(), cfg, "no");
    let out = answer("no", &request, "no, too much");
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let denied = tool_results(&out);
    assert_eq!(denied.len(), 1, "{denied:?}");
    assert_eq!(denied[0].1["is_error"], true);
    assert_eq!(
        denied[0].1["content"],
        "The user denied this call of calculator; it did not run. The user said: no, too much"
    );
    assert_eq!(result_line(&out)["final_response"], "Refund worked out.");
    let thread = final_thread(&path, "no");
    let clerk: Vec<&Content> = thread
        .child("clerk")
        .expect("the clerk's thread")
        .messages()
        .iter()
        .filter(|m| &*m.source == "clerk")
        .map(|m| &m.content)
        .collect();
    // Its call, the denial as the call's result, then the model's answer
    // to a request that held it.
    assert!(matches!(clerk[0], Content::ToolCalls(_)), "{clerk:?}");
    assert!(
        matches!(clerk[1], Content::ToolResults(r) if r[0].content.contains("no, too much")),
        "{clerk:?}"
    );
    assert!(
        matches!(clerk[2], Content::Text(t) if t == "Refund worked out."),
        "{clerk:?}"
    );
    assert_eq!(clerk.len(), 3, "{clerk:?}");
}

#[test]
fn a_user_agent_in_a_round_robin_with_a_store_is_answered_by_id() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = write(
        dir.path(),
        "team.yaml",
        "version: 1
models:
  m: {provider: scripted}
agents:
  writer: {model: m, script: [\"draft one\", \"draft two, shorter\"]}
  me:
    user: {prompt: \"Your note on the draft?\"}
workflow:
  round_robin: {participants: [writer, me]}
  max_turns: 3
checkpoint: {store: sqlite, path: state/team.db}
",
    );
    let cfg = path.to_str().expect("utf-8");
    let out = run(
        dir.path(),
        &[
            "run",
            "--no-input",
            "--events",
            "jsonl",
            "--run-id",
            "t",
            cfg,
            "a post",
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    let result = result_line(&out);
    assert_eq!(result["final_response"], "draft one");
    let request = &result["requests"][0];
    assert_eq!(request["agent"], "me");
    let id = request_id(&result["requests"], "Your note on the draft?");
    assert_eq!(
        run_listed(dir.path(), cfg, "t")["requests"],
        result["requests"]
    );

    let out = run(
        dir.path(),
        &[
            "run",
            "--no-input",
            "--events",
            "jsonl",
            "--resume",
            "t",
            "--answer",
            &format!("{id}=make it shorter"),
            cfg,
        ],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    // The answer is the user agent's message, and the team goes on.
    assert_eq!(
        produced(&out),
        [
            ("workflow/me".to_string(), "make it shorter".to_string()),
            (
                "workflow/writer".to_string(),
                "draft two, shorter".to_string()
            ),
        ]
    );
    let result = result_line(&out);
    assert_eq!(result["final_response"], "draft two, shorter");
    assert_eq!(result["requests"], serde_json::json!([]));
    // The writer's model is shown the answer once, as the user agent's.
    let thread = final_thread(&path, "t");
    let seen: Vec<(String, String)> = thread
        .child("writer")
        .expect("the writer's thread")
        .messages()
        .iter()
        .map(|m| (m.source.to_string(), m.text_content().into_owned()))
        .collect();
    let said = |who: &str, what: &str| (who.to_string(), what.to_string());
    assert_eq!(
        seen,
        [
            said("user", "a post"),
            said("writer", "draft one"),
            said("me", "make it shorter"),
            said("writer", "draft two, shorter"),
        ]
    );
}

#[test]
fn a_waiting_run_without_a_durable_store_does_not_offer_a_resume() {
    let dir = tempfile::tempdir().expect("tempdir");
    let asks = "version: 1
models:
  m: {provider: scripted}
agents:
  clerk:
    model: m
    tools: [ask_user]
    script: [{tool_call: {name: ask_user, arguments: {question: \"Which order?\"}}}, Noted.]
";
    for (name, store) in [
        ("none.yaml", ""),
        ("memory.yaml", "checkpoint: {store: memory}\n"),
    ] {
        let cfg = write(dir.path(), name, &format!("{asks}{store}"));
        let cfg = cfg.to_str().expect("utf-8");
        let out = run(dir.path(), &["run", "--no-input", cfg, "refund"]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(3), "{name}: {err}");
        assert!(err.contains("? clerk asks (clerk-"), "{name}: {err}");
        assert!(
            err.contains(&format!(
                "waiting for input, but {cfg} keeps no checkpoint that outlives this process, so the run cannot be answered later: add `checkpoint: {{store: sqlite, path: runs.db}}`"
            )),
            "{name}: {err}"
        );
        assert!(!err.contains("--resume RUN"), "{name}: {err}");
        assert!(!err.contains("answer with `troupe run"), "{name}: {err}");
    }
}
