//! Prompt placeholders (seed 003): named holes in a [`ChatAgent`]'s
//! instructions — `{action_result}`, `{action_memory}`, `{attachments}`,
//! `{conversation}`, `{current_state}`, `{previous_states}` — filled at
//! each turn from the run state and the thread the turn is given.
//!
//! [`ChatAgent`]: crate::ChatAgent

use serde::{Deserialize, Serialize};
use troupe_runtime::{Content, Thread, message::USER, state::StateSnapshot};

/// Run-state key of `{action_result}`: the latest actions' results.
pub const ACTION_RESULT_KEY: &str = "action_result";
/// Run-state key of `{action_memory}`: the latest actions' memories.
pub const ACTION_MEMORY_KEY: &str = "action_memory";
/// Run-state key of `{attachments}` (else the thread's attachments).
pub const ATTACHMENTS_KEY: &str = "attachments";
/// Run-state key of `{conversation}` (else the thread, rendered).
pub const CONVERSATION_KEY: &str = "conversation";
/// Run-state key of the task-status items (a JSON list of
/// [`TaskStateItem`]) `{current_state}` and `{previous_states}` are read
/// from.
pub const TASK_STATES_KEY: &str = "task_states";

/// The placeholders an instructions template may hold.
pub const PLACEHOLDERS: [&str; 6] = [
    "action_result",
    "action_memory",
    "attachments",
    "conversation",
    "current_state",
    "previous_states",
];

/// A task's status, as a reasoner states it each iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TaskStatus {
    /// The task is done.
    #[serde(alias = "Completed", alias = "COMPLETED")]
    Completed,
    /// Work goes on.
    #[serde(alias = "Ongoing", alias = "ONGOING")]
    Ongoing,
    /// Waiting (skipped by `{current_state}` and `{previous_states}`).
    #[serde(alias = "Pending", alias = "PENDING")]
    Pending,
}

impl TaskStatus {
    /// `completed`, `ongoing` or `pending`.
    pub fn as_str(self) -> &'static str {
        match self {
            TaskStatus::Completed => "completed",
            TaskStatus::Ongoing => "ongoing",
            TaskStatus::Pending => "pending",
        }
    }
}

/// One iteration's state item: the task status and its descriptions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskStateItem {
    /// The task status.
    pub status: TaskStatus,
    /// A short description of the status.
    #[serde(default)]
    pub description: String,
    /// A longer one (shown by `{current_state}` when given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description_extended: Option<String>,
}

/// `{current_state}` and `{previous_states}` of `items`: the newest item
/// that is not pending (its extended description if it has one), and the
/// descriptions of the earlier ones that are not pending, one a line.
pub fn state_strings(items: &[TaskStateItem]) -> (String, String) {
    let mut shown = items.iter().filter(|i| i.status != TaskStatus::Pending);
    let Some(current) = shown.next_back() else {
        return (String::new(), String::new());
    };
    let current_text = format!(
        "[{}] {}",
        current.status.as_str(),
        current
            .description_extended
            .as_deref()
            .unwrap_or(&current.description)
    );
    let previous: Vec<String> = shown
        .map(|i| format!("[{}] {}", i.status.as_str(), i.description))
        .collect();
    (current_text, previous.join("\n"))
}

