//! The Magentic manager's two ledgers: their Rust types, the JSON schemas
//! its model's answers are validated against, and their forms in words.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// The task ledger: what the manager knows about the task and how it means
/// to go about it. Written when a task starts, and rewritten (facts
/// updated, a new plan) each time the team stalls.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TaskLedger {
    /// Facts given or verified in the request itself.
    pub facts_given: Vec<String>,
    /// Facts to look up, and where.
    pub facts_to_look_up: Vec<String>,
    /// Facts to derive, by computation or logic.
    pub facts_to_derive: Vec<String>,
    /// Educated guesses: hunches and recollections.
    pub educated_guesses: Vec<String>,
    /// The plan, one step an item.
    pub plan: Vec<String>,
}

/// A yes-or-no judgement of a progress ledger, with its reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Judgement {
    /// Why.
    pub reason: String,
    /// The judgement.
    pub answer: bool,
}

/// A free answer of a progress ledger, with its reason.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Choice {
    /// Why.
    pub reason: String,
    /// The answer.
    pub answer: String,
}

/// The progress ledger the manager writes after every turn of the team,
/// as in AutoGen's MagenticOne.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProgressLedger {
    /// Whether the request has been fully and successfully addressed.
    pub is_request_satisfied: Judgement,
    /// Whether the team repeats the same requests or answers.
    pub is_in_loop: Judgement,
    /// Whether recent messages add value.
    pub is_progress_being_made: Judgement,
    /// Who speaks next (a participant's name; `user` when the manager
    /// may ask the user).
    pub next_speaker: Choice,
    /// What the next speaker is told, or the question for the user.
    pub instruction_or_question: Choice,
}

impl ProgressLedger {
    /// Whether this ledger counts as a stall: no progress, or a loop.
    pub fn stalled(&self) -> bool {
        !self.is_progress_being_made.answer || self.is_in_loop.answer
    }
}

fn strings() -> Value {
    json!({"type": "array", "items": {"type": "string"}})
}

fn closed(properties: Value) -> Value {
    let required: Vec<String> = properties
        .as_object()
        .map(|o| o.keys().cloned().collect())
        .unwrap_or_default();
    json!({
        "type": "object",
        "properties": properties,
        "required": required,
        "additionalProperties": false
    })
}

/// The JSON schema of a [`TaskLedger`] (closed, every field required, so
/// strict structured output accepts it).
pub fn task_ledger_schema() -> Value {
    closed(json!({
        "facts_given": strings(),
        "facts_to_look_up": strings(),
        "facts_to_derive": strings(),
        "educated_guesses": strings(),
        "plan": strings(),
    }))
}

/// The JSON schema of a [`ProgressLedger`].
pub fn progress_ledger_schema() -> Value {
    let judgement = closed(json!({"reason": {"type": "string"}, "answer": {"type": "boolean"}}));
    let choice = closed(json!({"reason": {"type": "string"}, "answer": {"type": "string"}}));
    closed(json!({
        "is_request_satisfied": judgement,
        "is_in_loop": judgement,
        "is_progress_being_made": judgement,
        "next_speaker": choice,
        "instruction_or_question": choice,
    }))
}

fn bullets(items: &[String]) -> String {
    if items.is_empty() {
        return "- (none)".into();
    }
    items
        .iter()
        .map(|i| format!("- {i}"))
        .collect::<Vec<_>>()
        .join("\n")
}

impl TaskLedger {
    /// The fact sheet, as the team is shown it.
    pub fn facts_text(&self) -> String {
        format!(
            "1. GIVEN OR VERIFIED FACTS\n{}\n\n2. FACTS TO LOOK UP\n{}\n\n3. FACTS TO DERIVE\n{}\n\n4. EDUCATED GUESSES\n{}",
            bullets(&self.facts_given),
            bullets(&self.facts_to_look_up),
            bullets(&self.facts_to_derive),
            bullets(&self.educated_guesses)
        )
    }

    /// The plan, one numbered step a line.
    pub fn plan_text(&self) -> String {
        self.plan
            .iter()
            .enumerate()
            .map(|(i, s)| format!("{}. {s}", i + 1))
            .collect::<Vec<_>>()
            .join("\n")
    }

    /// The ledger for the console: one line per group of facts, then the
    /// plan.
    pub(crate) fn summary(&self) -> String {
        let join = |v: &[String]| {
            if v.is_empty() {
                "(none)".to_string()
            } else {
                v.join("; ")
            }
        };
        format!(
            "facts given: {}\nto look up: {}\nto derive: {}\neducated guesses: {}\nplan:\n{}",
            join(&self.facts_given),
            join(&self.facts_to_look_up),
            join(&self.facts_to_derive),
            join(&self.educated_guesses),
            self.plan_text()
                .lines()
                .map(|l| format!("  {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        )
    }

    /// The plan a user wrote: one step a non-empty line, list marks
    /// (`1.`, `2)`, `-`, `*`) left out.
    pub(crate) fn plan_from_text(text: &str) -> Vec<String> {
        text.lines()
            .map(|l| {
                let l = l.trim();
                let l = l.trim_start_matches(['-', '*', '•']);
                let digits = l.len() - l.trim_start_matches(|c: char| c.is_ascii_digit()).len();
                let l = if digits > 0 {
                    l[digits..].trim_start_matches(['.', ')', ':'])
                } else {
                    l
                };
                l.trim().to_string()
            })
            .filter(|l| !l.is_empty())
            .collect()
    }
}

impl ProgressLedger {
    /// The ledger for the console, with the manager's counters.
    pub(crate) fn summary(&self, counters: &str) -> String {
        let yes = |b: bool| if b { "yes" } else { "no" };
        let next = if self.is_request_satisfied.answer {
            "nobody: the manager writes the final answer".to_string()
        } else {
            format!(
                "{} — {}",
                self.next_speaker.answer, self.instruction_or_question.answer
            )
        };
        format!(
            "satisfied: {} — {}\nin a loop: {} — {}\nprogress: {} — {}\nnext: {next}\n{counters}",
            yes(self.is_request_satisfied.answer),
            self.is_request_satisfied.reason,
            yes(self.is_in_loop.answer),
            self.is_in_loop.reason,
            yes(self.is_progress_being_made.answer),
            self.is_progress_being_made.reason,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_agents::StructuredOutput;

    #[test]
    fn the_schemas_are_strict_and_read_back_as_the_types() {
        let task = StructuredOutput::named("task_ledger", task_ledger_schema()).unwrap();
        let json = r#"{"facts_given":["a"],"facts_to_look_up":[],"facts_to_derive":[],"educated_guesses":[],"plan":["x","y"]}"#;
        let ok = task.parse(json).unwrap();
        let ledger: TaskLedger = serde_json::from_str(&ok).unwrap();
        assert_eq!(ledger.plan_text(), "1. x\n2. y");
        assert!(task.parse(r#"{"plan":["x"]}"#).is_err());
        let progress = StructuredOutput::named("progress", progress_ledger_schema()).unwrap();
        assert!(matches!(
            progress.response_format(),
            troupe_agents::model::ResponseFormat::JsonSchema { strict: true, .. }
        ));
    }

    #[test]
    fn a_user_plan_drops_its_list_marks() {
        assert_eq!(
            TaskLedger::plan_from_text("1. look it up\n\n2) write it\n- check it\n* ship"),
            ["look it up", "write it", "check it", "ship"]
        );
    }
}
