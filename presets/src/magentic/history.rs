//! The Magentic manager's memory is its thread: its ledgers are private
//! messages there (never routed), tagged with metadata, beside the team's
//! conversation. This file reads the manager's state back out of it — the
//! task, the current ledger, the stall and reset counters, an open
//! question — so a checkpointed run resumes, and a finished one continues,
//! exactly where it was.

use std::sync::Arc;

use troupe_agents::ChatMessage;
use troupe_runtime::{Message, Thread};

use super::ledger::TaskLedger;

/// What a message of the manager is (metadata key).
pub(crate) const KIND: &str = "troupe.magentic";
/// Resets before a task ledger (metadata key).
pub(crate) const RESETS: &str = "troupe.magentic.resets";
/// Stalls counted after a progress ledger (metadata key).
pub(crate) const STALLS: &str = "troupe.magentic.stalls";
/// The round a progress ledger checks, from 1 (metadata key).
pub(crate) const ROUND: &str = "troupe.magentic.round";
/// On a task ledger the user wrote in plan review: `user`.
pub(crate) const BY: &str = "troupe.magentic.by";
/// On a rejected answer: what the model was told about it.
pub(crate) const CORRECTION: &str = "troupe.magentic.correction";
/// On a rejected answer: the kind of answer asked for.
pub(crate) const FOR: &str = "troupe.magentic.for";
/// On the final answer: how the task ended.
pub(crate) const OUTCOME: &str = "troupe.magentic.outcome";
/// On an instruction: whom it is for.
pub(crate) const TO: &str = "troupe.magentic.to";
/// The metadata key the runtime puts on the caller's answer to a question.
const ANSWER_KEY: &str = "troupe.request";

/// What a message of the manager is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// Private: a task ledger (JSON).
    TaskLedger,
    /// Private: a progress ledger (JSON).
    ProgressLedger,
    /// Private: an answer of the model that was not valid.
    Rejected,
    /// Private: the manager asked the user to review the plan.
    AskedReview,
    /// Private: the manager asked the user a question.
    AskedQuestion,
    /// Public: the task ledger as the team is told it.
    Plan,
    /// Public: the next speaker's instruction.
    Instruction,
    /// Public: the user's answer to a question, passed on to the team.
    UserAnswer,
    /// Public: the manager's final answer.
    FinalAnswer,
}

impl Kind {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Kind::TaskLedger => "task_ledger",
            Kind::ProgressLedger => "progress_ledger",
            Kind::Rejected => "rejected",
            Kind::AskedReview => "asked_plan_review",
            Kind::AskedQuestion => "asked_question",
            Kind::Plan => "plan",
            Kind::Instruction => "instruction",
            Kind::UserAnswer => "user_answer",
            Kind::FinalAnswer => "final_answer",
        }
    }

    fn parse(s: &str) -> Option<Kind> {
        [
            Kind::TaskLedger,
            Kind::ProgressLedger,
            Kind::Rejected,
            Kind::AskedReview,
            Kind::AskedQuestion,
            Kind::Plan,
            Kind::Instruction,
            Kind::UserAnswer,
            Kind::FinalAnswer,
        ]
        .into_iter()
        .find(|k| k.as_str() == s)
    }

    /// Whether the team sees it.
    pub(crate) fn is_public(self) -> bool {
        matches!(
            self,
            Kind::Plan | Kind::Instruction | Kind::UserAnswer | Kind::FinalAnswer
        )
    }

    /// What the model was asked for, in a later request's short form.
    fn label(self) -> &'static str {
        match self {
            Kind::TaskLedger => "Write the task ledger (facts and plan) as JSON.",
            Kind::ProgressLedger => "Write the progress ledger as JSON.",
            Kind::FinalAnswer => "Write the final answer.",
            _ => "Go on.",
        }
    }
}

/// The kind of a message of `me`, if it is one of the manager's.
pub(crate) fn kind_of(me: &str, m: &Message) -> Option<Kind> {
    if &*m.source != me {
        return None;
    }
    m.metadata.get(KIND).and_then(|k| Kind::parse(k))
}

/// A number kept in a message's metadata (0 when absent).
pub(crate) fn count(m: &Message, key: &str) -> u32 {
    m.metadata
        .get(key)
        .and_then(|v| v.parse().ok())
        .unwrap_or(0)
}

/// Whether the model wrote `m` (so a later request shows it as the
/// assistant's): ledgers (not one the user edited), rejected answers, the
/// final answer.
fn is_model_output(kind: Kind, m: &Message) -> bool {
    match kind {
        // One the user edited, or one the manager fell back on after
        // rejecting every answer (kept above it), is not an answer.
        Kind::TaskLedger | Kind::ProgressLedger => !m.metadata.contains_key(BY),
        Kind::Rejected | Kind::FinalAnswer => true,
        _ => false,
    }
}

