//! A [`Magentic`] team: a manager plans, checks progress after every turn,
//! replans when the team stalls, and writes the final answer itself.
//!
//! A researcher and a writer answer "When did Rust 1.0 ship?". The manager
//! writes a task ledger (facts and a plan) and, after every turn, a
//! progress ledger (satisfied? in a loop? progress? who next, with what
//! instruction?). The researcher's search times out twice in a row: two
//! stalls (`max_stalls(2)`), so the manager rewrites its ledger — the
//! search site is down, read the release notes instead — and the team goes
//! on to the answer. Every ledger is an `Event::Ledger` (📋 on the
//! console) and a private message of the manager's thread.
//!
//! Offline: the manager and both specialists are scripted.
//!
//! ```text
//! cargo run --example magentic
//! ```

use std::error::Error;
use std::sync::Arc;

use serde_json::json;
use troupe_agents::{ChatAgent, ScriptedModel, ScriptedReply};
use troupe_presets::Magentic;
use troupe_runtime::RunContext;

fn agent(
    name: &str,
    description: &str,
    replies: impl IntoIterator<Item = &'static str>,
) -> Result<ChatAgent, Box<dyn Error>> {
    let model = ScriptedModel::new(replies.into_iter().map(ScriptedReply::text))
        .named(format!("scripted-{name}"));
    Ok(ChatAgent::builder(name)
        .description(description)
        .model(model)
        .build()?)
}

fn task_ledger(facts: &[&str], guesses: &[&str], plan: &[&str]) -> ScriptedReply {
    ScriptedReply::text(
        json!({
            "facts_given": ["the request asks when Rust 1.0 shipped"],
            "facts_to_look_up": facts,
            "facts_to_derive": [],
            "educated_guesses": guesses,
            "plan": plan,
        })
        .to_string(),
    )
}

fn progress(done: bool, stuck: bool, next: &str, say: &str) -> ScriptedReply {
    ScriptedReply::text(
        json!({
            "is_request_satisfied": {"reason": if done { "the answer is written" } else { "no answer yet" }, "answer": done},
            "is_in_loop": {"reason": if stuck { "the same timeout again" } else { "each turn added something" }, "answer": stuck},
            "is_progress_being_made": {"reason": if stuck { "nothing new" } else { "on track" }, "answer": !stuck},
            "next_speaker": {"reason": "the plan", "answer": next},
            "instruction_or_question": {"reason": "the plan", "answer": say},
        })
        .to_string(),
    )
}

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn Error>> {
    let researcher = agent(
        "researcher",
        "Looks facts up.",
        [
            "The search site timed out.",
            "The search site timed out.",
            "The Rust 1.0 release notes are dated 2015-05-15.",
        ],
    )?;
    let writer = agent(
        "writer",
        "Writes the answer.",
        ["Rust 1.0 shipped on 15 May 2015."],
    )?;
    let manager = ScriptedModel::new([
        task_ledger(
            &["the release date, with a web search"],
            &["it was in 2015"],
            &["researcher searches the web", "writer writes one sentence"],
        ),
        progress(
            false,
            false,
            "researcher",
            "Search the web for the Rust 1.0 release date.",
        ),
        progress(false, true, "researcher", "Search again."),
        // A second stall: the manager replans with what it learned.
        progress(false, true, "researcher", "Search again."),
        task_ledger(
            &["the release date, in the Rust release notes"],
            &["the search site is down"],
            &[
                "researcher reads the release notes",
                "writer writes one sentence",
            ],
        ),
        progress(
            false,
            false,
            "Researcher",
            "Read the Rust 1.0 release notes.",
        ),
        progress(
            false,
            false,
            "**writer**",
            "Write one sentence with the date.",
        ),
        progress(true, false, "", ""),
        ScriptedReply::text("Rust 1.0 shipped on 15 May 2015."),
    ])
    .named("scripted-manager");

    let team = Magentic::builder()
        .name("magentic")
        .participant(researcher)
        .participant(writer)
        .model(Arc::new(manager))
        .max_stalls(2)
        .max_resets(2)
        .build()?;

    let console = RunContext::console();
    let result = team.run_task("When did Rust 1.0 ship?", &console).await;
    console.sink().flush().await; // its events are all printed first
    let result = result?;
    // The ledgers live in the manager's thread, so a run resumes with them.
    let kept = |kind: &str| {
        result.thread.child(Magentic::MANAGER).map_or(0, |t| {
            t.messages()
                .iter()
                .filter(|m| m.metadata.get("troupe.magentic").is_some_and(|k| k == kind))
                .count()
        })
    };
    let (tasks, checks) = (kept("task_ledger"), kept("progress_ledger"));
    println!("\ntask ledgers: {tasks} (a plan and a replan), progress ledgers: {checks}");
    println!("final response: {}", result.final_text());
    println!("status: {}", result.status);
    Ok(())
}
