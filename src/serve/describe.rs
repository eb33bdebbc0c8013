//! `GET /team`: a team's description (agents, the workflow as Mermaid
//! text, models) without secrets.

use axum::Json;
use axum::extract::State as Axum;
use axum::http::Uri;
use serde_json::{Value, json};
use troupe::config::{BuiltinTool, Provider, ToolSpec};

use super::error::ApiError;
use super::query::query_param;
use super::state::Shared;
use super::team::Team;

/// `GET /team[?team=NAME]`.
pub(crate) async fn describe(Axum(state): Axum<Shared>, uri: Uri) -> Result<Json<Value>, ApiError> {
    let team = state.team(query_param(&uri, "team").as_deref())?;
    Ok(Json(description(team)))
}

/// A team as JSON: never a key, header or environment value.
pub(crate) fn description(team: &Team) -> Value {
    let spec = team.config.spec();
    let model_of = |name: &str| {
        spec.models.get(name).map(
            |m| json!({"provider": provider(m.provider), "model": model_name(m.model.as_deref())}),
        )
    };
    let agents: Vec<Value> = spec
        .agents
        .iter()
        .map(|(name, a)| {
            json!({
                "name": name,
                "description": a.description,
                "model": a.model.as_deref().and_then(model_of),
                "tools": a.tools.iter().map(tool_name).collect::<Vec<_>>(),
            })
        })
        .collect();
    let models: Vec<Value> = spec
        .models
        .iter()
        .map(|(name, m)| {
            json!({"name": name, "provider": provider(m.provider), "model": model_name(m.model.as_deref())})
        })
        .collect();
    json!({
        "name": team.name,
        "description": spec.description,
        "agents": agents,
        "mermaid": team.config.mermaid(),
        "models": models,
    })
}

/// A model's name as it runs: `${OPENAI_MODEL:-gpt-4o-mini}` expanded
/// (never shown raw; `null` when it cannot be).
fn model_name(written: Option<&str>) -> Option<String> {
    troupe::config::expand_env(written?)
}

fn provider(p: Provider) -> &'static str {
    match p {
        Provider::Openai => "openai",
        Provider::OpenaiResponses => "openai_responses",
        Provider::Anthropic => "anthropic",
        Provider::Scripted => "scripted",
        Provider::Auto => "auto",
    }
}

fn tool_name(t: &ToolSpec) -> String {
    match t {
        ToolSpec::Builtin(b, _) => match b {
            BuiltinTool::Calculator => "calculator",
            BuiltinTool::CurrentTime => "current_time",
            BuiltinTool::WordCount => "word_count",
            BuiltinTool::AskUser => "ask_user",
            BuiltinTool::EmitEvent => "emit_event",
            BuiltinTool::YieldOutput => "yield_output",
        }
        .into(),
        ToolSpec::Mcp(m) => format!("mcp:{}", m.name.as_deref().unwrap_or("mcp")),
        ToolSpec::Agent(a) => a
            .agent
            .clone()
            .or_else(|| a.workflow.clone())
            .unwrap_or_else(|| "agent".into()),
    }
}
