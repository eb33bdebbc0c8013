//! What a reasoner turn answers (seed 000): the task status, an instant
//! response, and the next actions — action groups or a dependency graph.

use serde::{Deserialize, Serialize};
use troupe_agents::placeholders::{TaskStateItem, TaskStatus};

/// The rules of the answer, added after the reasoner's instructions.
pub const ANSWER_RULES: &str = "Answer with one JSON object: {\"status\": \"completed\" | \
\"ongoing\" | \"pending\", \"status_description\": \"<short>\", \"response\": \"<what you tell \
the user now>\", \"next_actions\": ...}. next_actions is either action groups, run one group \
after another, the actions of a group in parallel: [[{\"action\": \"<name>\", \"input\": \
\"<request>\"}], [{...}, {...}]], or a dependency graph: {\"actions\": [{\"id\": \"<ID>\", \
\"action\": \"<name>\", \"input\": \"<request>\"}], \"graph\": \"A -> B\\nC\"}. An action in a \
parallel group may say \"branch\": \"fresh\" or \"inherit\". Leave next_actions out when the \
task is completed.";

/// One action the reasoner asks for.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ActionCall {
    /// The action's id in its batch (default: its action's name, numbered
    /// when it repeats).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// The action: a tool, an agent or a workflow, by name.
    pub action: String,
    /// Its input: a request text, or a tool's arguments.
    #[serde(default)]
    pub input: serde_json::Value,
    /// In a parallel group: how its branched copy starts (default: the
    /// reasoner's `branching_agent_start_as_new`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub branch: Option<BranchStart>,
}

impl ActionCall {
    /// The input as a request text: a string as it is, other values as
    /// JSON.
    pub fn input_text(&self) -> String {
        match &self.input {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Null => String::new(),
            other => other.to_string(),
        }
    }
}

/// How a branched copy of the reasoner starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BranchStart {
    /// With no states of its own (`branching_agent_start_as_new: true`).
    Fresh,
    /// With the states and conversation of the agent it branched from.
    Inherit,
}

/// The next actions, in either form (the seed's polymorphic dispatch).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum NextActions {
    /// Action groups: `[[A], [B, C, D], [E]]`.
    Groups(Vec<Vec<ActionCall>>),
    /// A dependency graph over the actions' ids.
    Graph {
        /// The actions, each with an id.
        actions: Vec<ActionCall>,
        /// One path per line, `A -> B`; `,` for parallel positions.
        graph: String,
    },
}

impl NextActions {
    /// Whether it asks for no action.
    pub fn is_empty(&self) -> bool {
        match self {
            NextActions::Groups(g) => g.iter().all(Vec::is_empty),
            NextActions::Graph { actions, .. } => actions.is_empty(),
        }
    }
}

/// A reasoner turn's answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReasonerAnswer {
    /// The task status.
    pub status: TaskStatus,
    /// A short description of the status.
    #[serde(default)]
    pub status_description: String,
    /// A longer description (`{current_state}` shows it when given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status_description_extended: Option<String>,
    /// The instant response: what the user is told now.
    #[serde(default)]
    pub response: String,
    /// What to do next.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_actions: Option<NextActions>,
}

impl ReasonerAnswer {
    /// Reads an answer from the reasoner's text (JSON, possibly in a
    /// fenced block).
    pub fn parse(text: &str) -> Result<Self, String> {
        let trimmed = text.trim();
        let body = trimmed
            .strip_prefix("```json")
            .or_else(|| trimmed.strip_prefix("```"))
            .and_then(|t| t.strip_suffix("```"))
            .unwrap_or(trimmed);
        serde_json::from_str(body).map_err(|e| format!("the answer is not a reasoner answer: {e}"))
    }

    /// Its state item.
    pub fn state_item(&self) -> TaskStateItem {
        TaskStateItem {
            status: self.status,
            description: self.status_description.clone(),
            description_extended: self.status_description_extended.clone(),
        }
    }

    /// The actions to run, if any.
    pub fn actions(&self) -> Option<&NextActions> {
        self.next_actions.as_ref().filter(|n| !n.is_empty())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn either_form_of_next_actions_is_read() {
        let groups = ReasonerAnswer::parse(
            r#"{"status": "Ongoing", "response": "on it", "next_actions":
                [[{"action": "a"}], [{"action": "b", "branch": "fresh"}, {"action": "c"}]]}"#,
        )
        .unwrap();
        assert!(matches!(groups.next_actions, Some(NextActions::Groups(ref g)) if g.len() == 2));
        let graph = ReasonerAnswer::parse(
            "```json\n{\"status\": \"ongoing\", \"next_actions\": {\"actions\": \
             [{\"id\": \"X\", \"action\": \"a\", \"input\": {\"q\": 1}}], \"graph\": \"X\"}}\n```",
        )
        .unwrap();
        assert!(matches!(
            graph.next_actions,
            Some(NextActions::Graph { .. })
        ));
        let err = ReasonerAnswer::parse(r#"{"status": "done"}"#).unwrap_err();
        assert!(err.contains("unknown variant"), "{err}");
    }
}
