//! An assistant with tools, in a one-agent workflow.
//!
//! It has two Rust functions as tools (a weather lookup and a unit
//! converter). Asked which of two cities is warmer, it looks both up — the
//! two calls run concurrently — converts the warmer temperature, and
//! answers. Events print on the console: the turn, each tool call and its
//! result.
//!
//! Offline (the default), a scripted model plays the assistant, so the
//! example always tells the same story:
//!
//! ```text
//! cargo run --example assistant_with_tools
//! ```
//!
//! With `OPENAI_BASE_URL` set, a real OpenAI-compatible endpoint answers
//! (model from `OPENAI_MODEL`, default `gpt-4o-mini`; key from
//! `OPENAI_API_KEY`, which local servers usually do not need):
//!
//! ```text
//! OPENAI_BASE_URL=http://localhost:11434/v1 OPENAI_MODEL=llama3.2 \
//!     cargo run --example assistant_with_tools
//! OPENAI_BASE_URL=https://api.openai.com/v1 OPENAI_API_KEY=sk-... \
//!     cargo run --example assistant_with_tools -- "Is Rome warmer than Madrid?"
//! ```

use std::error::Error;
use std::sync::Arc;

use serde::Deserialize;
use serde_json::json;
use troupe::{Router, RunContext, Workflow};
use troupe_agents::schemars::JsonSchema;
use troupe_agents::{
    ChatAgent, ChatModel, FunctionTool, OpenAiClient, ScriptedModel, ScriptedReply, ToolOutput,
};

// schemars is re-exported by troupe-agents; the attribute points the
// derive at it, so this package needs no schemars dependency of its own.
#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "troupe_agents::schemars")]
struct City {
    /// The city's name, e.g. "Oslo".
    city: String,
}

#[derive(Deserialize, JsonSchema)]
#[schemars(crate = "troupe_agents::schemars")]
struct Celsius {
    /// A temperature in degrees Celsius.
    celsius: f64,
}

/// A stand-in weather service: the same city always gets the same weather.
fn weather_of(city: &str) -> (f64, &'static str) {
    match city.to_lowercase().as_str() {
        "oslo" => (4.0, "drizzle"),
        "lisbon" => (21.0, "sunny"),
        "rome" => (18.0, "clear"),
        "madrid" => (19.0, "windy"),
        other => ((other.len() % 25) as f64 + 5.0, "cloudy"),
    }
}

fn tools() -> [FunctionTool; 2] {
    let weather = FunctionTool::new(
        "get_weather",
        "Today's temperature (°C) and sky in a city.",
        |c: City| async move {
            let (temp, sky) = weather_of(&c.city);
            // The memory stays in the assistant's context after the raw
            // result is trimmed from it (seed 003, pattern 6).
            Ok::<_, String>(
                ToolOutput::text(json!({"city": c.city, "celsius": temp, "sky": sky}).to_string())
                    .with_memory(format!("{} is {temp} °C", c.city)),
            )
        },
    );
    let convert = FunctionTool::new(
        "celsius_to_fahrenheit",
        "Converts a temperature from °C to °F.",
        |c: Celsius| async move {
            if !c.celsius.is_finite() {
                return Err("not a temperature".to_string());
            }
            Ok(format!("{:.1}", c.celsius * 9.0 / 5.0 + 32.0))
        },
    );
    [weather, convert]
}

/// The scripted model: what a model would answer, step by step.
fn scripted() -> ScriptedModel {
    ScriptedModel::new([
        ScriptedReply::tool_calls([
            ("get_weather", json!({"city": "Oslo"})),
            ("get_weather", json!({"city": "Lisbon"})),
        ]),
        ScriptedReply::tool_call("celsius_to_fahrenheit", json!({"celsius": 21.0})),
        ScriptedReply::text(
            "Lisbon is warmer: 21 °C (69.8 °F) and sunny, against 4 °C and drizzle in Oslo.",
        ),
    ])
    .named("scripted-assistant")
}

#[tokio::main]
async fn main() {
    if let Err(e) = run().await {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}

async fn run() -> Result<(), Box<dyn Error>> {
    let question = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "Which is warmer today, Oslo or Lisbon? Give °F too.".into());

    let model: Arc<dyn ChatModel> = if std::env::var_os("OPENAI_BASE_URL").is_some() {
        let client = OpenAiClient::from_env_with_model("gpt-4o-mini")?;
        println!("model: {} at {}", client.model_name(), client.endpoint());
        Arc::new(client)
    } else {
        println!("model: scripted (set OPENAI_BASE_URL to use a real endpoint)");
        Arc::new(scripted())
    };

    let assistant = ChatAgent::builder("assistant")
        .description("Answers weather questions with its tools.")
        .instructions(
            "You answer weather questions. Look temperatures up with get_weather \
             (never guess them) and convert with celsius_to_fahrenheit. Be brief.",
        )
        .model_arc(model)
        .tools(tools())
        .max_tool_iterations(5)
        .build()?;

    let workflow = Workflow::builder()
        .name("weather-desk")
        .participant(assistant)
        .router(
            Router::builder()
                .add_route("user", "assistant")
                .output("assistant"),
        )
        .build()?;

    let console = RunContext::console();
    let result = workflow.run_task(question, &console).await?;
    console.sink().flush().await; // its events are all printed first
    println!("\nanswer: {}", result.final_text());
    println!(
        "tokens: {} prompt + {} completion",
        result.usage.prompt_tokens, result.usage.completion_tokens
    );
    Ok(())
}
