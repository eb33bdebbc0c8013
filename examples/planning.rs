//! A planning agent: a model breaks the task into sub-problems and their
//! dependency graph, and the plan runs as a workflow (seed 000's
//! Starbucks/McDonald's example).
//!
//! The model (scripted, so the example runs offline) answers with three
//! sub-problems:
//!
//! ```text
//! SUGGEST_RECIPE_STARBUCKS -> ORDER_STARBUCKS
//! ORDER_MCDONALDS
//! ```
//!
//! Its first answer forgets a step in the graph; the planner shows it the
//! error and it answers again. The plan then compiles into a workflow: the
//! recipe and the McDonald's order run in parallel (one superstep), the
//! Starbucks order after the recipe, and it receives the recipe as an
//! attachment. The planner runs inside a one-agent workflow so that its
//! reply — the plan first, then each step's result — streams as events on
//! the console like everything else.
//!
//! ```text
//! cargo run --example planning
//! ```

use std::error::Error;
use std::sync::Arc;

use troupe::{FnAgent, RunContext, Thread, Workflow};
use troupe_agents::{ScriptedModel, ScriptedReply};
use troupe_planning::{PLAN_KEY, PlanningAgent, STEP_KEY};

/// The model's first answer: ORDER_MCDONALDS is not in the graph.
const FORGETFUL: &str = "STEPS:
SUGGEST_RECIPE_STARBUCKS [barista]: Suggest a drink recipe from the Starbucks menu
ORDER_STARBUCKS [orderer]: Order the suggested drink at Starbucks
ORDER_MCDONALDS [orderer]: Order a Big Mac menu at McDonald's
GRAPH:
SUGGEST_RECIPE_STARBUCKS -> ORDER_STARBUCKS";

/// The corrected answer.
const PLAN: &str = "STEPS:
SUGGEST_RECIPE_STARBUCKS [barista]: Suggest a drink recipe from the Starbucks menu
ORDER_STARBUCKS [orderer]: Order the suggested drink at Starbucks
ORDER_MCDONALDS [orderer]: Order a Big Mac menu at McDonald's
GRAPH:
SUGGEST_RECIPE_STARBUCKS -> ORDER_STARBUCKS
ORDER_MCDONALDS";

fn last_text(t: &Thread) -> String {
    t.last()
        .map(|m| m.text_content().into_owned())
        .unwrap_or_default()
}

/// The body of the first attachment in the thread, if any: what an earlier
/// step handed on.
fn attached(t: &Thread) -> Option<String> {
    t.messages().iter().find_map(|m| {
        let text = m.text_content();
        let start = text.find("\">\n")? + 3;
        let end = text.find("\n</attachment>")?;
        (start <= end).then(|| text[start..end].to_string())
    })
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let model = Arc::new(ScriptedModel::new([
        ScriptedReply::text(FORGETFUL),
        ScriptedReply::text(PLAN),
    ]));

    // Stand-ins for real agents: a barista who knows recipes and an orderer
    // who places orders, using whatever an earlier step handed on.
    let barista = FnAgent::sync("barista", |_: &Thread| {
        Ok("Iced brown sugar oat shaken espresso: 3 shots blonde espresso, brown sugar syrup, oat milk, ice")
    })
    .with_description("knows the Starbucks menu and suggests drinks");
    let orderer = FnAgent::sync("orderer", |t: &Thread| {
        let request = last_text(t);
        Ok(match attached(t) {
            Some(recipe) => format!(
                "Ordered at Starbucks: {}",
                recipe.split(':').next().unwrap_or(&recipe)
            ),
            None if request.contains("McDonald") => "Ordered at McDonald's: a Big Mac menu".into(),
            None => format!("Ordered: {request}"),
        })
    })
    .with_description("places orders at restaurants and cafés");

    let planner = PlanningAgent::builder("planner")
        .model_arc(model.clone())
        .agent(barista)
        .agent(orderer)
        .build()?;
    println!(
        "== the planner's instructions ==\n{}\n",
        planner.system_prompt()
    );

    let team = Workflow::builder()
        .name("errands")
        .participant(planner)
        .build()?;
    let console = RunContext::console();
    let result = team
        .run_task("Get me a Starbucks drink and a McDonald's lunch.", &console)
        .await?;
    console.sink().flush().await; // its events are all printed first

    // The first answer did not make a plan: the model was told why.
    let requests = model.requests();
    if let Some(feedback) = requests.get(1).and_then(|r| r.messages.last()) {
        println!("\n== feedback on the first answer ==\n{}", feedback.text());
    }
    println!("\n== plan (after {} model calls) ==", requests.len());
    for m in result
        .messages
        .iter()
        .filter(|m| m.metadata.get(PLAN_KEY).map(String::as_str) == Some("plan"))
    {
        println!("{}", m.text_content());
    }
    println!("\n== results ==");
    for m in &result.messages {
        if let Some(step) = m.metadata.get(STEP_KEY) {
            println!("{step}: {}", m.text_content());
        }
    }
    println!("\n{} ({} tokens)", result.status, result.usage.total());
    Ok(())
}