/// The manager's earlier exchanges with its model, as chat messages: each
/// answer it gave (after a short form of what it was asked), each rejected
/// answer followed by what it was told. So a request's assistant turns are
/// exactly the model's earlier answers, and a model scripted by the
/// conversation (`ScriptPosition::Conversation`) answers a resumed run as it
/// answered the uninterrupted one.
pub(crate) fn exchanges<'m>(
    me: &str,
    outputs: impl IntoIterator<Item = &'m Message>,
) -> Vec<ChatMessage> {
    let mut out = Vec::new();
    let mut after_rejected = false;
    for m in outputs {
        let Some(kind) = kind_of(me, m).filter(|k| is_model_output(*k, m)) else {
            continue;
        };
        if !after_rejected {
            let asked = match kind {
                Kind::Rejected => m
                    .metadata
                    .get(FOR)
                    .and_then(|f| Kind::parse(f))
                    .unwrap_or(Kind::Rejected),
                k => k,
            };
            out.push(ChatMessage::user(asked.label()));
        }
        out.push(ChatMessage::assistant(m.text_content().into_owned()));
        after_rejected = kind == Kind::Rejected;
        if after_rejected {
            let told = m.metadata.get(CORRECTION).cloned().unwrap_or_default();
            out.push(ChatMessage::user(told));
        }
    }
    out
}

/// What the manager reads out of its thread at the start of a turn.
pub(crate) struct View<'t> {
    /// Every message of the thread.
    pub(crate) all: &'t [Arc<Message>],
    /// The messages of the current task: those after the last final
    /// answer.
    pub(crate) current: &'t [Arc<Message>],
    /// The request: the input before the manager's first word on it.
    pub(crate) task: String,
    /// The latest task ledger of the task and the resets before it.
    pub(crate) ledger: Option<(TaskLedger, u32)>,
    /// Stalls counted by the latest progress ledger since that task ledger.
    pub(crate) stalls: u32,
    /// Progress ledgers written for the task.
    pub(crate) rounds: u32,
    /// The question the last message answers, and the answer.
    pub(crate) answered: Option<(Kind, String, String)>,
}

impl<'t> View<'t> {
    /// Reads `thread` as manager `me` sees it.
    pub(crate) fn of(thread: &'t Thread, me: &str) -> Self {
        let all = thread.messages();
        let start = all
            .iter()
            .rposition(|m| kind_of(me, m) == Some(Kind::FinalAnswer))
            .map_or(0, |i| i + 1);
        let current = &all[start..];
        let task = current
            .iter()
            .take_while(|m| &*m.source != me)
            .filter(|m| !m.metadata.contains_key(ANSWER_KEY))
            .map(|m| m.text_content().into_owned())
            .collect::<Vec<_>>()
            .join("\n\n");
        let mut ledger = None;
        let mut stalls = 0;
        let mut rounds = 0;
        for m in current {
            match kind_of(me, m) {
                Some(Kind::TaskLedger) => {
                    if let Ok(l) = serde_json::from_str::<TaskLedger>(&m.text_content()) {
                        ledger = Some((l, count(m, RESETS)));
                        stalls = 0;
                    }
                }
                Some(Kind::ProgressLedger) => {
                    rounds += 1;
                    stalls = count(m, STALLS);
                }
                _ => {}
            }
        }
        let answered = current
            .last()
            .filter(|m| m.metadata.contains_key(ANSWER_KEY))
            .and_then(|answer| {
                // The manager's last private message: a question, if it asked.
                let (kind, question) = current.iter().rev().find_map(|m| {
                    let k = kind_of(me, m).filter(|k| !k.is_public())?;
                    Some((k, m.text_content().into_owned()))
                })?;
                matches!(kind, Kind::AskedReview | Kind::AskedQuestion)
                    .then(|| (kind, question, answer.text_content().into_owned()))
            });
        View {
            all,
            current,
            task,
            ledger,
            stalls,
            rounds,
            answered,
        }
    }

    /// The task's conversation as the manager's prompts show it: who said
    /// what, the manager's ledgers and the raw answers to its questions
    /// left out (the team was told those).
    pub(crate) fn history(&self, me: &str, new: &[Message]) -> String {
        self.current
            .iter()
            .map(|m| &**m)
            .chain(new.iter())
            .filter(|m| !m.metadata.contains_key(ANSWER_KEY))
            .filter(|m| kind_of(me, m).is_none_or(Kind::is_public))
            .map(|m| format!("{}: {}", m.source, m.text_content()))
            .collect::<Vec<_>>()
            .join("\n\n")
    }
}
