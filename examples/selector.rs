//! A [`SelectorGroupChat`]: a model picks who speaks next.
//!
//! An incident-response team — a triager, a database expert and a
//! communicator — handles a slow checkout page. Before each turn a
//! selector model reads the conversation and the participants'
//! descriptions and names the next speaker. One of its answers is a whole
//! sentence rather than a bare name: the team reads the one participant it
//! mentions, so a chatty model still works. Each choice is a `Selected`
//! event on the console.
//!
//! The run stops when the communicator posts the status update
//! ([`StopCondition::source_match`]).
//!
//! Offline: the selector and every participant are scripted.
//!
//! ```text
//! cargo run --example selector
//! ```

use std::error::Error;
use std::sync::Arc;

use troupe_agents::{ChatAgent, ScriptedModel, ScriptedReply};
use troupe_presets::SelectorGroupChat;
use troupe_runtime::{RunContext, StopCondition};

fn agent(
    name: &str,
    description: &str,
    replies: impl IntoIterator<Item = &'static str>,
) -> Result<ChatAgent, Box<dyn Error>> {
    let model = ScriptedModel::new(replies.into_iter().map(ScriptedReply::text))
        .named(format!("scripted-{name}"));
    Ok(ChatAgent::builder(name)
        .description(description)
        .instructions(format!("You are the team's {description} Be brief."))
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
    let triager = agent(
        "triager",
        "on-call engineer who reads dashboards and decides what to investigate.",
        [
            "p95 checkout latency went from 300 ms to 4.1 s at 14:02, right after deploy 8812. \
             CPU is normal; the orders DB shows long query times. DB expert, please look.",
        ],
    )?;
    let db_expert = agent(
        "db_expert",
        "database specialist who diagnoses slow queries.",
        [
            "Found it: deploy 8812 added a filter on orders.customer_email, which has no index, \
             so every checkout does a full scan of 9M rows. Created the index concurrently at \
             14:19; p95 is back to 310 ms.",
        ],
    )?;
    let communicator = agent(
        "communicator",
        "person who writes the status-page update for customers.",
        [
            "Status update — Resolved: Between 14:02 and 14:19 UTC checkout was slow for some \
             customers. The cause was a missing database index after a release; it has been \
             fixed and checkout is back to normal. No orders were lost.",
        ],
    )?;

    // What the selector model answers, turn by turn. The second answer is
    // verbose on purpose: it names exactly one candidate, which is enough.
    let selector_model = Arc::new(
        ScriptedModel::new([
            ScriptedReply::text("triager"),
            ScriptedReply::text(
                "Given the slow queries on the orders database, I think the db_expert should \
                 speak next to find the cause.",
            ),
            ScriptedReply::text("communicator"),
        ])
        .named("scripted-selector"),
    );

    let team = SelectorGroupChat::builder()
        .name("incident")
        .participant(triager)
        .participant(db_expert)
        .participant(communicator)
        .model(selector_model.clone())
        .stop_condition(StopCondition::source_match(["communicator"]))
        // Should the selector misbehave, the run still ends.
        .max_turns(10)
        .build()?;

    let console = RunContext::console();
    let result = team
        .run_task(
            "Alert: checkout page p95 latency above 4 s for 10 minutes.",
            &console,
        )
        .await?;
    console.sink().flush().await; // its events are all printed first
    println!(
        "\nselector model calls: {} (no retries needed)",
        selector_model.requests().len()
    );
    println!("final response: {}", result.final_text());
    println!("status: {}", result.status);
    Ok(())
}
