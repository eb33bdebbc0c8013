//! What a checkpoint writes, as borrowed views: the bytes of format 5's
//! payload (`store/delta.rs`) and of its small state, written straight
//! from the run's own state — no inbox, statistics or state copied into
//! a value first only to be serialized and dropped.
//!
//! Each view writes exactly what serializing the owned type it stands for
//! writes (a `StateRef` a `WorkflowState` with its inbox contents by id, a
//! `StatsRef` a `RunStats`, an `OpRef` a `ThreadOp`); the tests here and in
//! `snapshot_delta` hold them to it.

use std::borrow::Borrow;
use std::ops::Range;
use std::sync::Arc;

use serde::ser::{Error as _, SerializeMap, SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};

use super::result::RunStatus;
use super::scheduler_state::SchedulerState;
use crate::message::{Message, MessageId};
use crate::stats::{AgentStats, RunStats};
use crate::stop::TrackerState;
use crate::store::ThreadPath;
use crate::thread::WorkflowState;

/// The ids of some messages, written as a `Vec<MessageId>` is, without
/// making one.
pub(super) struct IdsOf<'a, T>(pub(super) &'a [T]);

impl<T> Clone for IdsOf<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for IdsOf<'_, T> {}

impl<T: Borrow<Arc<Message>>> Serialize for IdsOf<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.0.iter().map(|m| m.borrow().id))
    }
}

/// A thread's path as the writer walks it: names borrowed from the tree.
pub(super) type PathRef<'a> = Vec<&'a str>;

/// A [`ThreadOp`](crate::store::ThreadOp) written from borrowed data: the same bytes.
pub(super) enum OpRef<'a> {
    Append(IdsOf<'a, Arc<Message>>),
    Replace(IdsOf<'a, Arc<Message>>),
    Remove,
}

impl Serialize for OpRef<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        // The variants' indices and names of `ThreadOp`.
        match self {
            OpRef::Append(ids) => s.serialize_newtype_variant("ThreadOp", 0, "Append", ids),
            OpRef::Replace(ids) => s.serialize_newtype_variant("ThreadOp", 1, "Replace", ids),
            OpRef::Remove => s.serialize_unit_variant("ThreadOp", 2, "Remove"),
        }
    }
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

impl<T: Serialize, W> Serialize for WithPaths<'_, T, W> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.items.len()))?;
        for (at, item) in self.items {
            let path = match at {
                PathAt::Walked(n) => match self.walked.get(*n) {
                    Some((path, _)) => path,
                    None => return Err(S::Error::custom("a walked thread is not in the list")),
                },
                PathAt::Gone(path) => path,
            };
            seq.serialize_element(&(path, item))?;
        }
        seq.end()
    }
}

/// A [`ChainPayload`](crate::store::ChainPayload) written from borrowed data: the same bytes.
#[derive(Serialize)]
#[serde(bound = "")]
pub(super) struct PayloadRef<'r, 'a, W> {
    pub(super) messages: &'r [&'a Message],
    pub(super) threads: WithPaths<'r, OpRef<'a>, W>,
    pub(super) head: Bytes<'r>,
}

/// Bytes written as one byte string (as `ChainPayload::head` is).
pub(super) struct Bytes<'a>(pub(super) &'a [u8]);

impl Serialize for Bytes<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(self.0)
    }
}

/// The small state, whole in every checkpoint: each thread's workflow
/// state (inbox contents by id) and the run's counters. Times are
/// nanoseconds since the epoch.
#[derive(Serialize)]
#[serde(bound = "")]
pub(super) struct HeadRef<'r, 'a, W> {
    pub(super) states: WithPaths<'r, StateRef<'a>, W>,
    pub(super) stop: &'r Option<TrackerState>,
    pub(super) stats: &'r StatsRef<'a>,
    pub(super) turns: u64,
    pub(super) last: Option<MessageId>,
    pub(super) start_len: u64,
    pub(super) started_at_ns: u64,
    pub(super) status: &'r Option<RunStatus>,
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

/// One inbox's contents by id, written as `(String, Vec<MessageId>)`.
type Inbox<'a, T> = (&'a str, IdsOf<'a, T>);

impl Serialize for StateRef<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let (consumed, turns, last_speaker, scheduler) = match *self {
            StateRef::Whole(w) => (w.consumed, w.turns, &w.last_speaker, &w.scheduler),
            StateRef::Parts(v) => (v.consumed, v.turns, v.last_speaker, v.scheduler),
        };
        let mut st = s.serialize_struct("StateRef", 5)?;
        st.serialize_field("consumed", &(consumed as u64))?;
        match *self {
            StateRef::Whole(w) => st.serialize_field(
                "pending",
                &Pending(|| {
                    w.pending
                        .iter()
                        .map(|(n, ids)| -> Inbox<'_, Arc<Message>> { (n.as_str(), IdsOf(ids)) })
                }),
            )?,
            StateRef::Parts(v) => st.serialize_field(
                "pending",
                &Pending(|| {
                    v.pending.iter().map(|(n, r)| -> Inbox<'_, &Arc<Message>> {
                        (n, IdsOf(&v.waiting[r.clone()]))
                    })
                }),
            )?,
        }
        st.serialize_field("turns", &turns)?;
        st.serialize_field("last_speaker", last_speaker)?;
        st.serialize_field("scheduler", scheduler)?;
        st.end()
    }
}

