//! A run's checkpoints as deltas (format 5 on; format 6 names the
//! messages waiting in inboxes by place, see [`IdRef`]): the [`DeltaWriter`] a run
//! keeps remembers, per thread of its tree, how far it was written, so a
//! checkpoint costs what changed since the last one — never a walk over
//! every message. [`restore`] turns a folded chain back into a
//! [`Snapshot`].

use std::collections::HashSet;
use std::sync::Arc;
use std::time::SystemTime;

#[cfg(test)]
use super::delta::ThreadOp;
use super::delta::{Runs, ThreadPath};
use super::record::{DELTA_TAG, FULL_TAG};
use super::snapshot_refs::{
    HeadRef, IdsOf, OpRef, PathAt, PathRef, PayloadRef, StateAt, StateRef, StatsRef, WithPaths,
};
use crate::checkpoint::codec::CodecError;
use crate::message::{IdHash, Message, MessageId};
use crate::resumable::status::RunStatus;
use crate::stop::TrackerState;
use crate::thread::Thread;

/// A thread tree as it stands, without putting it together: the run
/// thread's own messages, its workflow state and its children.
pub(crate) struct TreeView<'a> {
    /// The run thread's messages.
    pub(crate) messages: &'a [Arc<Message>],
    /// Its workflow state.
    pub(crate) state: Option<StateRef<'a>>,
    /// Its children by name, in name order.
    pub(crate) children: Vec<(&'a str, &'a Thread)>,
}

impl<'a> TreeView<'a> {
    /// The view of a thread already put together.
    pub(crate) fn of(thread: &'a Thread) -> Self {
        TreeView {
            messages: thread.messages(),
            state: thread.state().map(StateRef::Whole),
            children: thread
                .children()
                .iter()
                .map(|(n, t)| (n.as_str(), &**t))
                .collect(),
        }
    }
}

/// What a checkpoint holds besides the thread tree (a [`Snapshot`]
/// without its thread).
pub(crate) struct Counters<'a> {
    pub(crate) stop: Option<TrackerState>,
    pub(crate) stats: StatsRef<'a>,
    pub(crate) turns: u64,
    pub(crate) last: Option<MessageId>,
    pub(crate) start_len: usize,
    pub(crate) started_at: SystemTime,
    pub(crate) status: Option<RunStatus>,
}

/// How far a thread was written: its length and last message then.
#[derive(Debug, Clone, Copy)]
struct Written {
    len: usize,
    last: Option<MessageId>,
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
    /// How far each thread was written, in the order the last checkpoint
    /// walked the tree (so the next finds each where it looks first).
    written: Vec<(ThreadPath, Written)>,
    stored: HashSet<MessageId, IdHash>,
    has_base: bool,
    /// The size of the last whole payload.
    base_len: usize,
    /// The sizes of the delta payloads since, added up.
    since_base: usize,
    /// The size of the last payload (the next one's first guess).
    last_len: usize,
    /// The small state's bytes, reused from one checkpoint to the next.
    head: Vec<u8>,
    /// A thread operation's ids as runs, likewise.
    runs: Runs,
}

/// How many of the run thread's last messages a message is looked for
/// among before the writer's set of stored messages (see
/// [`DeltaWriter::is_new`]).
const TAIL: usize = 16;

