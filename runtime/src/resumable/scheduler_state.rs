//! [`SchedulerState`]: the scheduler's part of a workflow's state in a
//! thread — where a graph run stands, the questions waiting for the
//! caller, the turns to run again, the counters of a run not finished, the
//! run's state values — typed, and versioned so that a state this build
//! cannot read is refused by name rather than taken for none.

use serde::{Deserialize, Serialize};

use super::held_reply::HeldReply;
use super::request::InputRequest;
use crate::graph::cursor::Cursor;
use crate::message::MessageId;
use crate::state::StateSnapshot;
use crate::stats::RunStats;
use crate::stop::TrackerState;

/// The layout of a scheduler state this build writes; bump it when the
/// state changes shape or meaning.
///
/// 2: [`SchedulerBody::counters`], the counters of a run not finished
/// (a nested run's progress, a run waiting for input), and the run's state
/// values ([`SchedulerState::values`]).
/// 3: the counters keep what the run spent per agent
/// ([`RunCounters::stats`], a [`RunStats`]) instead of its token usage
/// alone.
/// 4: the replies of a superstep's finished turns, held for its barrier
/// ([`SchedulerBody::held`]), written after the other parts: a state of
/// version 3 reads as one holding none (its layout is version 4's
/// without them, so the checkpoint format stays the same).
pub(crate) const SCHEDULER_STATE_VERSION: u32 = 4;

/// The oldest layout this build still reads. Version 1 is version 2
/// without counters and state values (read as none: its runs start
/// counting afresh, as they did). Version 2's counters read without their
/// usage (the spend of an unfinished run is counted afresh from there). In bincode, a thread of version 1 comes
/// with an older [`FORMAT_VERSION`](crate::codec::FORMAT_VERSION) and is
/// refused there.
const OLDEST_READABLE_VERSION: u32 = 1;

/// What a workflow's scheduler needs to carry on where a run left off,
/// kept in [`WorkflowState::scheduler`](crate::WorkflowState::scheduler).
///
/// The engine writes it when a run ends or takes a checkpoint; callers
/// only read it (see [`SchedulerState::requests`]). Empty, it holds
/// nothing at all: a thread travels in every turn's reply, so it stays
/// small.
///
/// Empty, it encodes as a `None` (one byte), which
/// `checkpoint::snapshot_refs` writes by hand for the empty state: keep it
/// a transparent `Option` (the test
/// `a_workflow_state_written_by_hand_is_what_serde_writes` pins it).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SchedulerState {
    body: Option<Box<SchedulerBody>>,
}

/// A scheduler state with something in it. Its encoding follows its
/// version (see [`SCHEDULER_STATE_VERSION`]): `held` is written from
/// version 4 on, and read only from states that have it (the layout is
/// the checkpoint format's: `checkpoint/scheduler_body.rs`).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct SchedulerBody {
    /// The `SCHEDULER_STATE_VERSION` it was written with.
    pub(crate) version: u32,
    /// Where a graph run that stopped midway stands; `None` when there is
    /// no graph or it ran out of nodes (it starts afresh next time).
    pub(crate) graph: Option<Cursor>,
    /// Questions to the caller not answered yet.
    pub(crate) requests: Vec<InputRequest>,
    /// Participants whose turn was under way or cut short when the state
    /// was taken: their input is in their threads, and they run again.
    pub(crate) interrupted: Vec<String>,
    /// The counters of a run that has not finished (a nested run's
    /// progress, or a run waiting for input): a run over this thread picks
    /// them up and counts on. `None` once a run finished: the next one
    /// counts afresh.
    pub(crate) counters: Option<RunCounters>,
    /// The run's state values (what turns set with `Reply::with_state`).
    pub(crate) values: StateSnapshot,
    /// The replies of turns that finished in the superstep under way (or
    /// in one interrupted, to run again), applied at its barrier: a run
    /// carrying on from here does not run those turns again.
    pub(crate) held: Vec<HeldReply>,
}

