//! A support desk as a router-only workflow, offline (no model): closures
//! stand in for what would be model-backed agents.
//!
//! ```text
//! user ──▶ intake ──▶ classifier ──┬──▶ billing ───┐
//!   (ttl 1h)                       └──▶ technical ─┴──▶ summarizer (batch 3) ──▶ output
//! ```
//!
//! - `intake` normalises each ticket. Its inbox has a one-hour TTL: a ticket
//!   that waited longer belongs to the next shift, so it is dropped (and the
//!   drop is reported as an event) instead of being answered late.
//! - `classifier` labels each ticket `billing` or `technical`.
//! - `billing` and `technical` both hear the classifier; each answers the
//!   tickets of its own label and stays silent on the others (routes are by
//!   sender, so choosing by content is the agents' job).
//! - `summarizer` accepts only the two specialists (a sender filter on its
//!   inbox) and takes their answers three at a time, writing one hand-over
//!   note per batch.
//!
//! Run it with `cargo run --example router_pipeline`.

use std::error::Error;
use std::time::Duration;

use troupe::{FnAgent, InboxConfig, Message, Router, RunContext, StopCondition, Thread, Workflow};

/// The text of the newest message of a thread.
fn newest(thread: &Thread) -> String {
    thread
        .last()
        .map(|m| m.text_content().into_owned())
        .unwrap_or_default()
}

/// `intake`: one raw ticket in, one normalised ticket out.
fn intake() -> FnAgent {
    FnAgent::sync("intake", |thread: &Thread| {
        let raw = newest(thread);
        // Raw tickets arrive as "#<id> <free text>"; keep the id, tidy the text.
        let (id, body) = raw.split_once(' ').unwrap_or(("#?", raw.as_str()));
        Ok(format!("ticket {id}: {}", body.trim().to_lowercase()))
    })
    .with_description("Normalises incoming support tickets.")
}

/// `classifier`: prefixes each ticket with its queue.
fn classifier() -> FnAgent {
    FnAgent::sync("classifier", |thread: &Thread| {
        let ticket = newest(thread);
        let billing_words = ["charge", "invoice", "refund", "card"];
        let queue = if billing_words.iter().any(|w| ticket.contains(w)) {
            "billing"
        } else {
            "technical"
        };
        Ok(format!("[{queue}] {ticket}"))
    })
    .with_description("Sends each ticket to the billing or the technical queue.")
}

/// A specialist answering the tickets labelled `queue` and ignoring the rest.
fn specialist(queue: &'static str, answer: &'static str) -> FnAgent {
    let label = format!("[{queue}] ");
    FnAgent::sync(queue, move |thread: &Thread| {
        let labelled = newest(thread);
        Ok(match labelled.strip_prefix(&label) {
            Some(ticket) => vec![Message::text("", format!("{ticket} → {answer}"))],
            // Not ours: an empty reply produces no message at all.
            None => Vec::new(),
        })
    })
    .with_description(format!("Answers {queue} tickets."))
}

/// `summarizer`: one hand-over note per batch of answers.
fn summarizer() -> FnAgent {
    FnAgent::sync("summarizer", |thread: &Thread| {
        // The batch is everything after this agent's previous note.
        let answers: Vec<String> = thread
            .messages()
            .iter()
            .rev()
            .take_while(|m| &*m.source != "summarizer")
            .map(|m| format!("  - {} ({})", m.text_content(), m.source))
            .collect();
        let mut note = format!("Hand-over: {} ticket(s) answered\n", answers.len());
        note.push_str(&answers.into_iter().rev().collect::<Vec<_>>().join("\n"));
        Ok(note)
    })
    .with_description("Writes the shift's hand-over note.")
}

fn support_desk() -> Result<Workflow, Box<dyn Error>> {
    let router = Router::builder()
        .add_route_with("user", "intake", InboxConfig::new().ttl_str("1h")?)
        .add_route("intake", "classifier")
        .add_route("classifier", "billing")
        .add_route("classifier", "technical")
        // No route: the sender filter alone says whom the summarizer hears.
        .inbox(
            "summarizer",
            InboxConfig::new()
                .senders(["billing", "technical"])
                .batch_size(3),
        )
        .output("summarizer");
    let desk = Workflow::builder()
        .name("support-desk")
        .participant(intake())
        .participant(classifier())
        .participant(specialist("billing", "account corrected, customer emailed"))
        .participant(specialist("technical", "workaround sent, bug filed"))
        .participant(summarizer())
        .router(router)
        // The note ends the shift; the timeout only guards against a bug.
        .stop_condition(
            StopCondition::source_match(["summarizer"]) | StopCondition::timeout_str("5s")?,
        )
        .build()?;
    Ok(desk)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let desk = support_desk()?;

    // Yesterday's ticket has outlived the intake's one-hour TTL.
    let mut stale = Message::user("#0977 Printer on floor 3 jams");
    stale.created_at -= Duration::from_secs(20 * 3600);
    let inbox = Thread::from_messages([
        stale,
        Message::user("#1041 I was CHARGED twice for March"),
        Message::user("#1042 App crashes when I open settings"),
        Message::user("#1043 Please send the invoice for order 88"),
    ]);

    let console = RunContext::console();
    let result = desk.run(inbox, &console).await?;
    console.sink().flush().await; // its events are all printed first

    println!();
    println!("final response:\n{}", result.final_text());
    println!("status: {}", result.status);
    println!("turns: {}", result.turns);
    Ok(())
}
