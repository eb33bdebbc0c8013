//! The borrowed writers of `snapshot_refs` against serde: each view
//! serialized the plain way (serde, bincode) is the bytes its hand-written
//! `write` must produce, and the owned value it stands for serialized is
//! the same bytes again. Tests only.

use std::borrow::Borrow;
use std::sync::Arc;

use serde::ser::{Error as _, SerializeMap, SerializeSeq, SerializeStruct};
use serde::{Serialize, Serializer};

use super::snapshot_refs::{
    IdRef, PathAt, REF_WINDOW, StateAt, StateRef, StateView, StatsRef, WithPaths,
};
use crate::message::Message;
use crate::resumable::scheduler_state::SchedulerState;
use crate::stats::{AgentStats, RunStats};
use crate::thread::WorkflowState;

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

/// One inbox's contents, written as `(String, Vec<IdRef>)`.
type Inbox<'a> = (&'a str, Vec<IdRef>);

/// [`snapshot_refs::refs`](super::snapshot_refs::refs) the plain way: for
/// each waiting message, the place after the last one found if it holds
/// it, else the last place among the thread's last `REF_WINDOW` that
/// does (searched from the front), else its id.
fn plain_refs<T: Borrow<Arc<Message>>>(waiting: &[T], thread: &[Arc<Message>]) -> Vec<IdRef> {
    let mut out = Vec::new();
    let mut next: Option<usize> = None;
    for m in waiting {
        let id = m.borrow().id;
        let mut at = None;
        if let Some(n) = next
            && n < thread.len()
            && thread[n].id == id
        {
            at = Some(n);
        }
        if at.is_none() {
            for (i, t) in thread.iter().enumerate() {
                if i + REF_WINDOW >= thread.len() && t.id == id {
                    at = Some(i);
                }
            }
        }
        next = at.map(|i| i + 1);
        out.push(match at {
            Some(i) => IdRef::Back((thread.len() - 1 - i) as u64),
            None => IdRef::Id(id),
        });
    }
    out
}