/// A sequence made on demand, written as a `Vec` of its items.
struct Pending<F>(F);

impl<F, I> Serialize for Pending<F>
where
    F: Fn() -> I,
    I: ExactSizeIterator,
    I::Item: Serialize,
{
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq((self.0)())
    }
}

/// What a run spent, written as the [`RunStats`] it adds up to: what was
/// counted before (`base`) and what each participant spent itself since
/// (`own`, which `base.total` counts already), without adding them up
/// into a new map.
pub(crate) struct StatsRef<'a> {
    base: &'a RunStats,
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
    /// already); `own` in path order, one entry per path.
    pub(crate) fn with_own(
        base: &'a RunStats,
        own: impl IntoIterator<Item = (&'a str, AgentStats)>,
    ) -> Self {
        let own: Vec<(&'a str, AgentStats)> = own.into_iter().collect();
        debug_assert!(
            own.windows(2).all(|w| w[0].0 < w[1].0),
            "own not in path order"
        );
        StatsRef { base, own }
    }

    /// The per-agent entries, in path order, added up where both have one.
    fn agents(&self) -> impl Iterator<Item = (&'a str, AgentStats)> + '_ {
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

impl Serialize for StatsRef<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut st = s.serialize_struct("RunStats", 2)?;
        st.serialize_field("total", &self.base.total)?;
        st.serialize_field("agents", &Agents(self))?;
        st.end()
    }
}

/// [`StatsRef`]'s per-agent map.
struct Agents<'r, 'a>(&'r StatsRef<'a>);

impl Serialize for Agents<'_, '_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let len = self.0.agents().count();
        let mut map = s.serialize_map(Some(len))?;
        for (path, stats) in self.0.agents() {
            map.serialize_entry(path, &stats)?;
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec;

    fn spent(turns: u64, input_tokens: u64) -> AgentStats {
        AgentStats {
            turns,
            input_tokens,
            ..AgentStats::default()
        }
    }

    /// A `StatsRef` writes the bytes of the `RunStats` it adds up to.
    #[test]
    fn stats_ref_writes_the_stats_it_adds_up_to() {
        let mut base = RunStats::default();
        base.add("b", spent(1, 10));
        base.add("d", spent(2, 20));
        let own = [("a", spent(1, 1)), ("b", spent(3, 1)), ("c", spent(1, 5))];
        let mut whole = base.clone();
        for (path, s) in own {
            *whole.agents.entry(path.to_string()).or_default() += s;
        }
        let view = StatsRef::with_own(&base, own);
        assert_eq!(
            codec::encode(&view).unwrap(),
            codec::encode(&whole).unwrap()
        );
        assert_eq!(
            codec::encode(&StatsRef::of(&whole)).unwrap(),
            codec::encode(&whole).unwrap()
        );
    }

    /// A state in parts writes the bytes of the same state put together.
    #[test]
    fn a_state_in_parts_writes_the_state_put_together() {
        let m = |t: &str| Arc::new(Message::text("x", t));
        let (one, two, three) = (m("1"), m("2"), m("3"));
        let speaker = Some("b".to_string());
        let scheduler = SchedulerState::default();
        let whole = WorkflowState {
            consumed: 4,
            pending: [
                ("a".to_string(), vec![one.clone()]),
                ("c".to_string(), vec![two.clone(), three.clone()]),
            ]
            .into(),
            turns: 9,
            last_speaker: speaker.clone(),
            scheduler: scheduler.clone(),
        };
        let parts = StateView {
            consumed: 4,
            pending: vec![("a", 0..1), ("c", 1..3)],
            waiting: vec![&one, &two, &three],
            turns: 9,
            last_speaker: &speaker,
            scheduler: &scheduler,
        };
        let (w, p) = (StateRef::Whole(&whole), StateRef::Parts(&parts));
        assert_eq!(codec::encode(&w).unwrap(), codec::encode(&p).unwrap());
        let ids = |s: StateRef<'_>| s.waiting().map(|m| m.id).collect::<Vec<_>>();
        assert_eq!(ids(w), ids(p));
        assert_eq!(ids(p), [one.id, two.id, three.id]);
    }
}
