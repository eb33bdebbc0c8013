//! What a checkpoint writes, as borrowed views: the bytes of a chained
//! payload (`store/delta.rs`) and of its small state, written straight
//! from the run's own state — no inbox, statistics or state copied into
//! a value first only to be serialized and dropped.
//!
//! Each view writes exactly what serializing the owned type it stands for
//! writes (a `StateAt` a `WorkflowState` with its inbox contents as
//! [`IdRef`]s, a `StatsRef` a `RunStats`, an `OpRef` a `ThreadOp`), the
//! hot parts by hand (`codec::raw`); `snapshot_oracle` (tests) and
//! `snapshot_delta`'s tests hold them to it.

use std::borrow::Borrow;
use std::ops::Range;
use std::sync::Arc;
use std::time::UNIX_EPOCH;

use serde::Deserialize;
#[cfg(test)]
use serde::Serialize;

use crate::checkpoint::codec::{self, CodecError, raw};
use crate::resumable::scheduler_state::SchedulerState;
use crate::resumable::status::RunStatus;
use std::collections::HashMap;

use super::delta::{Runs, ThreadPath, places};
use crate::message::{Content, IdHash, Message, MessageId};
use crate::stats::{AgentStats, RunStats};
use crate::stop::TrackerState;
use crate::thread::WorkflowState;

/// The messages a thread operation names (written as `IdRun`s, see
/// `store/delta.rs`).
pub(super) struct IdsOf<'a, T>(pub(super) &'a [T]);

/// A thread's path as the writer walks it: names borrowed from the tree.
pub(super) type PathRef<'a> = Vec<&'a str>;

/// A [`ThreadOp`](super::delta::ThreadOp) written from borrowed data: the same bytes.
pub(super) enum OpRef<'a> {
    Append(IdsOf<'a, Arc<Message>>),
    Replace(IdsOf<'a, Arc<Message>>),
    Remove,
}

/// Where the path of a thread to write is: that of the `n`th thread the
/// writer walked (kept in its list), or that of a thread gone since the
/// last checkpoint.
pub(super) enum PathAt {
    Walked(usize),
    Gone(ThreadPath),
}

/// Items, each with the path of its thread, written as a
/// `Vec<(ThreadPath, T)>` is; `walked` is the writer's list of the threads
/// it walked, by path.
pub(super) struct WithPaths<'r, T, W> {
    pub(super) items: &'r [(PathAt, T)],
    pub(super) walked: &'r [(ThreadPath, W)],
}

/// A [`ChainPayload`](super::delta::ChainPayload) written from borrowed data: the same bytes.
pub(super) struct PayloadRef<'r, 'a, W> {
    pub(super) messages: &'r [&'a Message],
    pub(super) threads: WithPaths<'r, OpRef<'a>, W>,
    /// The small state, written as one byte string.
    pub(super) head: &'r [u8],
}

impl<W> PayloadRef<'_, '_, W> {
    /// Appends what `ChainPayload::encode` writes in the current format
    /// for the payload it stands for, by hand: the messages (see [`write_message`]), the thread
    /// operations (their ids made into runs in `runs`, reused from one
    /// payload to the next) and the small state as one byte string.
    pub(super) fn write(&self, out: &mut Vec<u8>, runs: &mut Runs) -> Result<(), CodecError> {
        raw::len(out, self.messages.len());
        for m in self.messages {
            write_message(out, m)?;
        }
        raw::len(out, self.threads.items.len());
        let mut places = Places {
            messages: self.messages,
            next: 0,
            map: None,
        };
        for (at, op) in self.threads.items {
            write_path(out, at, self.threads.walked)?;
            // The variants' indices of `ThreadOp`, its ids as `IdRun`s.
            let (variant, ids) = match op {
                OpRef::Append(ids) => (0, ids.0),
                OpRef::Replace(ids) => (1, ids.0),
                OpRef::Remove => {
                    raw::variant(out, 2);
                    continue;
                }
            };
            raw::variant(out, variant);
            runs.clear();
            for m in ids {
                runs.push(m.id, places.of(m));
            }
            runs.write(out);
        }
        raw::bytes(out, self.head);
        Ok(())
    }
}

