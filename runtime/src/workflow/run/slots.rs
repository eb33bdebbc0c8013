//! The run's thread, taken apart into slots while the run goes on — one
//! thread per participant or shared group, lent to turns as an `Arc` — and
//! put back together, by the same code, for a checkpoint and at the end.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::checkpoint::snapshot_refs::StateView;
use crate::graph::cursor::Cursor;
use crate::message::Message;
use crate::resumable::held_reply::HeldReply;
use crate::resumable::request::InputRequest;
use crate::resumable::scheduler_state::{RunCounters, SchedulerState};
use crate::state::{StateDelta, StateSnapshot};
use crate::thread::{Thread, WorkflowState};
use crate::workflow::spec::Spec;

/// What of a thread's workflow state lives with other owners while the
/// run goes on: inbox contents, the graph's cursor, the turns to run
/// again, the run's counters. Taken out when the thread is taken apart,
/// given back when it is put together (with, for a checkpoint, the
/// progress of nested runs under way).
#[derive(Default, Clone)]
pub(super) struct Scheduling {
    /// Messages waiting in each inbox, by participant name.
    pub(super) pending: BTreeMap<String, Vec<Arc<Message>>>,
    /// Where a graph run stands, if it has nodes left to run.
    pub(super) graph: Option<Cursor>,
    /// Participants whose turn runs again.
    pub(super) interrupted: Vec<String>,
    /// Questions this run asked the caller (taken apart: none yet).
    pub(super) new_requests: Vec<InputRequest>,
    /// The counters of a run not finished, to carry on from: kept in the
    /// thread for a nested run's progress and a run waiting for input.
    pub(super) counters: Option<RunCounters>,
    /// Slots to put together as a nested run under way last reported
    /// them rather than as its turn began, by slot (taken apart: none).
    pub(super) progress: Vec<(usize, Arc<Thread>)>,
    /// Replies of a superstep's finished turns, held for its barrier.
    pub(super) held: Vec<HeldReply>,
}

/// The run's thread, taken apart.
#[derive(Default)]
pub(super) struct ThreadSlots {
    /// The run thread's own messages.
    root: Thread,
    /// Children of the input thread that belong to no slot: kept as they
    /// were.
    foreign: BTreeMap<String, Box<Thread>>,
    slots: Vec<Arc<Thread>>,
    /// The workflow state, its scheduling part taken out.
    state: WorkflowState,
    /// The run's state values, changed by the replies it applies.
    values: StateSnapshot,
}

impl ThreadSlots {
    /// Takes `thread` apart into `spec`'s slots; returns them and the
    /// scheduling state other owners keep while the run goes on.
    pub(super) fn take_apart(spec: &Spec, mut thread: Thread) -> (Self, Scheduling) {
        let mut children = std::mem::take(thread.children_mut());
        let mut state = thread.state_mut().take().unwrap_or_default();
        // Slots with no thread yet share one empty thread: a turn's first
        // append copies it (`slot_mut`), and the agents of a large team
        // that never speak cost no thread of their own (~200 bytes each).
        let empty = Arc::new(Thread::default());
        let slots = spec
            .slot_names
            .iter()
            .map(|n| children.remove(n).map_or_else(|| empty.clone(), Arc::from))
            .collect();
        // The requests stay: the state keeps them until they are answered.
        let carried = state.scheduler.take();
        state.scheduler =
            SchedulerState::new(None, carried.requests, Vec::new(), StateSnapshot::default());
        let scheduling = Scheduling {
            pending: std::mem::take(&mut state.pending),
            graph: carried.graph,
            interrupted: carried.interrupted,
            new_requests: Vec::new(),
            counters: carried.counters,
            progress: Vec::new(),
            held: carried.held,
        };
        let slots = ThreadSlots {
            root: thread,
            foreign: children,
            slots,
            state,
            values: carried.values,
        };
        (slots, scheduling)
    }

    /// The thread as it is now, with `scheduling`, without disturbing the
    /// run (for a checkpoint).
    pub(super) fn to_thread(&self, spec: &Spec, scheduling: Scheduling) -> Thread {
        put_together(
            spec,
            self.root.clone(),
            self.foreign.clone(),
            self.slots.iter().cloned(),
            with_values(self.state.clone(), self.values.clone()),
            scheduling,
        )
    }