/// One checkpoint's payload as it is being made.
struct Out<'a> {
    messages: Vec<&'a Message>,
    /// Each thread's operation, the thread named by its place in `written`.
    threads: Vec<(PathAt, OpRef<'a>)>,
    /// Each thread's workflow state, likewise.
    states: Vec<(PathAt, StateAt<'a>)>,
    /// The run thread's last messages, once it is written: all stored.
    tail: &'a [Arc<Message>],
    /// What the last checkpoint wrote of the threads not walked yet.
    before: Vec<Option<(ThreadPath, Written)>>,
    /// Where the next thread is looked for first in `before`.
    next: usize,
    /// What this checkpoint wrote, in walk order.
    written: Vec<(ThreadPath, Written)>,
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
        counters: &Counters<'_>,
    ) -> Result<(Vec<u8>, bool), CodecError> {
        let delta = self.has_base && self.since_base < self.base_len.saturating_mul(COMPACT_FACTOR);
        if !delta {
            self.written.clear();
            self.stored.clear();
        }
        let before = std::mem::take(&mut self.written);
        let threads = before.len().max(1 + tree.children.len());
        let mut out = Out {
            messages: Vec::new(),
            threads: Vec::with_capacity(threads),
            states: Vec::new(),
            tail: &[],
            written: Vec::with_capacity(threads),
            before: before.into_iter().map(Some).collect(),
            next: 0,
        };
        let mut path: PathRef<'_> = Vec::new();
        self.node(&path, tree.messages, tree.state, &mut out);
        out.tail = &tree.messages[tree.messages.len().saturating_sub(TAIL)..];
        for (name, child) in &tree.children {
            path.push(name);
            self.walk(&mut path, child, &mut out);
            path.pop();
        }
        // Threads written before and not walked now are gone.
        for (p, _) in out.before.into_iter().flatten() {
            out.threads.push((PathAt::Gone(p), OpRef::Remove));
        }
        self.written = out.written;
        let head = HeadRef {
            states: WithPaths {
                items: &out.states,
                walked: &self.written,
            },
            stop: &counters.stop,
            stats: &counters.stats,
            turns: counters.turns,
            last: counters.last,
            start_len: counters.start_len as u64,
            started_at_ns: nanos_since_epoch(counters.started_at),
            status: &counters.status,
        };
        self.head.clear();
        head.write(&mut self.head)?;
        let mut bytes = Vec::with_capacity(self.last_len + self.last_len / 4 + 64);
        bytes.push(if delta { DELTA_TAG } else { FULL_TAG });
        PayloadRef {
            messages: &out.messages,
            threads: WithPaths {
                items: &out.threads,
                walked: &self.written,
            },
            head: &self.head,
        }
        .write(&mut bytes, &mut self.runs)?;
        self.has_base = true;
        self.last_len = bytes.len();
        if delta {
            self.since_base += bytes.len();
        } else {
            self.base_len = bytes.len();
            self.since_base = 0;
        }
        Ok((bytes, delta))
    }

    /// Writes `thread` at `path` and its children below it.
    fn walk<'a>(&mut self, path: &mut PathRef<'a>, thread: &'a Thread, out: &mut Out<'a>) {
        self.node(
            path,
            thread.messages(),
            thread.state().map(StateRef::Whole),
            out,
        );
        for (name, child) in thread.children() {
            path.push(name.as_str());
            self.walk(path, child, out);
            path.pop();
        }
    }

    /// Writes one thread's messages and state (not its children).
    fn node<'a>(
        &mut self,
        path: &PathRef<'a>,
        messages: &'a [Arc<Message>],
        state: Option<StateRef<'a>>,
        out: &mut Out<'a>,
    ) {
        let len = messages.len();
        let last = messages.last().map(|m| m.id);
        let (key, op) = match out.take_written(path) {
            Some((key, w)) => {
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
                (key, op)
            }
            None => (
                path.iter().map(|n| n.to_string()).collect(),
                Some((0, true)),
            ),
        };
        let at = out.written.len();
        out.written.push((key, Written { len, last }));
        if let Some((from, replace)) = op {
            let new = &messages[from..];
            // A long run of messages (a whole thread) is mostly old: looked
            // up in the set directly.
            let tail = if new.len() <= TAIL { out.tail } else { &[] };
            for m in new {
                if self.is_new(m, tail) {
                    out.messages.push(m);
                }
            }
            let ids = IdsOf(new);
            let op = if replace {
                OpRef::Replace(ids)
            } else {
                OpRef::Append(ids)
            };
            out.threads.push((PathAt::Walked(at), op));
        }
        if let Some(state) = state {
            // This thread's messages are all stored now: its inboxes hold
            // mostly its last ones.
            let own_tail = &messages[len.saturating_sub(TAIL)..];
            for m in state.waiting() {
                if self.is_new(m, own_tail) {
                    out.messages.push(m);
                }
            }
            out.states.push((
                PathAt::Walked(at),
                StateAt {
                    state,
                    thread: messages,
                },
            ));
        }
    }

    /// Whether `m` is not stored in the chain yet (and is from now on).
    ///
    /// A message among `tail`, the last messages of a thread written
    /// already (the run thread's, or the thread whose inboxes these are),
    /// was written with it: known stored without a look in the set. A
    /// message a turn has just added reaches the run thread and, routed,
    /// the threads and inboxes of the participants — so most of a
    /// checkpoint's messages are found there, a few compares each.
    /// The same message shared, not a copy: compared by pointer (a copy
    /// is looked up in the set).
    #[inline]
    fn is_new(&mut self, m: &Arc<Message>, tail: &[Arc<Message>]) -> bool {
        if tail.iter().rev().any(|t| Arc::ptr_eq(t, m)) {
            return false;
        }
        self.stored.insert(m.id)
    }
}

