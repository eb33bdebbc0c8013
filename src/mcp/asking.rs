//! A run's question put to the MCP client, by who answers it: a `user:`
//! agent answered by a person (the default, and `ask_user`, approvals) is
//! an elicitation — the agent's declared `form`, else one text field; one
//! `answered_by: client_model` is a sampling request (the question as the
//! user's message, the model's text the answer); one `answered_by:
//! client_roots` is a `roots/list` (the roots as JSON the answer). On a
//! session they are requests to the client; on the stateless revision,
//! entries of an `InputRequiredResult` and their `inputResponses`.

#![allow(deprecated)] // sampling and roots: deprecated by SEP-2577, in both eras troupe speaks.

use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, ElicitRequest, ElicitRequestParams,
    ElicitationAction, ElicitationSchema, InputRequest as McpInput,
};
use rmcp::service::{ElicitationMode, RequestContext};
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::{Value, json};
use troupe::InputRequest;
use troupe::config::{UserAnswerer, UserSpec};

use super::McpTeam;

/// The `user:` spec of the agent asking `q`, if it is one.
fn user_of<'a>(team: &'a McpTeam, q: &InputRequest) -> Option<&'a UserSpec> {
    let agent = q.agent.rsplit('/').next().unwrap_or(&q.agent);
    team.config.spec().agents.get(agent)?.user.as_ref()
}

/// Who answers `q`.
fn answerer(team: &McpTeam, q: &InputRequest) -> UserAnswerer {
    user_of(team, q)
        .and_then(|u| u.answered_by)
        .unwrap_or(UserAnswerer::Person)
}

/// The form asking `q`: the asking agent's declared `form`, else one text
/// field, `answer`.
fn elicitation(team: &McpTeam, q: &InputRequest) -> ElicitRequestParams {
    let schema = user_of(team, q)
        .and_then(|u| u.form.clone())
        .unwrap_or_else(|| {
            json!({
                "type": "object",
                "properties": {"answer": {"type": "string", "title": "Answer", "description": q.prompt}},
                "required": ["answer"],
            })
        });
    ElicitRequestParams::FormElicitationParams {
        meta: None,
        message: q.prompt.clone(),
        requested_schema: serde_json::from_value::<ElicitationSchema>(schema)
            .unwrap_or_else(|_| ElicitationSchema::builder().build_unchecked()),
    }
}

/// The sampling request for `q`: its prompt as the user's message.
fn sampling(team: &McpTeam, q: &InputRequest) -> Value {
    let max_tokens = user_of(team, q).and_then(|u| u.max_tokens).unwrap_or(1000);
    json!({
        "messages": [{"role": "user", "content": {"type": "text", "text": q.prompt}}],
        "maxTokens": max_tokens,
    })
}

/// `q` as an entry of an `InputRequiredResult`.
pub(super) fn input_request(team: &McpTeam, q: &InputRequest) -> McpInput {
    let wire = match answerer(team, q) {
        UserAnswerer::ClientModel => {
            json!({"method": "sampling/createMessage", "params": sampling(team, q)})
        }
        UserAnswerer::ClientRoots => json!({"method": "roots/list"}),
        UserAnswerer::Person => {
            return McpInput::Elicitation(ElicitRequest::new(elicitation(team, q)));
        }
    };
    serde_json::from_value(wire)
        .unwrap_or_else(|_| McpInput::Elicitation(ElicitRequest::new(elicitation(team, q))))
}

/// The error for questions the client cannot be asked (it did not declare
/// the capability), naming the capabilities missing.
pub(super) fn missing_capability(
    team: &McpTeam,
    requests: &[InputRequest],
    context: &RequestContext<RoleServer>,
) -> Option<McpError> {
    let declared = context.client_capabilities().unwrap_or_default();
    let mut missing = serde_json::Map::new();
    for q in requests {
        let (name, has) = match answerer(team, q) {
            UserAnswerer::Person => ("elicitation", declared.elicitation.is_some()),
            UserAnswerer::ClientModel => ("sampling", declared.sampling.is_some()),
            UserAnswerer::ClientRoots => ("roots", declared.roots.is_some()),
        };
        if !has {
            missing.insert(name.into(), json!({}));
        }
    }
    if missing.is_empty() {
        return None;
    }
    let required: ClientCapabilities = serde_json::from_value(Value::Object(missing)).ok()?;
    Some(McpError::missing_required_client_capability(required))
}

