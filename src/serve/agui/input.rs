//! `RunAgentInput`, the body of `POST /agui/{team}`: read leniently where
//! the protocol allows (unknown fields, `tools`, `context` and
//! `forwardedProps` are accepted and not used: the team has its own tools),
//! strictly where troupe needs a value (the ids, the user's message, the
//! resume entries), each failure a 400 naming the field.

use serde::Deserialize;
use serde_json::{Map, Value};

use crate::serve::error::ApiError;
use crate::serve::sessions::check_id;

/// The request body, as the protocol names its fields.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct RunAgentInput {
    /// The conversation: a troupe session of the same id.
    pub(crate) thread_id: String,
    /// The client's id for this run (echoed on every lifecycle event).
    pub(crate) run_id: String,
    /// The run this one follows, if the client says so.
    #[serde(default)]
    pub(crate) parent_run_id: Option<String>,
    /// The client's state; the run's own goes under `troupe` beside it.
    #[serde(default)]
    pub(crate) state: Value,
    /// The messages the client holds; the last user message is the turn.
    #[serde(default)]
    pub(crate) messages: Vec<InputMessage>,
    /// Answers to the interrupts the thread's last run ended with.
    #[serde(default)]
    pub(crate) resume: Option<Vec<ResumeEntry>>,
}

/// One message of `messages` (only what troupe reads of it).
#[derive(Deserialize)]
pub(crate) struct InputMessage {
    /// `user`, `assistant`, `system`, `developer`, `tool`, …
    pub(crate) role: String,
    /// A string, or (user messages) a list of input parts.
    #[serde(default)]
    pub(crate) content: Option<Value>,
}

impl InputMessage {
    /// Its text: the string, or the text parts of a list of parts.
    fn text(&self) -> String {
        match &self.content {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Array(parts)) => parts
                .iter()
                .filter(|p| p.get("type").and_then(Value::as_str) == Some("text"))
                .filter_map(|p| p.get("text").and_then(Value::as_str))
                .collect::<Vec<_>>()
                .join("\n"),
            _ => String::new(),
        }
    }
}

/// How the user resolved an interrupt.
#[derive(Deserialize, Clone, Copy, PartialEq, Eq, Debug)]
#[serde(rename_all = "lowercase")]
pub(crate) enum ResumeStatus {
    /// Answered: `payload` is the answer.
    Resolved,
    /// Abandoned: the run is cancelled.
    Cancelled,
}

/// One entry of `resume`.
#[derive(Deserialize, Clone)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ResumeEntry {
    /// The interrupt it answers (a troupe input request's id).
    pub(crate) interrupt_id: String,
    /// Resolved or cancelled.
    pub(crate) status: ResumeStatus,
    /// The answer: a string, an object with a string `answer`, an
    /// approval `{"approved": bool, "reason"?}`, or any JSON (given to the
    /// agent as its JSON text).
    #[serde(default)]
    pub(crate) payload: Option<Value>,
}

impl ResumeEntry {
    /// The answer's text, as the asking agent reads it.
    pub(crate) fn answer(&self) -> Result<String, ApiError> {
        match &self.payload {
            Some(Value::String(s)) => Ok(s.clone()),
            Some(Value::Object(o)) => match (o.get("answer"), o.get("approved")) {
                (Some(Value::String(s)), _) => Ok(s.clone()),
                // An approval: yes, or the user's reason for no (the model
                // is told the call was denied, with these words).
                (_, Some(Value::Bool(true))) => Ok("yes".into()),
                (_, Some(Value::Bool(false))) => Ok(o
                    .get("reason")
                    .and_then(Value::as_str)
                    .filter(|r| !r.trim().is_empty())
                    .unwrap_or("no")
                    .to_string()),
                _ => Ok(Value::Object(o.clone()).to_string()),
            },
            Some(Value::Null) | None => Err(ApiError::bad_request(format!(
                "resume entry for interrupt `{}` is resolved but has no `payload` (the answer)",
                self.interrupt_id
            ))),
            Some(other) => Ok(other.to_string()),
        }
    }
}

/// Reads the body; 400 naming the problem.
pub(crate) fn parse(body: Value) -> Result<RunAgentInput, ApiError> {
    shape(&body)?;
    let input: RunAgentInput = serde_json::from_value(body).map_err(|e| {
        ApiError::bad_request(format!(
            "the request body is not an AG-UI RunAgentInput: {e}"
        ))
    })?;
    if input.thread_id.is_empty() {
        return Err(ApiError::bad_request("`threadId` is empty".into()));
    }
    check_id(&input.thread_id).map_err(|e| {
        ApiError::bad_request(format!(
            "`threadId` names the troupe session, so it must be one: {}",
            e.message
        ))
    })?;
    if input.run_id.is_empty() {
        return Err(ApiError::bad_request("`runId` is empty".into()));
    }
    if !matches!(input.state, Value::Null | Value::Object(_)) {
        return Err(ApiError::bad_request(
            "`state` is a JSON object (or absent)".into(),
        ));
    }
    if let Some(resume) = &input.resume {
        for r in resume {
            if r.status == ResumeStatus::Resolved {
                r.answer()?;
            }
        }
    }
    Ok(input)
}

