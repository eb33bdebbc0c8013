//! A [`MapReduce`] team: split a task, work the parts in parallel, combine.
//!
//! A planner (the mapper) splits "where should the team offsite be?" into
//! one sub-task per candidate city, answering with a JSON list. One scout
//! per sub-task (workers) runs in parallel, each on a fresh thread that
//! holds only its own sub-task, so scouts cannot copy each other. A
//! decision-maker (the reducer) receives every scout's report, in sub-task
//! order, and picks a city. Events print on the console; worker events
//! carry paths such as `offsite/map/scout#2`.
//!
//! Offline: every model is scripted. The scouts share one model whose
//! answer depends on the sub-task it is shown, so the parallel workers give
//! the same reports whatever order they run in.
//!
//! ```text
//! cargo run --example map_reduce
//! ```

use std::error::Error;

use troupe_agents::{ChatAgent, ChatMessage, ChatRequest, ScriptedModel, ScriptedReply};
use troupe_presets::MapReduce;
use troupe_runtime::RunContext;

fn planner() -> Result<ChatAgent, Box<dyn Error>> {
    let model = ScriptedModel::new([ScriptedReply::text(
        r#"[
  "Assess Lisbon for a 3-day offsite of 14 people in May: flights from Berlin, venue cost, weather",
  "Assess Kraków for a 3-day offsite of 14 people in May: flights from Berlin, venue cost, weather",
  "Assess Valencia for a 3-day offsite of 14 people in May: flights from Berlin, venue cost, weather"
]"#,
    )])
    .named("scripted-planner");
    Ok(ChatAgent::builder("planner")
        .description("Splits a decision into independent research sub-tasks.")
        .instructions(
            "Split the request into one sub-task per option. \
             Answer with a JSON array of strings and nothing else.",
        )
        .model(model)
        .build()?)
}

/// What a scout reports, by the city its sub-task names.
fn scout_report(request: &ChatRequest) -> ScriptedReply {
    // The sub-task is the last user message the scout is shown.
    let task = request
        .messages
        .iter()
        .rev()
        .find(|m| matches!(m, ChatMessage::User { .. }))
        .map(ChatMessage::text)
        .unwrap_or_default();
    let report = if task.contains("Lisbon") {
        "Lisbon: 3 h 40 direct flights, several daily. Venue with rooms ~310 EUR/person/night. \
         May: 22 °C, dry. Strong option, priciest of the three."
    } else if task.contains("Kraków") {
        "Kraków: 1 h 30 direct flights, 4 daily. Venue with rooms ~140 EUR/person/night. \
         May: 18 °C, some rain. Cheapest and closest."
    } else if task.contains("Valencia") {
        "Valencia: 3 h direct flights, 2 daily (one only on weekdays). Venue with rooms \
         ~230 EUR/person/night. May: 24 °C, sunny. Good balance of cost and weather."
    } else {
        "I could not tell which city this sub-task is about."
    };
    ScriptedReply::text(report)
}

fn scout() -> Result<ChatAgent, Box<dyn Error>> {
    let model = ScriptedModel::from_fn(|request| Ok(scout_report(request))).named("scripted-scout");
    Ok(ChatAgent::builder("scout")
        .description("Researches one candidate city.")
        .instructions("Report flights, venue cost per person and night, and May weather. Be brief.")
        .model(model)
        .build()?)
}

fn decider() -> Result<ChatAgent, Box<dyn Error>> {
    let model = ScriptedModel::new([ScriptedReply::text(
        "Recommendation: Valencia. It is 80 EUR/night cheaper than Lisbon with better \
         weather; Kraków is cheapest but the rain risk matters for the outdoor day. \
         Book the Thursday flight, since the second daily flight does not run at weekends.",
    )])
    .named("scripted-decider");
    Ok(ChatAgent::builder("decider")
        .description("Weighs the scouts' reports and recommends one option.")
        .instructions("Compare the reports and recommend exactly one city, with the reason.")
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
    let team = MapReduce::builder()
        .name("offsite")
        .mapper(planner()?)
        .worker(scout()?)
        .reducer(decider()?)
        .build()?;

    let console = RunContext::console();
    let result = team
        .run_task(
            "Where should our 14-person team hold its May offsite: Lisbon, Kraków or Valencia?",
            &console,
        )
        .await?;
    console.sink().flush().await; // its events are all printed first
    println!("\nfinal response: {}", result.final_text());
    println!("status: {}", result.status);
    Ok(())
}
