//! A [`Sequential`] pipeline: research → write → edit.
//!
//! Three chat agents take turns in a fixed order on a product-announcement
//! task. The researcher looks facts up with a tool, the writer drafts from
//! the research, and the editor tightens the draft. Each step sees the task
//! and every earlier step's output (the default [`StepFlow::AllPrior`]), so
//! the editor can check the draft against the research. Events print on the
//! console as they happen; the editor's text is the pipeline's answer.
//!
//! Offline: every model is scripted, so the story is always the same.
//!
//! ```text
//! cargo run --example sequential
//! ```

use std::error::Error;

use serde::Deserialize;
use serde_json::json;
use troupe_agents::schemars::JsonSchema;
use troupe_agents::{ChatAgent, FunctionTool, ScriptedModel, ScriptedReply};
use troupe_presets::{Sequential, StepFlow};
use troupe_runtime::RunContext;

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "troupe_agents::schemars")]
struct Query {
    /// What to look up in the release notes, e.g. "battery".
    topic: String,
}

/// A stand-in for a release-notes search: the facts the writer may use.
fn release_notes() -> FunctionTool {
    FunctionTool::new(
        "search_release_notes",
        "Searches the internal release notes of the Aria 2 headphones.",
        |q: Query| async move {
            let hit = match q.topic.to_lowercase().as_str() {
                t if t.contains("battery") => "Battery: 40 h with ANC on (Aria 1: 22 h).",
                t if t.contains("price") => "Price: 249 EUR, shipping 3 March.",
                t if t.contains("anc") || t.contains("noise") => {
                    "ANC: new 6-microphone array, wind noise reduced by half."
                }
                _ => "No matching note.",
            };
            Ok::<_, String>(hit.to_string())
        },
    )
}

fn researcher() -> Result<ChatAgent, Box<dyn Error>> {
    let model = ScriptedModel::new([
        // Both look-ups in one answer: the agent runs them concurrently.
        ScriptedReply::tool_calls([
            ("search_release_notes", json!({"topic": "battery"})),
            ("search_release_notes", json!({"topic": "price"})),
        ]),
        ScriptedReply::tool_call("search_release_notes", json!({"topic": "noise cancelling"})),
        ScriptedReply::text(
            "Key facts for Aria 2:\n\
             - 40 h battery with ANC on (Aria 1 had 22 h)\n\
             - new 6-microphone ANC, wind noise halved\n\
             - 249 EUR, ships 3 March",
        ),
    ])
    .named("scripted-researcher");
    Ok(ChatAgent::builder("researcher")
        .description("Finds the facts in the release notes.")
        .instructions("Collect the facts a launch post needs. Use the search tool; never guess.")
        .model(model)
        .tool(release_notes())
        .build()?)
}

fn writer() -> Result<ChatAgent, Box<dyn Error>> {
    let model = ScriptedModel::new([ScriptedReply::text(
        "Meet Aria 2: the headphones that just keep going. With a full 40 hours of \
         battery even with noise cancelling switched on — almost twice what Aria 1 managed — \
         and a brand new six-microphone array that cuts wind noise in half, your commute \
         has never been quieter. Aria 2 costs 249 EUR and ships on 3 March.",
    )])
    .named("scripted-writer");
    Ok(ChatAgent::builder("writer")
        .description("Drafts the launch post from the research.")
        .instructions("Write a short, upbeat launch post using only the researcher's facts.")
        .model(model)
        .build()?)
}

fn editor() -> Result<ChatAgent, Box<dyn Error>> {
    let model = ScriptedModel::new([ScriptedReply::text(
        "Aria 2 is here. 40 hours of battery with noise cancelling on — nearly double \
         Aria 1 — and a new six-microphone array that halves wind noise. \
         249 EUR, shipping 3 March.",
    )])
    .named("scripted-editor");
    Ok(ChatAgent::builder("editor")
        .description("Tightens the draft and checks it against the research.")
        .instructions(
            "Cut the draft to three sentences. Every figure must match the research; \
             remove anything the research does not support.",
        )
        .model(model)
        .build()?)
}

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn Error>> {
    let pipeline = Sequential::builder()
        .name("launch-post")
        .participant(researcher()?)
        .participant(writer()?)
        .participant(editor()?)
        // The editor needs the research as well as the draft to check
        // figures, so every step sees everything before it.
        .flow(StepFlow::AllPrior)
        .build()?;

    let console = RunContext::console();
    let result = pipeline
        .run_task(
            "Write a three-sentence launch post for the Aria 2 headphones.",
            &console,
        )
        .await?;
    console.sink().flush().await; // its events are all printed first
    println!("\nfinal response: {}", result.final_text());
    println!("status: {}", result.status);
    Ok(())
}
