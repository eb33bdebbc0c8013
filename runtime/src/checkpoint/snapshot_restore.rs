//! A folded chain of checkpoints read back into the [`Snapshot`] it
//! holds ([`restore`]): the thread tree from the chain's id lists, the
//! small state from the last checkpoint's, by the format it was written
//! in (inbox contents by id up to format 5, by [`IdRef`] from 6 on).

use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::Deserialize;

use super::delta::{Folded, ID_RUNS_VERSION, ThreadPath};
use super::snapshot_refs::IdRef;
use super::snapshot_value::Snapshot;
use crate::checkpoint::codec;
use crate::message::{Message, MessageId};
use crate::resumable::scheduler_state::SchedulerState;
use crate::resumable::status::RunStatus;
use crate::stats::RunStats;
use crate::stop::TrackerState;
use crate::thread::{Thread, WorkflowState};

/// [`HeadRef`] read back, each inbox's messages as `I`: ids up to format
/// 5, [`IdRef`]s from format 6 on.
#[derive(Deserialize)]
#[serde(bound(deserialize = "I: Deserialize<'de>"))]
struct Head<I> {
    states: Vec<(ThreadPath, StoredState<I>)>,
    stop: Option<TrackerState>,
    stats: RunStats,
    turns: u64,
    last: Option<MessageId>,
    start_len: u64,
    started_at_ns: u64,
    status: Option<RunStatus>,
}

/// [`StateAt`] read back.
#[derive(Deserialize)]
#[serde(bound(deserialize = "I: Deserialize<'de>"))]
struct StoredState<I> {
    consumed: u64,
    pending: Vec<(String, Vec<I>)>,
    turns: u64,
    last_speaker: Option<String>,
    scheduler: SchedulerState,
}

/// Looks a message up by id in the chain.
type ById<'a> = &'a dyn Fn(&MessageId) -> Result<Arc<Message>, String>;

/// An inbox's message as a small state names it.
trait Waiting: for<'de> Deserialize<'de> {
    /// The message, from the messages of the thread whose state names it
    /// (`thread`) or the chain's (`by_id`).
    fn find(&self, thread: &[Arc<Message>], by_id: ById<'_>) -> Result<Arc<Message>, String>;
}

impl Waiting for MessageId {
    fn find(&self, _: &[Arc<Message>], by_id: ById<'_>) -> Result<Arc<Message>, String> {
        by_id(self)
    }
}

impl Waiting for IdRef {
    fn find(&self, thread: &[Arc<Message>], by_id: ById<'_>) -> Result<Arc<Message>, String> {
        match self {
            IdRef::Id(id) => by_id(id),
            IdRef::Back(back) => usize::try_from(*back)
                .ok()
                .and_then(|b| thread.len().checked_sub(b.checked_add(1)?))
                .and_then(|i| thread.get(i))
                .cloned()
                .ok_or_else(|| {
                    format!(
                        "an inbox names the message {back} before the last of a thread of {}",
                        thread.len()
                    )
                }),
        }
    }
}

/// The [`Snapshot`] a folded chain holds, its small state written by
/// format `version` (the chain's last checkpoint's); an error says what
/// is missing or damaged.
pub(crate) fn restore(folded: &Folded, version: u32) -> Result<Snapshot, String> {
    if version >= ID_RUNS_VERSION {
        restore_as::<IdRef>(folded)
    } else {
        restore_as::<MessageId>(folded)
    }
}

fn restore_as<I: Waiting>(folded: &Folded) -> Result<Snapshot, String> {
    let head: Head<I> = codec::decode(&folded.head).map_err(|e| format!("small state: {e}"))?;
    let message = |id: &MessageId| {
        folded
            .message(id)
            .cloned()
            .ok_or_else(|| format!("message {id} is not stored in the chain"))
    };
    // Paths sort parents first: put children in from the deepest up.
    let mut threads: Vec<(ThreadPath, Thread)> = Vec::with_capacity(folded.threads.len());
    for (path, ids) in &folded.threads {
        let mut t = Thread::with_capacity(ids.len());
        for id in ids {
            t.push_shared(message(id)?);
        }
        threads.push((path.clone(), t));
    }
    let mut root = None;
    while let Some((mut path, t)) = threads.pop() {
        let Some(name) = path.pop() else {
            root = Some(t);
            break;
        };
        let parent = threads
            .iter_mut()
            .rev()
            .find(|(p, _)| *p == path)
            .ok_or_else(|| format!("thread {path:?}/{name} has no parent thread"))?;
        parent.1.children_mut().insert(name, Box::new(t));
    }
    let mut root = root.ok_or("no run thread")?;
    for (path, st) in head.states {
        let mut t = &mut root;
        for name in &path {
            t = t
                .children_mut()
                .get_mut(name)
                .ok_or_else(|| format!("state of a missing thread {path:?}"))?;
        }
        let mut pending = std::collections::BTreeMap::new();
        for (name, ids) in st.pending {
            let waiting = ids
                .iter()
                .map(|w| w.find(t.messages(), &message))
                .collect::<Result<Vec<_>, _>>()?;
            pending.insert(name, waiting);
        }
        *t.state_mut() = Some(WorkflowState {
            consumed: usize::try_from(st.consumed).map_err(|e| e.to_string())?,
            pending,
            turns: st.turns,
            last_speaker: st.last_speaker,
            scheduler: st.scheduler,
        });
    }
    Ok(Snapshot {
        thread: root,
        stop: head.stop,
        stats: head.stats,
        turns: head.turns,
        last: head.last,
        start_len: usize::try_from(head.start_len).map_err(|e| e.to_string())?,
        started_at: SystemTime::UNIX_EPOCH + Duration::from_nanos(head.started_at_ns),
        status: head.status,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An inbox's message named by a place its thread does not have is
    /// damage, said so; one named by id is looked up in the chain.
    #[test]
    fn a_place_past_the_thread_is_refused() {
        let one = Arc::new(Message::user("one"));
        let thread = [one.clone()];
        let by_id = |id: &MessageId| {
            (*id == one.id)
                .then(|| one.clone())
                .ok_or_else(|| format!("message {id} is not stored"))
        };
        assert_eq!(IdRef::Back(0).find(&thread, &by_id).unwrap().id, one.id);
        assert_eq!(IdRef::Id(one.id).find(&[], &by_id).unwrap().id, one.id);
        for back in [1, u64::MAX] {
            let err = IdRef::Back(back).find(&thread, &by_id).unwrap_err();
            assert!(err.contains("before the last of a thread of 1"), "{err}");
        }
        assert!(IdRef::Id(MessageId(9)).find(&thread, &by_id).is_err());
    }
}
