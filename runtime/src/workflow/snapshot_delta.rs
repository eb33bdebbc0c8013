//! A run's checkpoints as deltas (format 5): the [`DeltaWriter`] a run
//! keeps remembers, per thread of its tree, how far it was written, so a
//! checkpoint costs what changed since the last one — never a walk over
//! every message. [`restore`] turns a folded chain back into a
//! [`Snapshot`].

use std::collections::{HashMap, HashSet};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use serde::{Deserialize, Serialize};

use super::result::RunStatus;
use super::scheduler_state::SchedulerState;
use super::snapshot_value::Snapshot;
use crate::codec::{self, CodecError};
use crate::message::{IdHash, Message, MessageId};
use crate::stats::RunStats;
use crate::stop::TrackerState;
use crate::store::{ChainPayload, Folded, ThreadOp, ThreadPath};
use crate::thread::{Thread, WorkflowState};

/// A thread tree as it stands, without putting it together: the run
/// thread's own messages, its workflow state and its children.
pub(crate) struct TreeView<'a> {
    /// The run thread's messages.
    pub(crate) messages: &'a [Arc<Message>],
    /// Its workflow state.
    pub(crate) state: Option<&'a WorkflowState>,
    /// Its children by name, in name order.
    pub(crate) children: Vec<(&'a str, &'a Thread)>,
}

impl<'a> TreeView<'a> {
    /// The view of a thread already put together.
    pub(crate) fn of(thread: &'a Thread) -> Self {
        TreeView {
            messages: thread.messages(),
            state: thread.state(),
            children: thread
                .children()
                .iter()
                .map(|(n, t)| (n.as_str(), t))
                .collect(),
        }
    }
}

/// What a checkpoint holds besides the thread tree (a [`Snapshot`]
/// without its thread).
#[derive(Debug, Clone)]
pub(crate) struct Counters {
    pub(crate) stop: Option<TrackerState>,
    pub(crate) stats: RunStats,
    pub(crate) turns: u64,
    pub(crate) last: Option<MessageId>,
    pub(crate) start_len: usize,
    pub(crate) started_at: SystemTime,
    pub(crate) status: Option<RunStatus>,
}

/// The small state, whole in every checkpoint: each thread's workflow
/// state (inbox contents by id) and the run's counters. Times are
/// nanoseconds since the epoch.
#[derive(Serialize)]
struct HeadRef<'a> {
    states: Vec<(ThreadPath, StateRef<'a>)>,
    stop: &'a Option<TrackerState>,
    stats: &'a RunStats,
    turns: u64,
    last: Option<MessageId>,
    start_len: u64,
    started_at_ns: u64,
    status: &'a Option<RunStatus>,
}

/// [`HeadRef`] read back.
#[derive(Deserialize)]
struct Head {
    states: Vec<(ThreadPath, StoredState)>,
    stop: Option<TrackerState>,
    stats: RunStats,
    turns: u64,
    last: Option<MessageId>,
    start_len: u64,
    started_at_ns: u64,
    status: Option<RunStatus>,
}

/// A [`WorkflowState`] with its inbox contents by id.
#[derive(Serialize)]
struct StateRef<'a> {
    consumed: u64,
    pending: Vec<(&'a str, Vec<MessageId>)>,
    turns: u64,
    last_speaker: &'a Option<String>,
    scheduler: &'a SchedulerState,
}

/// [`StateRef`] read back.
#[derive(Deserialize)]
struct StoredState {
    consumed: u64,
    pending: Vec<(String, Vec<MessageId>)>,
    turns: u64,
    last_speaker: Option<String>,
    scheduler: SchedulerState,
}

/// How far a thread was written: its length and last message then.
#[derive(Debug, Clone, Copy)]
struct Written {
    len: usize,
    last: Option<MessageId>,
    seen: u64,
}

/// How many times the size of the last whole checkpoint the deltas
/// written since may add up to before the next checkpoint is whole again.
///
/// The compaction of a chain, done by the writer: a load folds at most
/// that much after its base, and the whole checkpoints, each at most
/// `1 / COMPACT_FACTOR` of the deltas before it, add at most half to
/// what a run writes — geometric, so flat per superstep at any length.
const COMPACT_FACTOR: usize = 2;

/// What a run wrote in its checkpoints so far, to write the next as a
/// delta. Empty (a run's first checkpoint, or after a failed save), the
/// next checkpoint is whole; so is the one after deltas that outgrew
/// their base ([`COMPACT_FACTOR`]).
#[derive(Debug, Default)]
pub(crate) struct DeltaWriter {
    written: HashMap<ThreadPath, Written>,
    stored: HashSet<MessageId, IdHash>,
    round: u64,
    has_base: bool,
    /// The size of the last whole payload.
    base_len: usize,
    /// The sizes of the delta payloads since, added up.
    since_base: usize,
}

/// One checkpoint's payload as it is being made.
struct Out<'a> {
    messages: Vec<Arc<Message>>,
    threads: Vec<(ThreadPath, ThreadOp)>,
    states: Vec<(ThreadPath, StateRef<'a>)>,
}

impl DeltaWriter {
    /// Forgets what was written: the next checkpoint is whole.
    pub(crate) fn reset(&mut self) {
        *self = DeltaWriter::default();
    }