/// Where each of a payload's messages sits among them, for its threads'
/// `IdRun`s (`store/delta.rs`): the place after the last one found is
/// tried first (a thread names the payload's messages mostly in order), a
/// few messages are searched, many looked up in a map made once.
struct Places<'r, 'a> {
    messages: &'r [&'a Message],
    next: usize,
    map: Option<HashMap<MessageId, u64, IdHash>>,
}

/// Up to how many messages a payload's are searched rather than mapped.
const SEARCHED: usize = 16;

impl Places<'_, '_> {
    /// The place of `m` among the payload's messages, if it is one.
    fn of(&mut self, m: &Message) -> Option<u64> {
        let at = match self.messages.get(self.next) {
            Some(x) if x.id == m.id => Some(self.next),
            _ if self.messages.len() <= SEARCHED => self.messages.iter().position(|x| x.id == m.id),
            _ => {
                let messages = self.messages;
                let map = self
                    .map
                    .get_or_insert_with(|| places(messages.iter().map(|x| x.id)));
                map.get(&m.id).map(|&i| i as usize)
            }
        };
        self.next = at.map_or(0, |i| i + 1);
        at.map(|i| i as u64)
    }
}

/// A message, as serializing it writes it: a text message (nearly every
/// message a checkpoint stores) by hand, any other through serde.
pub(super) fn write_message(out: &mut Vec<u8>, m: &Message) -> Result<(), CodecError> {
    let (Content::Text(text), Ok(since)) = (&m.content, m.created_at.duration_since(UNIX_EPOCH))
    else {
        return codec::encode_into(m, out);
    };
    raw::u128(out, m.id.0);
    raw::str(out, &m.source);
    raw::variant(out, 0); // `Content::Text`
    raw::str(out, text);
    // `SystemTime`: seconds and nanoseconds since the epoch (a `u32`'s
    // varint is a `u64`'s of the same value).
    raw::u64(out, since.as_secs());
    raw::u64(out, u64::from(since.subsec_nanos()));
    raw::some(out, m.usage.is_some());
    if let Some(usage) = m.usage {
        raw::u64(out, usage.prompt_tokens);
        raw::u64(out, usage.completion_tokens);
    }
    raw::len(out, m.metadata.len());
    for (key, value) in &m.metadata {
        raw::str(out, key);
        raw::str(out, value);
    }
    Ok(())
}

/// The small state, whole in every checkpoint: each thread's workflow
/// state (inbox contents by id) and the run's counters. Times are
/// nanoseconds since the epoch.
#[cfg_attr(test, derive(Serialize))]
#[cfg_attr(test, serde(bound = ""))]
pub(super) struct HeadRef<'r, 'a, W> {
    pub(super) states: WithPaths<'r, StateAt<'a>, W>,
    pub(super) stop: &'r Option<TrackerState>,
    pub(super) stats: &'r StatsRef<'a>,
    pub(super) turns: u64,
    pub(super) last: Option<MessageId>,
    pub(super) start_len: u64,
    pub(super) started_at_ns: u64,
    pub(super) status: &'r Option<RunStatus>,
}

impl<W> HeadRef<'_, '_, W> {
    /// Appends the small state's bytes to `out`: what serializing it
    /// writes (`snapshot_oracle` holds it to it), written by hand
    /// (`codec::raw`) but for the rare and rich parts — a scheduler state
    /// with something in it, a status — which go through serde.
    pub(super) fn write(&self, out: &mut Vec<u8>) -> Result<(), CodecError> {
        raw::len(out, self.states.items.len());
        for (at, state) in self.states.items {
            write_path(out, at, self.states.walked)?;
            state.state.write(out, state.thread)?;
        }
        raw::some(out, self.stop.is_some());
        if let Some(stop) = self.stop {
            write_tracker_state(out, stop);
        }
        self.stats.write(out);
        raw::u64(out, self.turns);
        raw::some(out, self.last.is_some());
        if let Some(id) = self.last {
            raw::u128(out, id.0);
        }
        raw::u64(out, self.start_len);
        raw::u64(out, self.started_at_ns);
        match self.status {
            None => {
                raw::some(out, false);
                Ok(())
            }
            Some(_) => codec::encode_into(self.status, out),
        }
    }
}