impl Out<'_> {
    /// What the last checkpoint wrote of the thread at `path`, taken out:
    /// looked for where the walk expects it, then everywhere.
    fn take_written(&mut self, path: &[&str]) -> Option<(ThreadPath, Written)> {
        let same = |entry: &Option<(ThreadPath, Written)>| {
            entry.as_ref().is_some_and(|(p, _)| {
                p.len() == path.len() && p.iter().zip(path).all(|(a, b)| a == b)
            })
        };
        let at = if self.before.get(self.next).is_some_and(same) {
            self.next
        } else {
            self.before.iter().position(same)?
        };
        self.next = at + 1;
        self.before[at].take()
    }
}

fn nanos_since_epoch(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::checkpoint::codec;
    use crate::checkpoint::delta::{ChainPayload, Folded};
    use crate::stats::RunStats;
    use crate::thread::WorkflowState;

    fn counters(stats: &RunStats) -> Counters<'_> {
        Counters {
            stop: None,
            stats: StatsRef::of(stats),
            turns: 3,
            last: None,
            start_len: 1,
            started_at: SystemTime::UNIX_EPOCH + Duration::from_secs(7),
            status: None,
        }
    }

    /// The writer's borrowed payloads are the bytes `ChainPayload` writes
    /// for what they hold, whole, appended to,
    /// replaced and with a thread gone.
    #[test]
    fn borrowed_payloads_are_chain_payload_bytes() {
        let mut t = Thread::from_messages([Message::user("task"), Message::text("a", "one")]);
        let waiting = Arc::new(Message::text("b", "queued"));
        // One inbox's message is in the thread (named by place), one is
        // not (by id).
        let task = t.messages()[0].clone();
        *t.state_mut() = Some(WorkflowState {
            consumed: 2,
            pending: [("b".to_string(), vec![task, waiting.clone()])].into(),
            ..WorkflowState::default()
        });
        let said = |text: &str| Box::new(Thread::from_messages([Message::user(text)]));
        let kids = t.children_mut();
        kids.insert("a".into(), said("x"));
        kids.insert("b".into(), said("y"));
        let b = kids.get_mut("b").unwrap();
        b.children_mut().insert("inner".into(), said("z"));
        let mut writer = DeltaWriter::default();
        let same_bytes = |bytes: &[u8], delta: bool| {
            let (d, payload) = ChainPayload::decode(bytes, codec::FORMAT_VERSION).unwrap();
            assert_eq!(d, delta);
            assert_eq!(payload.encode(delta, codec::FORMAT_VERSION).unwrap(), bytes);
            payload
        };
        let (first, delta) = writer
            .encode(&TreeView::of(&t), &counters(&RunStats::default()))
            .unwrap();
        let p = same_bytes(&first, delta);
        assert!(!delta);
        assert_eq!(p.threads.len(), 4);
        assert_eq!(p.messages.len(), 6);

        t.push(Message::text("b", "two"));
        t.children_mut()
            .get_mut("a")
            .unwrap()
            .push(Message::text("a", "more"));
        // "b" replaced by another thread; "inner" gone with it.
        t.children_mut().insert(
            "b".into(),
            Box::new(Thread::from_messages([Message::user("new")])),
        );
        let (second, delta) = writer
            .encode(&TreeView::of(&t), &counters(&RunStats::default()))
            .unwrap();
        let p = same_bytes(&second, delta);
        assert!(delta);
        let ops: Vec<(String, &str, usize)> = p
            .threads
            .iter()
            .map(|(path, op)| match op {
                ThreadOp::Append(ids) => (path.join("/"), "append", ids.len()),
                ThreadOp::Replace(ids) => (path.join("/"), "replace", ids.len()),
                ThreadOp::Remove => (path.join("/"), "remove", 0),
            })
            .collect();
        let want = [
            ("", "append", 1),
            ("a", "append", 1),
            ("b", "replace", 1),
            ("b/inner", "remove", 0),
        ];
        let want: Vec<(String, &str, usize)> = want
            .iter()
            .map(|(p, k, n)| (p.to_string(), *k, *n))
            .collect();
        assert_eq!(ops, want);
        assert_eq!(
            p.messages.len(),
            3,
            "the queued message is not stored twice"
        );

        let mut folded = Folded::default();
        for bytes in [&first, &second] {
            let (d, payload) = ChainPayload::decode(bytes, codec::FORMAT_VERSION).unwrap();
            folded.apply(d, payload);
        }
        let back =
            crate::checkpoint::snapshot_restore::restore(&folded, codec::FORMAT_VERSION).unwrap();
        assert_eq!(back.thread, t);
    }
}
