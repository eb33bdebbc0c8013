//! Nested teams: a [`MapReduce`] research team as one participant of a
//! [`RoundRobinGroupChat`].
//!
//! A council briefing is written by two participants taking turns: a
//! research team and an editor. The research team is itself a workflow —
//! a lead splits the question into topics (a JSON list), analysts research
//! the topics in parallel, and the lead's summary is the team's answer.
//! The editor reads the briefing and either asks for more or approves. On
//! the second round the research team runs again on the conversation so
//! far, researching only what the editor asked for.
//!
//! Nesting works because a workflow is an agent: the inner team's events
//! carry paths like `briefing/research/map/analyst#2`, its final response
//! is its message in the outer chat, and its state rides in the outer
//! thread.
//!
//! Offline: every model is scripted.
//!
//! ```text
//! cargo run --example nested_teams
//! ```

use std::error::Error;

use troupe_agents::{ChatAgent, ChatMessage, ChatRequest, ScriptedModel, ScriptedReply};
use troupe_presets::{MapReduce, RoundRobinGroupChat};
use troupe_runtime::{RunContext, StopCondition, Workflow};

fn lead_splitter() -> Result<ChatAgent, Box<dyn Error>> {
    let model = ScriptedModel::new([
        // Round 1: the whole question.
        ScriptedReply::text(
            r#"["upfront and running costs of air-source heat pumps vs gas boilers",
                "impact of 5,000 heat pumps on the local electricity grid",
                "national and regional subsidies available in 2025"]"#,
        ),
        // Round 2: only what the editor asked for.
        ScriptedReply::text(r#"["noise of air-source heat pumps in dense terraced housing"]"#),
    ])
    .named("scripted-lead");
    Ok(ChatAgent::builder("lead")
        .description("Splits a research question into topics.")
        .instructions(
            "Split what still needs researching into independent topics. \
             Answer with a JSON array of strings only.",
        )
        .model(model)
        .build()?)
}

/// An analyst's findings, by the topic it was given.
fn findings(request: &ChatRequest) -> ScriptedReply {
    let topic = request
        .messages
        .iter()
        .rev()
        .find(|m| matches!(m, ChatMessage::User { .. }))
        .map(ChatMessage::text)
        .unwrap_or_default();
    let text = if topic.contains("costs") {
        "Costs: installed price 11–14k EUR vs 4k for a boiler; running costs 20–30% lower \
         at current tariffs; payback 8–12 years."
    } else if topic.contains("grid") {
        "Grid: 5,000 units add ~9 MW at winter peak; two of the 14 substations would need \
         upgrades (est. 3.2M EUR, 18 months)."
    } else if topic.contains("subsidies") {
        "Subsidies: national grant covers 30% (cap 4.5k EUR); the regional top-up adds 1.5k \
         for low-income households."
    } else if topic.contains("noise") {
        "Noise: modern units emit 45–55 dB(A) at 1 m, below the 40 dB(A) night limit at the \
         neighbour's window if placed 3 m away; complaints cluster where units sit in \
         narrow shared passages."
    } else {
        "No findings for this topic."
    };
    ScriptedReply::text(text)
}

fn research_team() -> Result<Workflow, Box<dyn Error>> {
    let analyst = ChatAgent::builder("analyst")
        .description("Researches one topic.")
        .instructions("Research the topic you are given; give figures. Be brief.")
        .model(ScriptedModel::from_fn(|r| Ok(findings(r))).named("scripted-analyst"))
        .build()?;
    let summarizer = ChatAgent::builder("summary")
        .description("Turns the analysts' findings into a briefing.")
        .instructions("Combine the findings into a short briefing for the council.")
        .model(
            ScriptedModel::new([
                ScriptedReply::text(
                    "Briefing: heat pumps cost 11–14k EUR installed, with grants covering up to \
                     6k for low-income homes, and pay back in 8–12 years. Rolling out 5,000 \
                     needs two substation upgrades (3.2M EUR, 18 months).",
                ),
                ScriptedReply::text(
                    "Addendum on noise: units meet the night limit when placed 3 m from a \
                     neighbour's window; planning guidance should bar installs in narrow \
                     shared passages, where complaints cluster.",
                ),
            ])
            .named("scripted-summary"),
        )
        .build()?;
    Ok(MapReduce::builder()
        .name("research")
        .description("Researches a question in parallel and summarizes the findings.")
        .mapper(lead_splitter()?)
        .worker(analyst)
        .reducer(summarizer)
        .build()?)
}

fn editor() -> Result<ChatAgent, Box<dyn Error>> {
    let model = ScriptedModel::new([
        ScriptedReply::text(
            "Solid on costs and the grid. The council will certainly ask about noise \
             complaints in terraced streets — research that before we send it.",
        ),
        ScriptedReply::text("Noise covered, with a concrete planning rule. APPROVE"),
    ])
    .named("scripted-editor");
    Ok(ChatAgent::builder("editor")
        .description("Checks the briefing answers what the council will ask.")
        .instructions("Ask for missing research, or reply APPROVE when the briefing is complete.")
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
        .name("briefing")
        // A whole MapReduce workflow takes its turn like any agent.
        .participant(research_team()?)
        .participant(editor()?)
        .stop_condition(StopCondition::text_mention("APPROVE"))
        .max_turns(8)
        .build()?;

    let console = RunContext::console();
    let result = team
        .run_task(
            "Brief the city council on subsidising 5,000 residential heat pumps.",
            &console,
        )
        .await?;
    console.sink().flush().await; // its events are all printed first
    // The briefing is what the research team said, round after round.
    let briefing: Vec<String> = result
        .messages
        .iter()
        .filter(|m| &*m.source == "research")
        .map(|m| m.text_content().into_owned())
        .collect();
    println!("\nresearch rounds: {}", briefing.len());
    println!("briefing sent: {}", briefing.join(" "));
    println!("final response: {}", result.final_text());
    println!("status: {}", result.status);
    Ok(())
}