/// Checks the kinds of the fields troupe reads, to name the one that is
/// wrong (serde's own errors do not say where).
fn shape(body: &Value) -> Result<(), ApiError> {
    let Value::Object(o) = body else {
        return Err(ApiError::bad_request(
            "the request body is an AG-UI RunAgentInput, a JSON object".into(),
        ));
    };
    let wrong = |field: &str, kind: &str| {
        Err(ApiError::bad_request(format!(
            "`{field}` must be {kind} (AG-UI RunAgentInput)"
        )))
    };
    for field in ["threadId", "runId"] {
        match o.get(field) {
            Some(Value::String(_)) => {}
            None => return wrong(field, "given: a string"),
            Some(_) => return wrong(field, "a string"),
        }
    }
    if !matches!(
        o.get("parentRunId"),
        None | Some(Value::Null | Value::String(_))
    ) {
        return wrong("parentRunId", "a string");
    }
    if !matches!(
        o.get("messages"),
        None | Some(Value::Null | Value::Array(_))
    ) {
        return wrong("messages", "an array of messages");
    }
    match o.get("resume") {
        None | Some(Value::Null) => {}
        Some(Value::Array(entries)) => {
            for (i, r) in entries.iter().enumerate() {
                if !matches!(r.get("interruptId"), Some(Value::String(_))) {
                    return wrong(&format!("resume[{i}].interruptId"), "a string");
                }
                if !matches!(
                    r.get("status").and_then(Value::as_str),
                    Some("resolved" | "cancelled")
                ) {
                    return wrong(
                        &format!("resume[{i}].status"),
                        &format!(
                            "\"resolved\" or \"cancelled\", not {}",
                            r.get("status").unwrap_or(&Value::Null)
                        ),
                    );
                }
            }
        }
        Some(_) => return wrong("resume", "an array of resume entries"),
    }
    Ok(())
}

impl RunAgentInput {
    /// The client's state as an object (empty when absent).
    pub(crate) fn client_state(&self) -> Map<String, Value> {
        match &self.state {
            Value::Object(o) => o.clone(),
            _ => Map::new(),
        }
    }

    /// The text of the last user message; 400 when there is none.
    pub(crate) fn last_user_text(&self) -> Result<String, ApiError> {
        let m = self
            .messages
            .iter()
            .rev()
            .find(|m| m.role == "user")
            .ok_or_else(|| {
                ApiError::bad_request(
                    "`messages` holds no user message (and `resume` answers no interrupt)".into(),
                )
            })?;
        let text = m.text();
        if text.trim().is_empty() {
            return Err(ApiError::bad_request(
                "the last user message of `messages` has no text".into(),
            ));
        }
        Ok(text)
    }

    /// The conversation before the last user message, as troupe messages,
    /// as the OpenAI endpoint takes a stateless conversation (user,
    /// assistant and system text; tool messages and other roles left out:
    /// the team has tools of its own).
    pub(crate) fn history(&self) -> Vec<troupe::Message> {
        let last = self.messages.iter().rposition(|m| m.role == "user");
        self.messages[..last.unwrap_or(0)]
            .iter()
            .filter_map(|m| {
                let text = m.text();
                match m.role.as_str() {
                    _ if text.is_empty() => None,
                    "user" => Some(troupe::Message::user(text)),
                    "assistant" => Some(troupe::Message::text("assistant", text)),
                    "system" | "developer" => Some(troupe::Message::text("system", text)),
                    _ => None,
                }
            })
            .collect()
    }

    /// Whether the request resumes interrupts.
    pub(crate) fn resumes(&self) -> bool {
        self.resume.as_ref().is_some_and(|r| !r.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn entry(payload: Value) -> ResumeEntry {
        ResumeEntry {
            interrupt_id: "q".into(),
            status: ResumeStatus::Resolved,
            payload: Some(payload),
        }
    }

    #[test]
    fn an_answer_is_words_an_answer_field_or_an_approval() {
        let answer = |p: Value| entry(p).answer().ok();
        assert_eq!(answer(json!("red")).as_deref(), Some("red"));
        assert_eq!(answer(json!({"answer": "M"})).as_deref(), Some("M"));
        assert_eq!(answer(json!({"approved": true})).as_deref(), Some("yes"));
        assert_eq!(answer(json!({"approved": false})).as_deref(), Some("no"));
        let denied = json!({"approved": false, "reason": "too much"});
        assert_eq!(answer(denied).as_deref(), Some("too much"));
        assert_eq!(answer(json!({"size": 3})).as_deref(), Some("{\"size\":3}"));
        assert!(entry(Value::Null).answer().is_err());
    }

    #[test]
    fn a_wrong_field_is_named() {
        let cases = [
            (json!([]), "JSON object"),
            (json!({"runId": "r"}), "`threadId`"),
            (json!({"threadId": "t", "runId": 1}), "`runId`"),
            (
                json!({"threadId": "t", "runId": "r", "messages": {}}),
                "`messages`",
            ),
            (
                json!({"threadId": "t", "runId": "r", "resume": [{"status": "resolved"}]}),
                "`resume[0].interruptId`",
            ),
            (
                json!({"threadId": "t", "runId": "r", "resume": [{"interruptId": "q", "status": "done"}]}),
                "`resume[0].status`",
            ),
            (json!({"threadId": "a/b", "runId": "r"}), "`threadId`"),
        ];
        for (body, says) in cases {
            let Err(e) = parse(body.clone()) else {
                panic!("{body} was taken");
            };
            assert!(e.message.contains(says), "{body}: {}", e.message);
        }
    }
}