/// What a run counted besides its thread — the stop condition's counters,
/// what it spent, the turns, the final response so far — so that a run over
/// the same thread carries on exactly (a round robin stopped after 3 of 6
/// turns takes 3 more, not 6).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct RunCounters {
    /// The stop condition's counters.
    pub(crate) stop: Option<TrackerState>,
    /// What the run spent so far, per agent and in total.
    #[serde(default)]
    pub(crate) stats: RunStats,
    /// Turns taken so far.
    pub(crate) turns: u64,
    /// The final response so far.
    pub(crate) last: Option<MessageId>,
    /// How many of the thread's messages were there before the run's own
    /// output.
    pub(crate) start_len: usize,
}

impl Default for SchedulerBody {
    fn default() -> Self {
        SchedulerBody {
            version: SCHEDULER_STATE_VERSION,
            graph: None,
            requests: Vec::new(),
            interrupted: Vec::new(),
            counters: None,
            values: StateSnapshot::default(),
            held: Vec::new(),
        }
    }
}

/// A scheduler state this workflow cannot carry on from.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SchedulerStateError {
    /// It was written with a layout this build does not read.
    #[error("scheduler state has version {found}, this build reads version {expected}")]
    UnknownVersion {
        /// The version read here.
        expected: u32,
        /// The state's.
        found: u32,
    },
    /// Its graph cursor was not made for this workflow's graph.
    #[error("its graph cursor does not fit the workflow's graph ({0})")]
    GraphMismatch(&'static str),
    /// It names a participant the workflow does not have.
    #[error("its {role} names '{name}', who is not a participant")]
    UnknownParticipant {
        /// What names it: an interrupted turn or an input request.
        role: &'static str,
        /// The name.
        name: String,
    },
}

impl SchedulerState {
    /// A state of the current version holding these parts (nothing at all
    /// when they are all empty).
    pub(crate) fn new(
        graph: Option<Cursor>,
        requests: Vec<InputRequest>,
        interrupted: Vec<String>,
        values: StateSnapshot,
    ) -> Self {
        let empty =
            graph.is_none() && requests.is_empty() && interrupted.is_empty() && values.is_empty();
        SchedulerState {
            body: (!empty).then(|| {
                Box::new(SchedulerBody {
                    graph,
                    requests,
                    interrupted,
                    values,
                    ..SchedulerBody::default()
                })
            }),
        }
    }

    /// The version of the layout it was written with.
    pub fn version(&self) -> u32 {
        self.body
            .as_ref()
            .map_or(SCHEDULER_STATE_VERSION, |b| b.version)
    }

    /// The questions to the caller not answered yet.
    pub fn requests(&self) -> &[InputRequest] {
        self.body.as_ref().map_or(&[], |b| &b.requests)
    }

    /// The run's state values (see [`RunContext::state`](crate::RunContext::state)):
    /// what the turns of the runs of this thread set, as the last run left
    /// them.
    pub fn values(&self) -> StateSnapshot {
        self.body
            .as_ref()
            .map_or_else(StateSnapshot::default, |b| b.values.clone())
    }

    /// Keeps `held`, the replies of a superstep's finished turns, for the
    /// next run over this thread (nothing when there are none).
    pub(crate) fn set_held(&mut self, held: Vec<HeldReply>) {
        if !held.is_empty() {
            self.body_mut().held = held;
        }
    }

    /// Takes the state values out, leaving none (and nothing at all if
    /// nothing else is held).
    pub(crate) fn take_values(&mut self) -> StateSnapshot {
        let Some(body) = self.body.as_mut() else {
            return StateSnapshot::default();
        };
        let values = std::mem::take(&mut body.values);
        if body.graph.is_none()
            && body.requests.is_empty()
            && body.interrupted.is_empty()
            && body.held.is_empty()
        {
            self.body = None;
        }
        values
    }

    /// What it holds, if anything.
    pub(crate) fn body(&self) -> Option<&SchedulerBody> {
        self.body.as_deref()
    }