    /// The run thread's children as they stand, by name (for a
    /// checkpoint: nothing is copied). `progress` is what nested runs
    /// under way reported: their slots are written as reported.
    pub(super) fn children_view<'a>(
        &'a self,
        spec: &'a Spec,
        progress: &'a [(usize, Arc<Thread>)],
    ) -> Vec<(&'a str, &'a Thread)> {
        // Both in name order: merged.
        let mut children = Vec::with_capacity(self.foreign.len() + spec.slots_by_name.len());
        let mut foreign = self.foreign.iter().peekable();
        for &s in &spec.slots_by_name {
            let name = spec.slot_names[s].as_str();
            while let Some((n, t)) = foreign.next_if(|(n, _)| n.as_str() < name) {
                children.push((n.as_str(), &**t));
            }
            // A slot's thread takes the place of a child of its name.
            foreign.next_if(|(n, _)| n.as_str() == name);
            let slot = match progress.iter().find(|(p, _)| *p == s) {
                Some((_, reported)) => reported,
                None => &self.slots[s],
            };
            children.push((name, &**slot));
        }
        children.extend(foreign.map(|(n, t)| (n.as_str(), &**t)));
        children
    }

    /// The scheduler's part of the run thread's state as it would be put
    /// together with `graph`, `new_requests` and `interrupted` (see
    /// [`settle`]), for a checkpoint.
    pub(super) fn scheduler_with(
        &self,
        graph: Option<Cursor>,
        new_requests: &[InputRequest],
        interrupted: Vec<String>,
    ) -> SchedulerState {
        let mut requests = self.state.scheduler.requests().to_vec();
        requests.extend_from_slice(new_requests);
        SchedulerState::new(graph, requests, interrupted, self.values.clone())
    }

    /// The run thread's workflow state as it stands, in parts, with
    /// `scheduler` (see [`ThreadSlots::scheduler_with`]); the inboxes'
    /// contents are for their owner to fill in.
    pub(super) fn state_view<'a>(&'a self, scheduler: &'a SchedulerState) -> StateView<'a> {
        StateView {
            consumed: self.root.len(),
            pending: Vec::new(),
            waiting: Vec::new(),
            turns: self.state.turns,
            last_speaker: &self.state.last_speaker,
            scheduler,
        }
    }

    /// The thread put back together with `scheduling`, at the run's end.
    pub(super) fn into_thread(self, spec: &Spec, scheduling: Scheduling) -> Thread {
        put_together(
            spec,
            self.root,
            self.foreign,
            self.slots,
            with_values(self.state, self.values),
            scheduling,
        )
    }

    /// The run thread's own messages.
    #[inline]
    pub(super) fn root(&self) -> &Thread {
        &self.root
    }

    /// The run thread's own messages, to append to.
    #[inline]
    pub(super) fn root_mut(&mut self) -> &mut Thread {
        &mut self.root
    }

    /// The workflow state (its scheduling part is elsewhere).
    #[inline]
    pub(super) fn state(&self) -> &WorkflowState {
        &self.state
    }

    /// The workflow state, to update.
    #[inline]
    pub(super) fn state_mut(&mut self) -> &mut WorkflowState {
        &mut self.state
    }

    /// The run's state values as they stand.
    #[inline]
    pub(super) fn values(&self) -> &StateSnapshot {
        &self.values
    }

    /// Starts from `values` instead of the thread's (a nested run starts
    /// from its parent's).
    pub(super) fn set_values(&mut self, values: StateSnapshot) {
        self.values = values;
    }

    /// Applies a reply's changes to the state values.
    #[inline]
    pub(super) fn apply_state(&mut self, delta: &StateDelta) {
        self.values.apply(delta);
    }

    /// Slot `s`'s thread, to lend to a turn.
    #[inline]
    pub(super) fn slot(&self, s: usize) -> &Arc<Thread> {
        &self.slots[s]
    }

    /// Slot `s`'s thread, to append to (copied first if a turn still holds
    /// it).
    #[inline]
    pub(super) fn slot_mut(&mut self, s: usize) -> &mut Thread {
        Arc::make_mut(&mut self.slots[s])
    }

    /// Trims every slot's thread to its last `keep` messages.
    pub(super) fn forget_oldest_in_slots(&mut self, keep: usize) {
        for slot in &mut self.slots {
            if slot.len() > keep {
                Arc::make_mut(slot).forget_oldest(keep);
            }
        }
    }

    /// Replaces slot `s`'s thread (a turn gave back a new one).
    #[inline]
    pub(super) fn replace(&mut self, s: usize, thread: Thread) {
        self.slots[s] = Arc::new(thread);
    }
}