impl Serialize for StateAt<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let thread = self.thread;
        let (consumed, turns, last_speaker, scheduler) = match self.state {
            StateRef::Whole(w) => (w.consumed, w.turns, &w.last_speaker, &w.scheduler),
            StateRef::Parts(v) => (v.consumed, v.turns, v.last_speaker, v.scheduler),
        };
        let mut st = s.serialize_struct("StateRef", 5)?;
        st.serialize_field("consumed", &(consumed as u64))?;
        match self.state {
            StateRef::Whole(w) => st.serialize_field(
                "pending",
                &Pending(|| {
                    w.pending
                        .iter()
                        .map(|(n, ids)| -> Inbox<'_> { (n.as_str(), plain_refs(ids, thread)) })
                }),
            )?,
            StateRef::Parts(v) => st.serialize_field(
                "pending",
                &Pending(|| {
                    v.pending.iter().map(|(n, r)| -> Inbox<'_> {
                        (n, plain_refs(&v.waiting[r.clone()], thread))
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

use crate::checkpoint::codec;

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
    // Participants as a run folds them (by index, not by path): the same
    // bytes.
    let shuffled = [own[2], own[0], own[1]];
    assert_eq!(
        codec::encode(&StatsRef::with_own(&base, shuffled)).unwrap(),
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
    let thread = [two.clone(), m("other"), one.clone(), three.clone()];
    let at = |state| StateAt {
        state,
        thread: &thread,
    };
    assert_eq!(
        codec::encode(&at(w)).unwrap(),
        codec::encode(&at(p)).unwrap()
    );
    let ids = |s: StateRef<'_>| s.waiting().map(|m| m.id).collect::<Vec<_>>();
    assert_eq!(ids(w), ids(p));
    assert_eq!(ids(p), [one.id, two.id, three.id]);
}

/// The small state written by hand is the bytes serde writes for it:
/// inboxes in parts and whole, a thread gone, per-agent stats with their
/// own spend added, costs, small and large ids and numbers, a scheduler
/// state with something in it, every `Option` both ways.
#[test]
fn the_small_state_written_by_hand_is_what_serde_writes() {
    use super::delta::ThreadPath;
    use super::snapshot_refs::HeadRef;
    use crate::message::MessageId;
    use crate::resumable::status::RunStatus;
    use crate::state::StateSnapshot;
    use crate::stop::TrackerState;

    let with_id = |id: u128, text: &str| {
        let mut m = Message::text("x", text);
        m.id = MessageId(id);
        Arc::new(m)
    };
    let small = with_id(7, "small");
    let mid = with_id(70_000, "mid");
    let large = with_id(u128::MAX - 3, "large");
    let scheduler = SchedulerState::new(
        None,
        Vec::new(),
        vec!["b".to_string()],
        StateSnapshot::default(),
    );
    let speaker = Some("agent-b".to_string());
    let root = StateView {
        consumed: 300,
        pending: vec![("a", 0..2), ("b", 2..3)],
        waiting: vec![&small, &mid, &large],
        turns: 1 << 33,
        last_speaker: &speaker,
        scheduler: &scheduler,
    };
    let child = WorkflowState {
        consumed: 1,
        pending: [("inner".to_string(), vec![large.clone(), small.clone()])].into(),
        ..WorkflowState::default()
    };
    let walked: Vec<(ThreadPath, ())> = vec![
        (Vec::new(), ()),
        (vec!["team".to_string(), "é".repeat(200)], ()),
    ];
    // The run thread holds `small` and `mid` (named by place, `mid` right
    // after `small`); the child's holds `small` 252 places before its last
    // (a three-byte place) and `large` before its last 256 (named by id),
    // the gone thread's nothing.
    let filler = |n: usize| (0..n).map(|i| with_id(1_000 + i as u128, "f"));
    let run_thread: Vec<Arc<Message>> = filler(3)
        .chain([small.clone(), mid.clone()])
        .chain(filler(2))
        .collect();
    let child_thread: Vec<Arc<Message>> = std::iter::once(large.clone())
        .chain(filler(REF_WINDOW))
        .chain([small.clone()])
        .chain(filler(252))
        .collect();
    assert_eq!(
        plain_refs(&[&small, &mid, &large], &run_thread),
        [IdRef::Back(3), IdRef::Back(2), IdRef::Id(large.id)]
    );
    assert_eq!(
        plain_refs(&[&large, &small], &child_thread),
        [IdRef::Id(large.id), IdRef::Back(252)]
    );
    let states = [
        (
            PathAt::Walked(0),
            StateAt {
                state: StateRef::Parts(&root),
                thread: &run_thread,
            },
        ),
        (
            PathAt::Walked(1),
            StateAt {
                state: StateRef::Whole(&child),
                thread: &child_thread,
            },
        ),
        (
            PathAt::Gone(vec!["gone".to_string()]),
            StateAt {
                state: StateRef::Whole(&child),
                thread: &[],
            },
        ),
    ];
    let mut base = RunStats::default();
    let priced = AgentStats {
        turns: 3,
        model_calls: 300,
        input_tokens: 1 << 40,
        cost: Some(0.125),
        ..AgentStats::default()
    };
    base.add("a", priced);
    base.add(
        "z",
        AgentStats {
            turns: 1,
            ..AgentStats::default()
        },
    );
    let own = [
        ("a", priced),
        (
            "m",
            AgentStats {
                output_tokens: 251,
                ..AgentStats::default()
            },
        ),
    ];
    let stats = StatsRef::with_own(&base, own);
    let stops = [None, Some(TrackerState::default())];
    let statuses = [None, Some(RunStatus::Completed)];
    for (stop, status) in stops.iter().zip(&statuses) {
        for last in [None, Some(MessageId(5)), Some(MessageId(u128::MAX))] {
            let head = HeadRef {
                states: WithPaths {
                    items: &states,
                    walked: &walked,
                },
                stop,
                stats: &stats,
                turns: 251,
                last,
                start_len: 65_536,
                started_at_ns: 1_764_000_000_000_000_000,
                status,
            };
            let mut by_hand = Vec::new();
            head.write(&mut by_hand).unwrap();
            assert_eq!(by_hand, codec::encode(&head).unwrap());
        }
    }
}

/// Every kind of message written by hand (or, not text, through serde) is
/// the bytes serde writes for it: text with and without usage and
/// metadata, at small and large ids and times, and every other content.
#[test]
fn a_message_written_by_hand_is_what_serde_writes() {
    use super::snapshot_refs::write_message;
    use crate::message::{Content, Handoff, MessageId, Usage};
    use std::time::{Duration, UNIX_EPOCH};

    let mut messages = vec![
        Message::user("hello"),
        Message::text("agent-é", "x".repeat(300)).with_usage(Usage {
            prompt_tokens: 251,
            completion_tokens: 1 << 40,
        }),
        Message::text("a", "")
            .with_metadata("k", "v")
            .with_metadata("ключ", "z".repeat(70_000)),
        Message::new("a", Content::Structured(r#"{"ok":true}"#.into())),
        Message::new("a", Content::Stop("done".into())),
        Message::handoff("a", "b", "yours"),
        Message::new(
            "a",
            Content::Handoff(Handoff {
                target: "user".into(),
                reason: String::new(),
            }),
        ),
    ];
    for (id, secs, nanos) in [
        (0, 0, 0),
        (250, 251, 999_999_999),
        (u128::MAX, 1 << 40, 65_536),
    ] {
        let mut m = Message::text("t", "timed");
        m.id = MessageId(id);
        m.created_at = UNIX_EPOCH + Duration::new(secs, nanos);
        messages.push(m);
    }
    for m in &messages {
        let mut by_hand = Vec::new();
        write_message(&mut by_hand, m).unwrap();
        assert_eq!(by_hand, codec::encode(m).unwrap(), "{m:?}");
    }
}

/// The bytes `HeadRef::write` writes for a small state of `items` and
/// `stats`, its other parts empty.
fn head_by_hand(items: &[(PathAt, StateAt<'_>)], stats: &RunStats) -> Vec<u8> {
    let stats = StatsRef::of(stats);
    let walked: [(super::delta::ThreadPath, ()); 0] = [];
    let head = super::snapshot_refs::HeadRef {
        states: WithPaths {
            items,
            walked: &walked,
        },
        stop: &None,
        stats: &stats,
        turns: 0,
        last: None,
        start_len: 0,
        started_at_ns: 0,
        status: &None,
    };
    let mut out = Vec::new();
    head.write(&mut out).unwrap();
    out
}

/// A workflow state written by hand is `WorkflowState`'s own serde bytes
/// (its inboxes named but empty: messages in them are written by place,
/// which `the_small_state_written_by_hand_is_what_serde_writes` holds to
/// the plain writer): every field, the `Option` both ways, a scheduler
/// state empty (written by hand) and not (through serde).
#[test]
fn a_workflow_state_written_by_hand_is_what_serde_writes() {
    use crate::state::StateSnapshot;

    let busy = SchedulerState::new(
        None,
        Vec::new(),
        vec!["b".to_string()],
        StateSnapshot::default(),
    );
    for scheduler in [SchedulerState::default(), busy] {
        for last_speaker in [None, Some("agent-é".to_string())] {
            let state = WorkflowState {
                consumed: 300,
                pending: [("a".to_string(), Vec::new()), ("b".to_string(), Vec::new())].into(),
                turns: 1 << 33,
                last_speaker,
                scheduler: scheduler.clone(),
            };
            let plain = codec::encode(&state).unwrap();
            let at = StateAt {
                state: StateRef::Whole(&state),
                thread: &[],
            };
            assert_eq!(codec::encode(&at).unwrap(), plain);
            let by_hand = head_by_hand(&[(PathAt::Gone(Vec::new()), at)], &RunStats::default());
            // One state (a length of 1), at the run's path (empty), then it.
            assert_eq!(by_hand[..2], [1, 0]);
            assert_eq!(by_hand[2..2 + plain.len()], plain[..], "{state:?}");
        }
    }
}

/// Every field of an `AgentStats`, and of the `RunStats` holding it,
/// written by hand is the bytes serde writes for them: each field at its
/// own value, the cost absent, small and large.
#[test]
fn every_agent_stats_field_written_by_hand_is_what_serde_writes() {
    for cost in [None, Some(0.125), Some(f64::MAX)] {
        // Every field named: a field added fails to compile here.
        let every = AgentStats {
            turns: 1,
            model_calls: 251,
            tool_calls: 1 << 16,
            input_tokens: 1 << 33,
            output_tokens: u64::MAX,
            cost,
        };
        let mut stats = RunStats::default();
        stats.add("a", every);
        stats.add("b/é", spent(2, 3));
        let plain = codec::encode(&stats).unwrap();
        let by_hand = head_by_hand(&[], &stats);
        // No states (a length of 0), no stop tracker, then the stats.
        assert_eq!(by_hand[..2], [0, 0]);
        assert_eq!(by_hand[2..2 + plain.len()], plain[..], "{stats:?}");
    }
}

/// A tracker state written by hand is the bytes serde writes: empty, and
/// every field at its own value (the struct literal names every field, so
/// a field added fails to compile here).
#[test]
fn a_tracker_state_written_by_hand_is_what_serde_writes() {
    use super::snapshot_refs::write_tracker_state;
    use crate::stop::TrackerState;

    let states = [
        TrackerState::default(),
        TrackerState {
            latched: vec![true, false, true],
            messages: 251,
            turns: 1 << 33,
            tokens: 65_536,
            prompt_tokens: 7,
            completion_tokens: u64::MAX,
            timed_out: true,
        },
    ];
    for state in states {
        let mut by_hand = Vec::new();
        write_tracker_state(&mut by_hand, &state);
        assert_eq!(by_hand, codec::encode(&state).unwrap());
    }
}