    /// What it holds, to change (made empty first if need be).
    pub(crate) fn body_mut(&mut self) -> &mut SchedulerBody {
        self.body.get_or_insert_with(Box::default)
    }

    /// Takes what it holds, leaving it empty.
    pub(crate) fn take(&mut self) -> SchedulerBody {
        self.body.take().map(|b| *b).unwrap_or_default()
    }

    /// Keeps `counters` for the next run over this thread.
    pub(crate) fn set_counters(&mut self, counters: RunCounters) {
        self.body_mut().counters = Some(counters);
    }

    /// Refuses a state written with a layout this build does not read
    /// (older ones it reads are taken as they are: see
    /// `OLDEST_READABLE_VERSION`; they are written back in the current one).
    pub(crate) fn check_version(&self) -> Result<(), SchedulerStateError> {
        match self.version() {
            OLDEST_READABLE_VERSION..=SCHEDULER_STATE_VERSION => Ok(()),
            found => Err(SchedulerStateError::UnknownVersion {
                expected: SCHEDULER_STATE_VERSION,
                found,
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_state_holds_nothing_and_a_thread_stays_small() {
        // A thread travels in every reply: its state must not grow it.
        assert_eq!(
            std::mem::size_of::<SchedulerState>(),
            std::mem::size_of::<usize>()
        );
        let empty = SchedulerState::new(None, Vec::new(), Vec::new(), StateSnapshot::default());
        assert_eq!(empty, SchedulerState::default());
        assert_eq!(empty.version(), SCHEDULER_STATE_VERSION);
        assert!(empty.body().is_none());
        let one = SchedulerState::new(None, Vec::new(), vec!["a".into()], StateSnapshot::default());
        assert_eq!(one.body().map(|b| b.interrupted.len()), Some(1));
    }

    #[test]
    fn it_round_trips_through_the_codec_and_json() {
        let state = SchedulerState::new(
            None,
            vec![InputRequest {
                id: "r".into(),
                agent: "a".into(),
                prompt: "?".into(),
            }],
            vec!["b".into()],
            [("k", "v")].into_iter().collect(),
        );
        let back: SchedulerState =
            crate::checkpoint::codec::decode(&crate::checkpoint::codec::encode(&state).unwrap())
                .unwrap();
        assert_eq!(back, state);
        let json = serde_json::to_string(&state).unwrap();
        assert!(json.contains("\"version\":4"), "{json}");
        assert_eq!(
            serde_json::from_str::<SchedulerState>(&json).unwrap(),
            state
        );
        assert_eq!(
            serde_json::to_string(&SchedulerState::default()).unwrap(),
            "null"
        );
    }

    #[test]
    fn counters_round_trip_and_a_state_of_version_1_reads_as_one_without() {
        let mut state = SchedulerState::new(None, Vec::new(), Vec::new(), StateSnapshot::default());
        state.set_counters(RunCounters {
            turns: 3,
            start_len: 1,
            ..RunCounters::default()
        });
        let back: SchedulerState =
            crate::checkpoint::codec::decode(&crate::checkpoint::codec::encode(&state).unwrap())
                .unwrap();
        assert_eq!(back, state);
        assert_eq!(
            back.body()
                .and_then(|b| b.counters.as_ref())
                .map(|c| c.turns),
            Some(3)
        );

        let v1 = r#"{"version":1,"graph":null,"requests":[],"interrupted":["b"]}"#;
        let old: SchedulerState = serde_json::from_str(v1).unwrap();
        assert_eq!(old.check_version(), Ok(()));
        let body = old.body().unwrap();
        assert_eq!(body.interrupted, ["b"]);
        assert!(body.counters.is_none());

        for found in [0, SCHEDULER_STATE_VERSION + 1] {
            let json =
                format!(r#"{{"version":{found},"graph":null,"requests":[],"interrupted":[]}}"#);
            let unknown: SchedulerState = serde_json::from_str(&json).unwrap();
            assert_eq!(
                unknown.check_version(),
                Err(SchedulerStateError::UnknownVersion {
                    expected: SCHEDULER_STATE_VERSION,
                    found
                })
            );
        }
    }

    #[test]
    fn a_version_1_state_reads_as_one_without_values_and_a_newer_one_is_refused() {
        let v1 = r#"{"version":1,"graph":null,"requests":[],"interrupted":["a"]}"#;
        let state: SchedulerState = serde_json::from_str(v1).unwrap();
        assert_eq!(state.check_version(), Ok(()));
        assert!(state.values().is_empty());
        let v5 = v1.replace("\"version\":1", "\"version\":5");
        let state: SchedulerState = serde_json::from_str(&v5).unwrap();
        assert_eq!(
            state.check_version(),
            Err(SchedulerStateError::UnknownVersion {
                expected: SCHEDULER_STATE_VERSION,
                found: 5
            })
        );
    }

    #[test]
    fn held_replies_are_written_from_version_4_and_a_version_3_state_reads_without() {
        let mut state =
            SchedulerState::new(None, Vec::new(), vec!["b".into()], StateSnapshot::default());
        state.set_held(vec![HeldReply {
            node: "a".into(),
            messages: vec![crate::Message::text("a", "done")],
            thread: None,
            next: None,
            request: None,
            private: Vec::new(),
            inner_requests: Vec::new(),
            state: Default::default(),
        }]);
        let bytes = crate::checkpoint::codec::encode(&state).unwrap();
        let back: SchedulerState = crate::checkpoint::codec::decode(&bytes).unwrap();
        assert_eq!(back, state);
        assert_eq!(back.body().map(|b| b.held.len()), Some(1));
        // A version 3 state (as earlier builds wrote it, the same layout
        // without `held`) reads as one holding none, in bincode as in
        // JSON, and is written back as it was.
        let mut old =
            SchedulerState::new(None, Vec::new(), vec!["b".into()], StateSnapshot::default());
        old.body_mut().version = 3;
        let bytes = crate::checkpoint::codec::encode(&old).unwrap();
        let mut with_more = bytes.clone();
        with_more.extend_from_slice(&[7, 7]);
        let back: SchedulerState = crate::checkpoint::codec::decode(&bytes).unwrap();
        assert_eq!(back, old);
        assert!(back.body().is_some_and(|b| b.held.is_empty()));
        // Not one byte more than before: what follows it in a checkpoint
        // is read where it was.
        let (_, read): (SchedulerState, usize) =
            bincode::serde::decode_from_slice(&with_more, bincode::config::standard()).unwrap();
        assert_eq!(read, bytes.len());
        let json = serde_json::to_string(&old).unwrap();
        assert!(!json.contains("held"), "{json}");
        assert_eq!(serde_json::from_str::<SchedulerState>(&json).unwrap(), old);
    }

    #[test]
    fn a_version_2_state_s_counters_read_without_their_usage() {
        let v2 = r#"{"version":2,"graph":null,"requests":[],"interrupted":[],
            "counters":{"stop":null,"usage":{"prompt_tokens":5,"completion_tokens":1},
            "turns":3,"last":null,"start_len":1},"values":{}}"#;
        let state: SchedulerState = serde_json::from_str(v2).unwrap();
        assert_eq!(state.check_version(), Ok(()));
        let counters = state.body().and_then(|b| b.counters.clone()).unwrap();
        assert_eq!(counters.turns, 3);
        assert_eq!(counters.stats, RunStats::default());
    }

    #[test]
    fn taking_the_values_leaves_an_otherwise_empty_state_empty() {
        let values: StateSnapshot = [("k", "v")].into_iter().collect();
        let mut state = SchedulerState::new(None, Vec::new(), Vec::new(), values.clone());
        assert_eq!(state.values(), values);
        assert_eq!(state.take_values(), values);
        assert_eq!(state, SchedulerState::default());
    }
}