/// `state` with the run's state values in its scheduler part (where
/// [`put_together`] takes them from).
fn with_values(mut state: WorkflowState, values: StateSnapshot) -> WorkflowState {
    state.scheduler.body_mut().values = values;
    state
}

/// Puts a thread back together: the used slots (or the progress reported
/// for them) become children under their names beside the foreign ones
/// (a slot's taking the place of a foreign child of its name), and the
/// state gets its scheduling part back, counting every message of the
/// thread as taken in.
fn put_together(
    spec: &Spec,
    mut root: Thread,
    mut children: BTreeMap<String, Box<Thread>>,
    slots: impl IntoIterator<Item = Arc<Thread>>,
    state: WorkflowState,
    scheduling: Scheduling,
) -> Thread {
    let mut slots: Vec<Option<Arc<Thread>>> = slots.into_iter().map(Some).collect();
    // The first report for a slot counts (as a checkpoint writes it).
    for (s, reported) in scheduling.progress.iter().rev() {
        if let Some(slot) = slots.get_mut(*s) {
            *slot = Some(reported.clone());
        }
    }
    // The used slots in name order: the map is built in one pass, where an
    // insert per slot searched it and shifted its nodes' threads (K =
    // 1,000: ~1,800 instructions a slot).
    // (Gathered in a vector of the right size first: collected straight
    // into the map, the vector under it grows by copying its threads.)
    let mut used = Vec::with_capacity(spec.slots_by_name.len());
    for &s in &spec.slots_by_name {
        if let Some(slot) = slots.get_mut(s).and_then(Option::take) {
            // A slot still lent (or borrowed for a checkpoint) is copied.
            let t = Arc::try_unwrap(slot).unwrap_or_else(|shared| (*shared).clone());
            used.push((spec.slot_names[s].clone(), Box::new(t)));
        }
    }
    children.append(&mut BTreeMap::from_iter(used));
    *root.children_mut() = children;
    let len = root.len();
    *root.state_mut() = Some(settle(state, scheduling, len));
    root
}