/// `{conversation}` of `thread` for agent `me`: each text message on a
/// line, `User:` for the user's, `Agent:` for the agent's own, the
/// sender's name for others'.
pub fn conversation(me: &str, thread: &Thread) -> String {
    thread
        .messages()
        .iter()
        .filter(|m| matches!(m.content, Content::Text(_) | Content::Structured(_)))
        .filter(|m| !m.metadata.contains_key(troupe_runtime::graph::INPUT_KEY))
        .map(|m| {
            let who = if &*m.source == USER || m.source.is_empty() {
                "User"
            } else if &*m.source == me {
                "Agent"
            } else {
                &m.source
            };
            format!("{who}: {}", m.text_content())
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// `{attachments}` of `thread`: the messages of attachments the thread
/// holds (a plan's or a graph node's results), one after the other.
fn attachments(thread: &Thread) -> String {
    thread
        .messages()
        .iter()
        .filter(|m| {
            m.metadata
                .get(troupe_runtime::graph::INPUT_KEY)
                .map(|v| v.as_str())
                == Some("attachments")
        })
        .map(|m| m.text_content().into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

/// `{action_memory}` when the run state has none: the memories of the
/// last tool results in the thread that kept any.
fn thread_memories(thread: &Thread) -> String {
    thread
        .messages()
        .iter()
        .rev()
        .find_map(|m| match &m.content {
            Content::ToolResults(rs) if rs.iter().any(|r| r.memory.is_some()) => Some(
                rs.iter()
                    .filter_map(|r| r.memory.as_deref())
                    .collect::<Vec<_>>()
                    .join("\n"),
            ),
            _ => None,
        })
        .unwrap_or_default()
}

/// `template` with its placeholders filled for agent `me` over `thread`
/// under run state `state`, or `None` when it holds none (the common
/// case: nothing is copied). A placeholder with no value is left empty;
/// other braces are left as written.
pub fn fill(template: &str, me: &str, thread: &Thread, state: &StateSnapshot) -> Option<String> {
    if !template.contains('{')
        || !PLACEHOLDERS
            .iter()
            .any(|p| template.contains(&format!("{{{p}}}")))
    {
        return None;
    }
    let mut out = template.to_string();
    let from_state = |key: &str| state.get(key).map(str::to_string);
    let items: Vec<TaskStateItem> = state
        .get(TASK_STATES_KEY)
        .and_then(|s| serde_json::from_str(s).ok())
        .unwrap_or_default();
    let (current, previous) = state_strings(&items);
    for name in PLACEHOLDERS {
        let hole = format!("{{{name}}}");
        if !out.contains(&hole) {
            continue;
        }
        let value = match name {
            "action_result" => from_state(ACTION_RESULT_KEY).unwrap_or_default(),
            "action_memory" => {
                from_state(ACTION_MEMORY_KEY).unwrap_or_else(|| thread_memories(thread))
            }
            "attachments" => from_state(ATTACHMENTS_KEY).unwrap_or_else(|| attachments(thread)),
            "conversation" => {
                from_state(CONVERSATION_KEY).unwrap_or_else(|| conversation(me, thread))
            }
            "current_state" => current.clone(),
            _ => previous.clone(),
        };
        out = out.replace(&hole, &value);
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_runtime::{Message, state::StateDelta};

    #[test]
    fn placeholders_come_from_the_state_and_the_thread() {
        let thread = Thread::from_messages([
            Message::user("find a drink"),
            Message::text("me", "looking"),
            Message::text("user", "<attachment id=\"A\">x</attachment>")
                .with_metadata(troupe_runtime::graph::INPUT_KEY, "attachments"),
        ]);
        let items = vec![
            TaskStateItem {
                status: TaskStatus::Ongoing,
                description: "searching".into(),
                description_extended: None,
            },
            TaskStateItem {
                status: TaskStatus::Pending,
                description: "waiting".into(),
                description_extended: None,
            },
            TaskStateItem {
                status: TaskStatus::Ongoing,
                description: "ordering".into(),
                description_extended: Some("ordering a latte".into()),
            },
        ];
        let mut state = StateSnapshot::default();
        state.apply(
            &StateDelta::new()
                .set(ACTION_RESULT_KEY, "<ActionResults/>")
                .set(ACTION_MEMORY_KEY, "A: a latte")
                .set(TASK_STATES_KEY, serde_json::to_string(&items).unwrap()),
        );
        let t = "R={action_result} M={action_memory} C={conversation} S={current_state} \
                 P={previous_states} A={attachments} {other}";
        let filled = fill(t, "me", &thread, &state).unwrap();
        assert_eq!(
            filled,
            "R=<ActionResults/> M=A: a latte C=User: find a drink\nAgent: looking \
             S=[ongoing] ordering a latte P=[ongoing] searching \
             A=<attachment id=\"A\">x</attachment> {other}"
        );
        assert_eq!(fill("no holes {x}", "me", &thread, &state), None);
    }
}
