//! A run as an A2A task: the task's id is the run's, its context the
//! run's session; its state follows the run's status (a run waiting for
//! input is a task whose state is `TASK_STATE_INPUT_REQUIRED`, its
//! questions the status message), and a finished run's response is the
//! task's one artifact, `response`.

use std::time::SystemTime;

use serde_json::{Map, Value, json};
use troupe::agents::a2a::types::{
    A2aMessage, Artifact, Part, Role, Task, TaskState, TaskStatus, TaskStatusUpdateEvent,
};

use super::super::run::{Run, Status};

/// The id of the artifact holding a run's response.
pub(crate) const RESPONSE: &str = "response";

/// The task state of a run status.
pub(crate) fn state(status: Status) -> TaskState {
    match status {
        Status::Running => TaskState::Working,
        Status::WaitingForInput => TaskState::InputRequired,
        Status::Completed | Status::Stopped => TaskState::Completed,
        Status::Failed | Status::Interrupted => TaskState::Failed,
        Status::Cancelled => TaskState::Canceled,
    }
}

/// The context (session) of a run.
pub(crate) fn context(run: &Run) -> String {
    run.session.clone().unwrap_or_default()
}

fn now() -> String {
    humantime::format_rfc3339_millis(SystemTime::now()).to_string()
}

/// An agent's message in `run`'s task.
fn agent_message(run: &Run, text: String, metadata: Option<Map<String, Value>>) -> A2aMessage {
    A2aMessage {
        message_id: format!("{}-{}", run.id, troupe::message::MessageId::new()),
        context_id: Some(context(run)),
        task_id: Some(run.id.clone()),
        role: Role::Agent,
        parts: vec![Part::text(text)],
        metadata,
        reference_task_ids: Vec::new(),
    }
}

/// The run's status as the task's: the questions when it waits for
/// input (each with its request id in the metadata), the error when it
/// failed.
pub(crate) fn status(run: &Run) -> TaskStatus {
    let inner = run.inner();
    let st = inner.status();
    let message = match st {
        Status::WaitingForInput => {
            let text = inner
                .requests
                .iter()
                .map(|q| q.prompt.clone())
                .collect::<Vec<_>>()
                .join("\n");
            let requests: Vec<Value> = inner
                .requests
                .iter()
                .map(|q| json!({"id": q.id, "agent": q.agent, "question": q.prompt}))
                .collect();
            let mut meta = Map::new();
            meta.insert("troupe.requests".into(), Value::Array(requests));
            Some((text, Some(meta)))
        }
        Status::Failed => Some((
            format!(
                "the team's run failed: {}",
                inner.error.as_deref().unwrap_or("unknown error")
            ),
            None,
        )),
        Status::Interrupted => Some(("the server shut down before the run ended".into(), None)),
        Status::Cancelled => Some(("cancelled".into(), None)),
        Status::Running | Status::Completed | Status::Stopped => None,
    };
    drop(inner);
    TaskStatus {
        state: state(st),
        message: message.map(|(text, meta)| agent_message(run, text, meta)),
        timestamp: Some(now()),
    }
}

/// The response artifact of a finished run, if it has one.
pub(crate) fn response(run: &Run) -> Option<Artifact> {
    let inner = run.inner();
    if !matches!(inner.status(), Status::Completed | Status::Stopped) {
        return None;
    }
    Some(response_artifact(
        inner.response.clone().unwrap_or_default(),
    ))
}

/// The response artifact holding `text`.
pub(crate) fn response_artifact(text: String) -> Artifact {
    Artifact {
        artifact_id: RESPONSE.into(),
        name: Some(RESPONSE.into()),
        description: Some("The team's final response.".into()),
        parts: super::parts::answer_parts(text),
        metadata: None,
    }
}

/// The run as a task, with at most `history` messages of its history.
pub(crate) fn task(run: &Run, history: Option<usize>) -> Task {
    let status = status(run);
    let mut messages = vec![A2aMessage {
        message_id: format!("{}-task", run.id),
        context_id: Some(context(run)),
        task_id: Some(run.id.clone()),
        role: Role::User,
        parts: vec![Part::text(run.task.clone())],
        ..A2aMessage::default()
    }];
    if let Some(m) = &status.message {
        messages.push(m.clone());
    }
    if let Some(n) = history {
        let skip = messages.len().saturating_sub(n);
        messages.drain(..skip);
    }
    Task {
        id: run.id.clone(),
        context_id: context(run),
        status,
        artifacts: response(run).into_iter().collect(),
        history: messages,
        metadata: Some(Map::from_iter([(
            "troupe.team".to_string(),
            Value::String(run.team.clone()),
        )])),
    }
}

/// The run's status as a stream event.
pub(crate) fn status_update(run: &Run) -> TaskStatusUpdateEvent {
    TaskStatusUpdateEvent {
        task_id: run.id.clone(),
        context_id: context(run),
        status: status(run),
        metadata: None,
    }
}