/// `state` with its scheduling part back, counting the `len` messages of
/// the run thread as taken in.
fn settle(mut state: WorkflowState, scheduling: Scheduling, len: usize) -> WorkflowState {
    let carried = state.scheduler.take();
    let mut requests = carried.requests;
    requests.extend(scheduling.new_requests);
    state.scheduler = SchedulerState::new(
        scheduling.graph,
        requests,
        scheduling.interrupted,
        carried.values,
    );
    if let Some(counters) = scheduling.counters {
        state.scheduler.set_counters(counters);
    }
    state.scheduler.set_held(scheduling.held);
    state.pending = scheduling.pending;
    state.consumed = len;
    state
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FnAgent, Workflow};

    /// Two participants sharing the slot "pair", and one of their own.
    fn spec() -> Arc<Spec> {
        Workflow::builder()
            .participant(FnAgent::sync("a", |_: &Thread| Ok("")))
            .participant(FnAgent::sync("b", |_: &Thread| Ok("")))
            .participant(FnAgent::sync("c", |_: &Thread| Ok("")))
            .shared_thread("pair", ["a", "b"])
            .build()
            .unwrap()
            .spec
    }

    fn thread() -> Thread {
        let mut t = Thread::from_messages([Message::user("hi"), Message::text("c", "yo")]);
        let said = |text: &str| Box::new(Thread::from_messages([Message::user(text)]));
        let children = t.children_mut();
        children.insert("pair".into(), said("p"));
        children.insert("c".into(), said("q"));
        children.insert("elsewhere".into(), said("x"));
        let mut state = WorkflowState {
            consumed: 1,
            turns: 4,
            last_speaker: Some("c".into()),
            ..WorkflowState::default()
        };
        state
            .pending
            .insert("c".into(), vec![Arc::new(Message::user("waiting"))]);
        state.scheduler.body_mut().interrupted.push("a".into());
        state.scheduler.body_mut().values = [("k", "v")].into_iter().collect();
        state.scheduler.body_mut().requests.push(InputRequest {
            id: "r1".into(),
            agent: "c".into(),
            prompt: "when?".into(),
        });
        *t.state_mut() = Some(state);
        t
    }

    #[test]
    fn a_thread_taken_apart_and_put_back_together_is_whole() {
        let spec = spec();
        let original = thread();
        let (slots, scheduling) = ThreadSlots::take_apart(&spec, original.clone());
        assert_eq!(scheduling.interrupted, ["a"]);
        assert_eq!(scheduling.pending.len(), 1);
        assert_eq!(slots.values().get("k"), Some("v"));
        assert_eq!(slots.slot(spec.slot_of[0]).len(), 1);
        assert!(Arc::ptr_eq(
            slots.slot(spec.slot_of[0]),
            slots.slot(spec.slot_of[1])
        ));
        let now = slots.to_thread(&spec, scheduling.clone());
        let end = slots.into_thread(&spec, scheduling);
        assert_eq!(now, end);
        let mut expected = original;
        if let Some(state) = expected.state_mut() {
            state.consumed = 2;
        }
        assert_eq!(end, expected);
    }

    #[test]
    fn slots_with_no_thread_share_one_empty_thread_until_written() {
        let spec = spec();
        let (mut slots, scheduling) = ThreadSlots::take_apart(&spec, Thread::default());
        let (pair, c) = (spec.slot_of[0], spec.slot_of[2]);
        assert_ne!(pair, c);
        assert!(Arc::ptr_eq(slots.slot(pair), slots.slot(c)));
        slots.slot_mut(c).push(Message::user("q"));
        assert_eq!(slots.slot(c).len(), 1);
        assert!(slots.slot(pair).is_empty(), "the other stays empty");
        let end = slots.into_thread(&spec, scheduling);
        assert_eq!(end.child("c").map(Thread::len), Some(1));
        assert_eq!(end.child("pair").map(Thread::len), Some(0));
    }

    #[test]
    fn a_checkpoint_holds_the_progress_reported_for_a_slot_and_the_counters() {
        let spec = spec();
        let (slots, mut scheduling) = ThreadSlots::take_apart(&spec, thread());
        assert!(scheduling.counters.is_none());
        let c = spec.slot_of[2];
        let reported = Arc::new(Thread::from_messages([
            Message::user("q"),
            Message::text("c", "on"),
        ]));
        scheduling.progress.push((c, reported.clone()));
        scheduling.counters = Some(RunCounters {
            turns: 2,
            ..RunCounters::default()
        });
        let t = slots.to_thread(&spec, scheduling.clone());
        assert_eq!(t.child("c"), Some(&*reported));
        assert_eq!(
            t.child("pair").map(Thread::len),
            Some(1),
            "the others as they are"
        );
        // Taken apart again, the counters come back out.
        let (_, again) = ThreadSlots::take_apart(&spec, t);
        assert_eq!(again.counters.map(|c| c.turns), Some(2));
        // Without progress, the slot is the run's own.
        scheduling.progress.clear();
        let t = slots.into_thread(&spec, scheduling);
        assert_eq!(t.child("c").map(Thread::len), Some(1));
    }

    #[test]
    fn putting_together_adds_the_runs_questions_to_the_earlier_ones() {
        let spec = spec();
        let (slots, mut scheduling) = ThreadSlots::take_apart(&spec, thread());
        scheduling.new_requests.push(InputRequest {
            id: "r2".into(),
            agent: "a".into(),
            prompt: "why?".into(),
        });
        scheduling.interrupted.clear();
        let t = slots.into_thread(&spec, scheduling);
        let scheduler = &t.state().unwrap().scheduler;
        let ids: Vec<_> = scheduler.requests().iter().map(|r| r.id.as_str()).collect();
        assert_eq!(ids, ["r1", "r2"]);
        assert!(scheduler.body().unwrap().interrupted.is_empty());
    }
}