/// Asks `q` of the client over a session; the answer, or why there is
/// none (declined, not supported, no answer) — the run is then cancelled.
pub(super) async fn ask(
    team: &McpTeam,
    q: &InputRequest,
    context: &RequestContext<RoleServer>,
) -> Result<String, String> {
    let peer = &context.peer;
    let caps = context.client_capabilities().unwrap_or_default();
    let no_answer = |e: &dyn std::fmt::Display| {
        format!(
            "the team asked `{}` and the client did not answer ({e}); the run is cancelled",
            q.prompt
        )
    };
    match answerer(team, q) {
        UserAnswerer::Person => {
            if !peer
                .supported_elicitation_modes()
                .contains(&ElicitationMode::Form)
            {
                return Err(format!(
                    "the team `{}` asks: {} — but this client takes no elicitation (form mode), so the run is cancelled",
                    team.name, q.prompt
                ));
            }
            let reply = peer
                .create_elicitation(elicitation(team, q))
                .await
                .map_err(|e| no_answer(&e))?;
            match reply.action {
                ElicitationAction::Accept => Ok(text_of(reply.content.as_ref())),
                _ => Err(format!(
                    "the question was declined; the run of `{}` is cancelled",
                    team.name
                )),
            }
        }
        UserAnswerer::ClientModel => {
            if caps.sampling.is_none() {
                return Err(format!(
                    "the team `{}` asks the client's model, but this client offers no sampling; the run is cancelled",
                    team.name
                ));
            }
            let params: CreateMessageRequestParams =
                serde_json::from_value(sampling(team, q)).map_err(|e| no_answer(&e))?;
            let reply = peer
                .create_message(params)
                .await
                .map_err(|e| no_answer(&e))?;
            let value = serde_json::to_value(&reply).map_err(|e| no_answer(&e))?;
            Ok(sampled_text(&value))
        }
        UserAnswerer::ClientRoots => {
            if caps.roots.is_none() {
                return Err(format!(
                    "the team `{}` asks for the client's roots, but this client offers none; the run is cancelled",
                    team.name
                ));
            }
            let roots = peer.list_roots().await.map_err(|e| no_answer(&e))?;
            let value = serde_json::to_value(&roots).map_err(|e| no_answer(&e))?;
            Ok(value.get("roots").unwrap_or(&value).to_string())
        }
    }
}

/// The answer an `inputResponses` entry for `q` holds: `None` when a form
/// was declined.
pub(super) fn answer_of(
    team: &McpTeam,
    q: &InputRequest,
    response: &Value,
) -> Result<Option<String>, String> {
    let Value::Object(map) = response else {
        return Err(format!(
            "an input response must be an object (the client's result), not {response}"
        ));
    };
    match answerer(team, q) {
        UserAnswerer::ClientModel => match map.get("content") {
            Some(_) => Ok(Some(sampled_text(response))),
            None => Err("a sampling result needs its `content`".into()),
        },
        UserAnswerer::ClientRoots => match map.get("roots") {
            Some(Value::Array(roots)) => Ok(Some(Value::Array(roots.clone()).to_string())),
            _ => Err("a roots result needs its `roots` (a list)".into()),
        },
        UserAnswerer::Person => match map.get("action").and_then(Value::as_str) {
            Some("accept") => Ok(Some(text_of(map.get("content")))),
            Some("decline" | "cancel") => Ok(None),
            Some(other) => Err(format!(
                "`action` is `{other}`; one of accept, decline, cancel"
            )),
            None => Err("`action` is missing (accept, decline or cancel)".into()),
        },
    }
}

/// The text of a sampling result (`content` one block or a list).
fn sampled_text(result: &Value) -> String {
    let text = |c: &Value| c.get("text").and_then(Value::as_str).map(str::to_string);
    match result.get("content") {
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(text)
            .collect::<Vec<_>>()
            .join("\n"),
        Some(block) => text(block).unwrap_or_else(|| block.to_string()),
        None => String::new(),
    }
}

/// The text of an accepted form: its `answer`, else its only string
/// field, else the form as JSON.
fn text_of(content: Option<&Value>) -> String {
    let Some(Value::Object(map)) = content else {
        return content.map(|c| c.to_string()).unwrap_or_default();
    };
    if let Some(Value::String(a)) = map.get("answer") {
        return a.clone();
    }
    let strings: Vec<&str> = map.values().filter_map(Value::as_str).collect();
    match strings.as_slice() {
        [only] if map.len() == 1 => (*only).to_string(),
        _ => Value::Object(map.clone()).to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_reads_as_its_answer_its_only_field_or_its_json() {
        assert_eq!(text_of(Some(&json!({"answer": "yes", "x": 1}))), "yes");
        assert_eq!(text_of(Some(&json!({"name": "Alice"}))), "Alice");
        assert_eq!(
            text_of(Some(&json!({"a": "1", "b": "2"}))),
            r#"{"a":"1","b":"2"}"#
        );
        assert_eq!(text_of(None), "");
    }

    #[test]
    fn a_sampling_result_reads_as_its_text() {
        let one = json!({"role": "assistant", "content": {"type": "text", "text": "Paris."}});
        assert_eq!(sampled_text(&one), "Paris.");
        let many =
            json!({"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]});
        assert_eq!(sampled_text(&many), "a\nb");
    }
}
