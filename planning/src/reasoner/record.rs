//! What a reasoner's turn keeps in its thread while it runs: one record
//! message per step of its loop (a branch's action, an answer, a batch's
//! results), and the running batch's thread as a child. Reported as the
//! turn's progress, so a turn cut short goes on from its last record
//! without asking a finished reasoner turn again.

use std::sync::Arc;

use serde::{Deserialize, Serialize};
use troupe_runtime::{Message, RunContext, Thread};

use super::actions::ActionResult;
use super::answer::ReasonerAnswer;

/// Metadata key of a record message (its JSON).
pub(crate) const RECORD_KEY: &str = "troupe.reasoner.record";

/// The child of the turn's thread holding the running batch's run.
pub(crate) const BATCH_RUN: &str = "troupe.reasoner#batch";

/// One step of the loop.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(crate) enum Record {
    /// A branched copy's action ran (before its own loop).
    Action { result: ActionResult },
    /// A reasoner turn answered.
    Answer { answer: ReasonerAnswer },
    /// A batch of actions ran.
    Results { results: Vec<ActionResult> },
    /// A batch was stopped by the stop condition: the loop ends.
    Stopped { reason: String },
}

/// The turn's thread taken apart: the thread before the loop, its
/// records, and the batch's run if one was under way.
pub(crate) struct Split {
    pub(crate) own: Thread,
    pub(crate) records: Vec<Record>,
    pub(crate) batch: Option<Thread>,
    /// Whether the thread held progress (the turn goes on from it).
    pub(crate) resumed: bool,
}

/// Takes `thread` apart (see [`Split`]).
pub(crate) fn split(thread: &Thread) -> Split {
    let messages = thread.messages();
    let start = messages
        .iter()
        .rposition(|m| !m.metadata.contains_key(RECORD_KEY))
        .map_or(0, |i| i + 1);
    let records: Vec<Record> = messages[start..]
        .iter()
        .filter_map(|m| serde_json::from_str(m.metadata.get(RECORD_KEY)?).ok())
        .collect();
    let batch = thread.child(BATCH_RUN).cloned();
    let resumed = !records.is_empty() || batch.is_some();
    let mut own = Thread::new();
    own.extend_shared(messages[..start].iter().cloned());
    *own.children_mut() = thread.children().clone();
    own.children_mut().remove(BATCH_RUN);
    *own.state_mut() = thread.state().cloned();
    Split {
        own,
        records,
        batch,
        resumed,
    }
}

/// The turn's thread: `own`, then the records, then the batch's run.
pub(crate) fn progress(own: &Thread, records: &[Record], source: &str) -> Thread {
    let mut t = own.clone();
    for r in records {
        let text = match r {
            Record::Action { result } => format!("{}: {}", result.id, result.result),
            Record::Answer { answer } => answer.response.clone(),
            Record::Results { results } => super::actions::render_results(results),
            Record::Stopped { reason } => format!("stopped: {reason}"),
        };
        let json = serde_json::to_string(r).unwrap_or_default();
        t.push(Message::text(source, text).with_metadata(RECORD_KEY, json));
    }
    t
}

/// Reports the loop's progress as the turn's (nothing when the run above
/// does not checkpoint).
pub(crate) fn report(lent: &Arc<Thread>, ctx: &RunContext, thread: Thread) {
    if let Some(relay) = ctx.relay_progress(lent, |t| t) {
        relay.report(thread);
    }
}