/// A thread's path (a sequence of names).
fn write_path<W>(
    out: &mut Vec<u8>,
    at: &PathAt,
    walked: &[(ThreadPath, W)],
) -> Result<(), CodecError> {
    let path = match at {
        PathAt::Walked(n) => match walked.get(*n) {
            Some((path, _)) => path,
            None => {
                return Err(CodecError::Encode(
                    "a walked thread is not in the list".into(),
                ));
            }
        },
        PathAt::Gone(path) => path,
    };
    raw::len(out, path.len());
    for name in path {
        raw::str(out, name);
    }
    Ok(())
}

/// A thread's workflow state with the messages of its thread, which its
/// inbox contents are written against (see [`IdRef`]).
#[derive(Clone, Copy)]
pub(super) struct StateAt<'a> {
    pub(super) state: StateRef<'a>,
    pub(super) thread: &'a [Arc<Message>],
}

/// A message waiting in an inbox, in a small state from format 6 on: where
/// it sits in the thread whose state it is, counted back from that
/// thread's last message (`Back(0)` is the last), or its id when it is not
/// among the thread's last [`REF_WINDOW`] messages. Nearly every waiting
/// message was just added to the thread: two bytes instead of seventeen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[cfg_attr(test, derive(Serialize))]
pub(super) enum IdRef {
    /// The message this many places before the thread's last.
    Back(u64),
    /// The message with this id.
    Id(MessageId),
}

/// How far back from a thread's end an inbox's message is looked for.
pub(super) const REF_WINDOW: usize = 256;

/// Each of `waiting`, in order, as the [`IdRef`] into `thread` that names
/// it: the place after the last one found when it holds the same message
/// (an inbox's messages mostly follow each other in the thread), else
/// the last place among the thread's last [`REF_WINDOW`] that does, else
/// its id.
pub(super) fn refs<'t, T: Borrow<Arc<Message>>>(
    waiting: &'t [T],
    thread: &'t [Arc<Message>],
) -> impl Iterator<Item = IdRef> + 't {
    let len = thread.len();
    let window = len.saturating_sub(REF_WINDOW);
    let mut next = None::<usize>;
    waiting.iter().map(move |m| {
        let id = m.borrow().id;
        let at = next
            .filter(|&i| thread.get(i).is_some_and(|t| t.id == id))
            .or_else(|| {
                thread
                    .get(window..)
                    .and_then(|tail| tail.iter().rposition(|t| t.id == id))
                    .map(|i| window + i)
            });
        next = at.map(|i| i + 1);
        match at {
            Some(i) => IdRef::Back((len - 1 - i) as u64),
            None => IdRef::Id(id),
        }
    })
}

/// An inbox's messages as [`IdRef`]s into `thread`, as a sequence.
fn write_refs<T: Borrow<Arc<Message>>>(out: &mut Vec<u8>, waiting: &[T], thread: &[Arc<Message>]) {
    raw::len(out, waiting.len());
    for r in refs(waiting, thread) {
        // The variants' indices of `IdRef`.
        match r {
            IdRef::Back(back) => {
                raw::variant(out, 0);
                raw::u64(out, back);
            }
            IdRef::Id(id) => {
                raw::variant(out, 1);
                raw::u128(out, id.0);
            }
        }
    }
}

