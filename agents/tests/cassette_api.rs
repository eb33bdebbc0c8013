//! The cassette's Rust API for tests: a team whose agent calls a helper
//! agent twice in parallel (as a tool) and a function tool is recorded,
//! loaded, run again against the recording with no model behind any agent
//! and a tool that fails if it runs, and asserted on (its tool calls,
//! nothing left unused). The helper's two parallel calls replay the same
//! whichever order they started in when recorded.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::{Value, json};
use troupe_agents::model::Cassette;
use troupe_agents::schemars::JsonSchema;
use troupe_agents::{
    AgentTool, ChatAgent, ChatMessage, ChatModel, FunctionTool, ScriptedModel, ScriptedReply, Tool,
};
use troupe_runtime::{RunContext, Workflow};

/// A fresh directory for one test's cassette.
fn fresh_dir(name: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("troupe-cassette-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

#[derive(Deserialize, JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

/// The team: `asker` asks `helper` two things at once and adds, then
/// answers with what it heard; `add` runs `adds` (or fails, replaying).
fn team(
    asker: Arc<dyn ChatModel>,
    helper: Arc<dyn ChatModel>,
    tape: &Arc<Cassette>,
    adds: bool,
) -> Workflow {
    let helper = ChatAgent::builder("helper")
        .model_arc(helper)
        .build()
        .unwrap();
    let add = FunctionTool::new("add", "Adds.", move |p: Pair| async move {
        if adds {
            Ok((p.a + p.b).to_string())
        } else {
            Err("the tool ran on replay")
        }
    });
    let asker = ChatAgent::builder("asker")
        .model_arc(asker)
        .tool(AgentTool::new(helper))
        .tool_arc(tape.wrap_tool("asker", Arc::new(add) as Arc<dyn Tool>, None))
        .build()
        .unwrap();
    Workflow::builder()
        .name("team")
        .participant(asker)
        .build()
        .unwrap()
}

async fn record(dir: &Path) -> String {
    let tape = Cassette::record(dir).unwrap();
    // The asker asks, then answers with the results it was given.
    let asker = ScriptedModel::from_fn(|request| {
        let results: Vec<String> = request
            .messages
            .iter()
            .filter_map(|m| match m {
                ChatMessage::Tool { content, .. } => Some(content.clone()),
                _ => None,
            })
            .collect();
        Ok(if results.is_empty() {
            ScriptedReply::tool_calls([
                ("helper", json!({"request": "alpha"})),
                ("helper", json!({"request": "beta"})),
                ("add", json!({"a": 2, "b": 3})),
            ])
        } else {
            ScriptedReply::text(format!("done: {}", results.join(" | ")))
        })
    });
    // The helper says which question it was asked.
    let helper = ScriptedModel::from_fn(|request| {
        let asked = serde_json::to_string(&request.messages).unwrap_or_default();
        let which = if asked.contains("alpha") { "A" } else { "B" };
        Ok(ScriptedReply::text(format!("helper answers {which}")))
    });
    let team = team(
        tape.wrap("asker", Arc::new(asker)),
        tape.wrap("helper", Arc::new(helper)),
        &tape,
        true,
    );
    let result = team.run_task("go", &RunContext::new()).await.unwrap();
    result.final_text()
}

async fn replay(dir: &Path) -> (String, Arc<Cassette>) {
    let tape = Cassette::load(dir).unwrap();
    let team = team(
        tape.replay_model("asker"),
        tape.replay_model("helper"),
        &tape,
        false,
    );
    let result = team.run_task("go", &RunContext::new()).await.unwrap();
    (result.final_text(), tape)
}

#[tokio::test]
async fn a_recorded_team_replays_through_the_test_api_and_is_asserted_on() {
    let dir = fresh_dir("api");
    let recorded = record(&dir).await;
    assert_eq!(recorded, "done: helper answers A | helper answers B | 5");
    let (answer, tape) = replay(&dir).await;
    assert_eq!(answer, recorded);
    assert!(tape.unused().is_empty(), "{:?}", tape.unused());
    let add = tape
        .tool_call("team/asker", "add", &json!({"a": 2}))
        .unwrap();
    assert_eq!(add.output.as_deref(), Some("5"));
    let err = tape
        .tool_call("team/asker", "add", &json!({"a": 7}))
        .unwrap_err();
    assert!(err.contains("team/asker#0 add"), "{err}");
    let paths: Vec<&str> = tape
        .model_calls()
        .iter()
        .map(|e| e.agent.as_str())
        .collect();
    assert!(paths.contains(&"team/asker/helper"), "{paths:?}");
    assert_eq!(
        paths.iter().filter(|p| **p == "team/asker/helper").count(),
        2
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn parallel_calls_of_one_path_replay_the_same_whatever_order_they_were_recorded_in() {
    let dir = fresh_dir("parallel");
    let recorded = record(&dir).await;

    // As if the other call had started first when recording: the two
    // helper calls' indexes swapped.
    let file = dir.join("model_calls.jsonl");
    let lines: Vec<Value> = std::fs::read_to_string(&file)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let swapped: Vec<String> = lines
        .into_iter()
        .map(|mut e| {
            if e["agent"] == "team/asker/helper" {
                e["call"] = json!(1 - e["call"].as_u64().unwrap());
            }
            e.to_string()
        })
        .collect();
    std::fs::write(&file, swapped.join("\n") + "\n").unwrap();
    let (answer, tape) = replay(&dir).await;
    assert_eq!(answer, recorded);
    assert!(tape.unused().is_empty(), "{:?}", tape.unused());
    let _ = std::fs::remove_dir_all(&dir);
}
