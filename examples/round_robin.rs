//! A [`RoundRobinGroupChat`]: a writer and a critic take turns until the
//! critic approves.
//!
//! The writer drafts an error message for a failed payment, the critic
//! reviews it, the writer revises, and so on. Both see every message (a
//! broadcast). The run stops as soon as a message mentions `APPROVE`
//! ([`StopCondition::text_mention`]); a turn limit guards against a critic
//! that never approves. Events print on the console as they happen.
//!
//! Offline: both models are scripted (two rounds of review).
//!
//! ```text
//! cargo run --example round_robin
//! ```

use std::error::Error;

use troupe_agents::{ChatAgent, ScriptedModel, ScriptedReply};
use troupe_presets::RoundRobinGroupChat;
use troupe_runtime::{RunContext, StopCondition};

fn writer() -> Result<ChatAgent, Box<dyn Error>> {
    let model = ScriptedModel::new([
        ScriptedReply::text("Error 402: Payment declined by issuer. Transaction aborted."),
        ScriptedReply::text(
            "Your payment didn't go through. Your bank declined the card — \
             please try another card or contact your bank.",
        ),
        ScriptedReply::text(
            "Your payment didn't go through: your bank declined the card ending in 4242. \
             Nothing was charged. Try another card, or ask your bank why it was declined.",
        ),
    ])
    .named("scripted-writer");
    Ok(ChatAgent::builder("writer")
        .description("Writes user-facing copy.")
        .instructions("Write the message the user sees. Revise it with the critic's feedback.")
        .model(model)
        .build()?)
}

fn critic() -> Result<ChatAgent, Box<dyn Error>> {
    let model = ScriptedModel::new([
        ScriptedReply::text(
            "Too technical: users do not know what 402 or 'issuer' means, and 'aborted' \
             sounds alarming. Say what happened in plain words and what to do next.",
        ),
        ScriptedReply::text(
            "Much better. Two things: say which card (last four digits), and reassure \
             them that nothing was charged — that is their first worry.",
        ),
        ScriptedReply::text("Clear, calm and actionable. APPROVE"),
    ])
    .named("scripted-critic");
    Ok(ChatAgent::builder("critic")
        .description("Reviews copy for clarity and tone.")
        .instructions(
            "Review the writer's latest draft. Give concrete feedback, or reply APPROVE \
             when it is ready to ship.",
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
    let team = RoundRobinGroupChat::builder()
        .name("copy-review")
        .participant(writer()?)
        .participant(critic()?)
        .stop_condition(StopCondition::text_mention("APPROVE"))
        // A critic that never approves would loop forever; cap the turns.
        .max_turns(10)
        .build()?;

    let console = RunContext::console();
    let result = team
        .run_task(
            "Write the message shown when a card payment is declined.",
            &console,
        )
        .await?;
    console.sink().flush().await; // its events are all printed first
    // The approval ends the run, so the approved draft is the writer's
    // last message, just before it.
    let approved = result
        .messages
        .iter()
        .rev()
        .find(|m| &*m.source == "writer")
        .map(|m| m.text_content().into_owned())
        .unwrap_or_default();
    println!("\nfinal response: {}", result.final_text());
    println!("approved draft: {approved}");
    println!("status: {}", result.status);
    Ok(())
}