    /// The next checkpoint's payload for `tree` and `counters`, and
    /// whether it is a delta (against the last one encoded). Call
    /// [`DeltaWriter::reset`] if it is not saved.
    pub(crate) fn encode(
        &mut self,
        tree: &TreeView<'_>,
        counters: &Counters,
    ) -> Result<(Vec<u8>, bool), CodecError> {
        let delta = self.has_base && self.since_base < self.base_len.saturating_mul(COMPACT_FACTOR);
        if !delta {
            self.written.clear();
            self.stored.clear();
        }
        self.round += 1;
        let mut out = Out {
            messages: Vec::new(),
            threads: Vec::new(),
            states: Vec::new(),
        };
        let mut path = Vec::new();
        self.node(&path, tree.messages, tree.state, &mut out);
        for (name, child) in &tree.children {
            path.push((*name).to_string());
            self.walk(&mut path, child, &mut out);
            path.pop();
        }
        let round = self.round;
        let threads = &mut out.threads;
        self.written.retain(|p, w| {
            let keep = w.seen == round;
            if !keep {
                threads.push((p.clone(), ThreadOp::Remove));
            }
            keep
        });
        let head = HeadRef {
            states: out.states,
            stop: &counters.stop,
            stats: &counters.stats,
            turns: counters.turns,
            last: counters.last,
            start_len: counters.start_len as u64,
            started_at_ns: nanos_since_epoch(counters.started_at),
            status: &counters.status,
        };
        let payload = ChainPayload {
            messages: out.messages,
            threads: out.threads,
            head: codec::encode(&head)?,
        };
        let bytes = payload.encode(delta)?;
        self.has_base = true;
        if delta {
            self.since_base += bytes.len();
        } else {
            self.base_len = bytes.len();
            self.since_base = 0;
        }
        Ok((bytes, delta))
    }

    /// Writes `thread` at `path` and its children below it.
    fn walk<'a>(&mut self, path: &mut ThreadPath, thread: &'a Thread, out: &mut Out<'a>) {
        self.node(path, thread.messages(), thread.state(), out);
        for (name, child) in thread.children() {
            path.push(name.clone());
            self.walk(path, child, out);
            path.pop();
        }
    }

    /// Writes one thread's messages and state (not its children).
    fn node<'a>(
        &mut self,
        path: &ThreadPath,
        messages: &'a [Arc<Message>],
        state: Option<&'a WorkflowState>,
        out: &mut Out<'a>,
    ) {
        let len = messages.len();
        let last = messages.last().map(|m| m.id);
        let round = self.round;
        let op = match self.written.get_mut(path.as_slice()) {
            Some(w) => {
                w.seen = round;
                // Threads only grow: the same message where the last write
                // ended means the rest was appended.
                let appended =
                    len >= w.len && (w.len == 0 || messages.get(w.len - 1).map(|m| m.id) == w.last);
                let op = if !appended {
                    Some((0, true))
                } else if len > w.len {
                    Some((w.len, false))
                } else {
                    None
                };
                w.len = len;
                w.last = last;
                op
            }
            None => {
                self.written.insert(
                    path.clone(),
                    Written {
                        len,
                        last,
                        seen: round,
                    },
                );
                Some((0, true))
            }
        };
        if let Some((from, replace)) = op {
            let new = &messages[from..];
            for m in new {
                if self.stored.insert(m.id) {
                    out.messages.push(m.clone());
                }
            }
            let ids = new.iter().map(|m| m.id).collect();
            let op = if replace {
                ThreadOp::Replace(ids)
            } else {
                ThreadOp::Append(ids)
            };
            out.threads.push((path.clone(), op));
        }
        if let Some(state) = state {
            let mut pending = Vec::with_capacity(state.pending.len());
            for (name, waiting) in &state.pending {
                for m in waiting {
                    if self.stored.insert(m.id) {
                        out.messages.push(m.clone());
                    }
                }
                pending.push((name.as_str(), waiting.iter().map(|m| m.id).collect()));
            }
            out.states.push((
                path.clone(),
                StateRef {
                    consumed: state.consumed as u64,
                    pending,
                    turns: state.turns,
                    last_speaker: &state.last_speaker,
                    scheduler: &state.scheduler,
                },
            ));
        }
    }
}

fn nanos_since_epoch(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// The [`Snapshot`] a folded chain holds; an error says what is missing
/// or damaged.
pub(crate) fn restore(folded: &Folded) -> Result<Snapshot, String> {
    let head: Head = codec::decode(&folded.head).map_err(|e| format!("small state: {e}"))?;
    let message = |id: &MessageId| {
        folded
            .message(id)
            .cloned()
            .ok_or_else(|| format!("message {id} is not stored in the chain"))
    };
    // Paths sort parents first: put children in from the deepest up.
    let mut threads: Vec<(ThreadPath, Thread)> = Vec::with_capacity(folded.threads.len());
    for (path, ids) in &folded.threads {
        let mut t = Thread::new();
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
        parent.1.children_mut().insert(name, t);
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
            let waiting = ids.iter().map(message).collect::<Result<Vec<_>, _>>()?;
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