/// A stop condition's counters, as serializing a [`TrackerState`] writes
/// them (a checkpoint writes one each time).
pub(super) fn write_tracker_state(out: &mut Vec<u8>, s: &TrackerState) {
    raw::len(out, s.latched.len());
    out.extend(s.latched.iter().map(|&b| u8::from(b)));
    for v in [
        s.messages,
        s.turns,
        s.tokens,
        s.prompt_tokens,
        s.completion_tokens,
    ] {
        raw::u64(out, v);
    }
    out.push(u8::from(s.timed_out));
}

/// What one agent spent, as serializing an [`AgentStats`] writes it.
fn write_agent_stats(out: &mut Vec<u8>, s: &AgentStats) {
    let AgentStats {
        turns,
        model_calls,
        tool_calls,
        input_tokens,
        output_tokens,
        cost,
    } = *s;
    for v in [turns, model_calls, tool_calls, input_tokens, output_tokens] {
        raw::u64(out, v);
    }
    raw::some(out, cost.is_some());
    if let Some(cost) = cost {
        raw::f64(out, cost);
    }
}

/// A run thread's workflow state as it stands while its run goes on, its
/// parts borrowed from their owners (see `run/finish.rs`): written as the
/// [`WorkflowState`] they would be put together into.
pub(crate) struct StateView<'a> {
    /// How many of the thread's own messages were taken in.
    pub(crate) consumed: usize,
    /// Each inbox that holds something, by participant name in name order:
    /// the range of its messages in `waiting`.
    pub(crate) pending: Vec<(&'a str, Range<usize>)>,
    /// The waiting messages, inbox after inbox.
    pub(crate) waiting: Vec<&'a Arc<Message>>,
    /// Turns taken over the conversation.
    pub(crate) turns: u64,
    /// Who spoke last.
    pub(crate) last_speaker: &'a Option<String>,
    /// The scheduler's part.
    pub(crate) scheduler: &'a SchedulerState,
}

/// A thread's workflow state to write: one a thread holds, or one a
/// running run's owners hold in parts. Written as `WorkflowState` with its
/// inbox contents by id.
#[derive(Clone, Copy)]
pub(crate) enum StateRef<'a> {
    /// A state put together.
    Whole(&'a WorkflowState),
    /// A state in parts.
    Parts(&'a StateView<'a>),
}

impl<'a> StateRef<'a> {
    /// The messages waiting in its inboxes, each inbox's in order.
    pub(super) fn waiting(&self) -> impl Iterator<Item = &'a Arc<Message>> + use<'a> {
        let (whole, parts) = match *self {
            StateRef::Whole(s) => (Some(s.pending.values().flatten()), None),
            StateRef::Parts(v) => (
                None,
                Some(
                    v.pending
                        .iter()
                        .flat_map(|(_, r)| v.waiting[r.clone()].iter().copied()),
                ),
            ),
        };
        whole
            .into_iter()
            .flatten()
            .chain(parts.into_iter().flatten())
    }
}

impl StateRef<'_> {
    /// Appends what serializing it writes (see [`HeadRef::write`]), each
    /// inbox's messages as [`IdRef`]s into `thread`, the messages of the
    /// thread whose state it is.
    fn write(&self, out: &mut Vec<u8>, thread: &[Arc<Message>]) -> Result<(), CodecError> {
        let (consumed, turns, last_speaker, scheduler) = match *self {
            StateRef::Whole(w) => (w.consumed, w.turns, &w.last_speaker, &w.scheduler),
            StateRef::Parts(v) => (v.consumed, v.turns, v.last_speaker, v.scheduler),
        };
        raw::u64(out, consumed as u64);
        match *self {
            StateRef::Whole(w) => {
                raw::len(out, w.pending.len());
                for (name, waiting) in &w.pending {
                    raw::str(out, name);
                    write_refs(out, waiting, thread);
                }
            }
            StateRef::Parts(v) => {
                raw::len(out, v.pending.len());
                for (name, range) in &v.pending {
                    raw::str(out, name);
                    write_refs(
                        out,
                        v.waiting.get(range.clone()).unwrap_or_default(),
                        thread,
                    );
                }
            }
        }
        raw::u64(out, turns);
        raw::some(out, last_speaker.is_some());
        if let Some(speaker) = last_speaker {
            raw::str(out, speaker);
        }
        // Empty (most runs: no graph, no question, nothing to run again),
        // a scheduler state is `None`.
        match scheduler.body() {
            None => {
                raw::some(out, false);
                Ok(())
            }
            Some(_) => codec::encode_into(scheduler, out),
        }
    }
}

/// What a run spent, written as the [`RunStats`] it adds up to: what was
/// counted before (`base`) and what each participant spent itself since
/// (`own`, which `base.total` counts already), without adding them up
/// into a new map.
pub(crate) struct StatsRef<'a> {
    pub(super) base: &'a RunStats,
    /// By agent path, in path order, one entry per path.
    own: Vec<(&'a str, AgentStats)>,
}

impl<'a> StatsRef<'a> {
    /// `stats` as they are.
    #[cfg(test)]
    pub(crate) fn of(stats: &'a RunStats) -> Self {
        StatsRef {
            base: stats,
            own: Vec::new(),
        }
    }

    /// `base` with `own` added per agent (`base.total` counting `own`
    /// already); `own` one entry per path, in any order (put in path
    /// order here, as the map it writes is).
    pub(crate) fn with_own(
        base: &'a RunStats,
        own: impl IntoIterator<Item = (&'a str, AgentStats)>,
    ) -> Self {
        let own = own.into_iter();
        // One allocation: the upper bound is the participants' count.
        let mut kept = Vec::with_capacity(own.size_hint().1.unwrap_or(0));
        kept.extend(own);
        let mut own: Vec<(&'a str, AgentStats)> = kept;
        if !own.windows(2).all(|w| w[0].0 < w[1].0) {
            own.sort_unstable_by(|a, b| a.0.cmp(b.0));
        }
        StatsRef { base, own }
    }

    /// The per-agent entries, in path order, added up where both have one.
    pub(super) fn agents(&self) -> impl Iterator<Item = (&'a str, AgentStats)> + '_ {
        let mut base = self.base.agents.iter().peekable();
        let mut own = self.own.iter().copied().peekable();
        std::iter::from_fn(move || match (base.peek(), own.peek()) {
            (Some((b, bs)), Some((o, os))) => match b.as_str().cmp(o) {
                std::cmp::Ordering::Less => {
                    let (b, bs) = (b.as_str(), **bs);
                    base.next();
                    Some((b, bs))
                }
                std::cmp::Ordering::Greater => own.next(),
                std::cmp::Ordering::Equal => {
                    let (name, mut sum) = (b.as_str(), **bs);
                    sum += *os;
                    base.next();
                    own.next();
                    Some((name, sum))
                }
            },
            (Some(_), None) => base.next().map(|(b, bs)| (b.as_str(), *bs)),
            (None, Some(_)) => own.next(),
            (None, None) => None,
        })
    }
}

impl StatsRef<'_> {
    /// Appends what serializing the [`RunStats`] it adds up to writes.
    fn write(&self, out: &mut Vec<u8>) {
        write_agent_stats(out, &self.base.total);
        // The map's length comes first: written as one byte while it fits
        // in one (up to 250 agents), so the entries are merged once.
        let at = out.len();
        out.push(0);
        let mut n = 0usize;
        for (path, stats) in self.agents() {
            raw::str(out, path);
            write_agent_stats(out, &stats);
            n += 1;
        }
        match u8::try_from(n) {
            Ok(one) if n <= 250 => {
                if let Some(len) = out.get_mut(at) {
                    *len = one;
                }
            }
            _ => {
                out.truncate(at);
                raw::len(out, n);
                for (path, stats) in self.agents() {
                    raw::str(out, path);
                    write_agent_stats(out, &stats);
                }
            }
        }
    }
}
