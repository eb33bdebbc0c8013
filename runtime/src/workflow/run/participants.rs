//! The run's participants: each one's actor, context, retry attempts,
//! where its turn stands ([`TurnState`]) and, for a nested run as its turn,
//! the progress it last reported. The turns in flight are derived from
//! those states; nothing else counts them.

use std::cell::OnceCell;
use std::sync::Arc;

use ractor::Actor;
use tokio_util::sync::CancellationToken;

use crate::context::RunContext;
use crate::progress::Progress;
use crate::state::StateSnapshot;
use crate::stats::Meter;
use crate::thread::Thread;
use crate::workflow::actor_pool::AgentHandle;
use crate::workflow::agent_actor::{AgentActor, AgentArgs};
use crate::workflow::agent_gate::AgentGate;
use crate::workflow::protocol::{RunAddr, RunMsg};
use crate::workflow::spec::Spec;

/// Where one participant's turn stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum TurnState {
    /// No turn under way.
    Idle,
    /// A turn is under way on its actor.
    Running,
    /// A failed turn waits out its retry's backoff.
    BackingOff,
    /// Its turn was cancelled midway: it runs again when the run resumes.
    CutShort,
}

impl TurnState {
    /// Whether the run waits for this participant before it can end (and
    /// no other turn of it may start).
    #[inline]
    pub(super) fn is_in_flight(self) -> bool {
        matches!(self, TurnState::Running | TurnState::BackingOff)
    }

    /// Whether a run resumed from a checkpoint taken now runs this
    /// participant's turn again (its input is in its thread already).
    fn runs_again(self) -> bool {
        self != TurnState::Idle
    }
}

struct Participant {
    actor: Option<AgentHandle>,
    state: TurnState,
    /// Failed attempts of the current turn.
    attempts: u32,
    /// Made when first needed (see [`Participants::ctx`]): most agents of
    /// a large team wait unwoken through a run, and a context with its
    /// meter is two allocations (~400 bytes) each.
    ctx: OnceCell<RunContext>,
    /// Which turn is under way: its progress reports carry it.
    seq: u64,
    /// What the nested run that is the turn under way last reported: its
    /// thread as a checkpoint would hold it. Kept while the turn runs
    /// (and for a turn cut short), dropped when it ends otherwise.
    progress: Option<Arc<Thread>>,
    /// The turn under way reported what it spent with its progress: it
    /// metered its spend (its reply's usage is not counted instead).
    metered: bool,
}

/// Every participant of one run, by index.
pub(super) struct Participants {
    /// The workflow: its agents, and the pool their actors come from.
    spec: Arc<Spec>,
    parts: Vec<Participant>,
    /// How many participants are in a state in flight: the count over
    /// `parts`, kept by [`Participants::set`], the one place a state
    /// changes.
    in_flight: usize,
    /// Cancelled when turns under way must end now.
    turns: CancellationToken,
    /// What participants' contexts derive from: the run's context, the
    /// participants' paths, and the run state as it started (a turn's
    /// context is given the state of its turn, see [`Participants::turn`]).
    base: RunContext,
    paths: Arc<[Arc<str>]>,
    state: StateSnapshot,
    /// Whether turns get a progress hook (the run checkpoints).
    hooks: bool,
    /// The last turn's number.
    last_seq: u64,
}

impl Participants {
    /// Every participant of `spec` idle, with a context under `ctx` seeing
    /// the run's state `state` (so a first turn, the state unchanged,
    /// makes no context of its own).
    pub(super) fn new(spec: &Arc<Spec>, ctx: &RunContext, state: &StateSnapshot) -> Self {
        let turns = ctx.cancellation().child_token();
        let paths = spec.child_paths.under(ctx, &spec.names);
        let parts = paths
            .iter()
            .map(|_| Participant {
                actor: None,
                state: TurnState::Idle,
                attempts: 0,
                ctx: OnceCell::new(),
                seq: 0,
                progress: None,
                metered: false,
            })
            .collect();
        Participants {
            spec: spec.clone(),
            parts,
            in_flight: 0,
            turns,
            base: ctx.clone(),
            paths,
            state: state.clone(),
            hooks: false,
            last_seq: 0,
        }
    }

    /// Participant `i`'s context, made the first time it is asked for.
    fn part_ctx(&self, i: usize) -> &RunContext {
        self.parts[i].ctx.get_or_init(|| {
            let path = &self.paths[i];
            // A meter of its own: what its turns spend is folded in when
            // each ends (see `Tally::fold_turn`). Its turns are dropped
            // once `turns` is cancelled (the run drops a turn it polls; a
            // turn's task races the token).
            self.base
                .derive_metered(
                    path.clone(),
                    self.turns.clone(),
                    self.base.deadline(),
                    Some(Meter::new(path.clone())),
                )
                .into_turns(&self.state)
        })
    }

    /// Gives every turn from now on a progress hook: a nested run as the
    /// turn reports where it stands (the run checkpoints).
    pub(super) fn hand_out_hooks(&mut self) {
        self.hooks = true;
    }

    /// Takes in what participant `i`'s turn `seq`, a nested run, reports;
    /// returns whether it is news (a report of an earlier turn, or of a
    /// turn no longer under way, is not).
    pub(super) fn progressed(&mut self, i: usize, seq: u64, thread: Thread) -> bool {
        let part = &mut self.parts[i];
        if part.state != TurnState::Running || part.seq != seq {
            return false;
        }
        part.progress = Some(Arc::new(thread));
        true
    }

    /// Takes what participant `i`'s turn last reported, if anything.
    pub(super) fn take_progress(&mut self, i: usize) -> Option<Arc<Thread>> {
        self.parts[i].progress.take()
    }

    /// Notes that participant `i`'s turn `seq` reported what it spent
    /// (counted by the run as it came); returns whether that turn is still
    /// the one under way.
    pub(super) fn reported_spend(&mut self, i: usize, seq: u64) -> bool {
        let part = &mut self.parts[i];
        let current = part.seq == seq;
        if current {
            part.metered = true;
        }
        current
    }

    /// Whether participant `i`'s turn reported spend with its progress
    /// (see [`Participants::reported_spend`]).
    #[inline]
    pub(super) fn metered(&self, i: usize) -> bool {
        self.parts[i].metered
    }

    /// What the turns under way last reported, by participant.
    pub(super) fn progress(&self) -> impl Iterator<Item = (usize, &Arc<Thread>)> + '_ {
        self.parts
            .iter()
            .enumerate()
            .filter_map(|(i, p)| p.progress.as_ref().map(|t| (i, t)))
    }

    /// How many participants there are.
    #[inline]
    pub(super) fn len(&self) -> usize {
        self.parts.len()
    }

    /// Where participant `i`'s turn stands.
    #[inline]
    pub(super) fn state(&self, i: usize) -> TurnState {
        self.parts[i].state
    }

    /// Moves participant `i` to `state` (a turn's progress stays only
    /// while it runs).
    #[inline]
    pub(super) fn set(&mut self, i: usize, state: TurnState) {
        let part = &mut self.parts[i];
        let was = part.state.is_in_flight();
        part.state = state;
        if state != TurnState::Running {
            part.progress = None;
        }
        match (was, state.is_in_flight()) {
            (false, true) => self.in_flight += 1,
            // `in_flight` counts the parts in flight, this one among them:
            // it is at least 1 here.
            (true, false) => self.in_flight -= 1,
            _ => {}
        }
    }

    /// How many participants the run waits for: turns under way and
    /// retries backing off.
    #[inline]
    pub(super) fn in_flight(&self) -> usize {
        self.in_flight
    }

    /// The participants whose turn runs again on resume, by index.
    pub(super) fn to_run_again(&self) -> impl Iterator<Item = usize> + '_ {
        self.parts
            .iter()
            .enumerate()
            .filter(|(_, p)| p.state.runs_again())
            .map(|(i, _)| i)
    }

    /// Participant `i`'s path, for errors.
    pub(super) fn path(&self, i: usize) -> String {
        self.ctx(i).path().to_string()
    }

    /// Whether participant `i` has a turn under way (or backing off).
    #[inline]
    pub(super) fn busy(&self, i: usize) -> bool {
        self.state(i).is_in_flight()
    }

    /// Whether participant `i`'s turn is under way.
    #[inline]
    pub(super) fn running(&self, i: usize) -> bool {
        self.state(i) == TurnState::Running
    }

    /// Participant `i`'s context (its path names it in events).
    #[inline]
    pub(super) fn ctx(&self, i: usize) -> &RunContext {
        self.part_ctx(i)
    }

    /// Counts a failed attempt of participant `i`'s turn; returns how many
    /// have failed.
    pub(super) fn failed_attempt(&mut self, i: usize) -> u32 {
        self.parts[i].attempts += 1;
        self.parts[i].attempts
    }

    /// How many times in a row participant `i`'s turn has failed.
    #[inline]
    pub(super) fn failures(&self, i: usize) -> u32 {
        self.parts[i].attempts
    }

    /// Participant `i`'s turn succeeded: its next failure is a first one.
    #[inline]
    pub(super) fn succeeded(&mut self, i: usize) {
        self.parts[i].attempts = 0;
    }

    /// Whether the run's turns were told to end.
    #[inline]
    pub(super) fn turns_cancelled(&self) -> bool {
        self.turns.is_cancelled()
    }

    /// Ends every turn under way now, and every retry still backing off.
    pub(super) fn cancel_turns(&mut self) {
        self.turns.cancel();
        for i in 0..self.parts.len() {
            if self.parts[i].state == TurnState::BackingOff {
                self.set(i, TurnState::Idle);
            }
        }
    }

    /// Ends every retry still backing off, each becoming `to` (see
    /// `Scheduling::cut_short`).
    pub(super) fn cut_backoffs(&mut self, to: TurnState) {
        for i in 0..self.parts.len() {
            if self.parts[i].state == TurnState::BackingOff {
                self.set(i, to);
            }
        }
    }

    /// The context of participant `i`'s new turn on `thread` in run
    /// `run`, seeing run state `state` (with a progress hook if the run
    /// hands them out), its span a child of `parent`.
    #[inline]
    pub(super) fn turn(
        &mut self,
        i: usize,
        thread: &Arc<Thread>,
        run: &RunAddr,
        state: &StateSnapshot,
        parent: &tracing::Span,
    ) -> RunContext {
        // The context is made again only when the state changed.
        let current = self.part_ctx(i);
        if !current.state().same_as(state) {
            let moved = current.with_state(state.clone());
            self.parts[i].ctx = OnceCell::from(moved);
        }
        self.last_seq += 1;
        let seq = self.last_seq;
        let own = self.part_ctx(i);
        let ctx = if self.hooks {
            let run = run.clone();
            let meter = own.meter().cloned();
            own.with_progress(Progress::new(thread, move |thread| {
                // What the turn spent so far travels with the report
                // (taken on the reporting task, right as it reports):
                // a checkpoint holding the report counts it exactly.
                let spent = meter
                    .as_ref()
                    .map(Meter::take)
                    .filter(|s| !s.total.is_empty())
                    .map(Box::new);
                // The run may be over; then nobody needs the report.
                run.send(RunMsg::Progress {
                    index: i,
                    seq,
                    thread: Box::new(thread),
                    spent,
                });
            }))
        } else {
            own.clone()
        };
        let part = &mut self.parts[i];
        part.seq = seq;
        part.progress = None;
        part.metered = false;
        crate::telemetry::with_parent(ctx, parent)
    }

    /// Participant `i`'s actor: the one its workflow shares between its
    /// runs (spawned if none is up yet), or — a workflow that keeps no
    /// actors — one of this run's own, stopped when the run ends. Either
    /// way the run supervises its turns through their tickets, not the
    /// actor.
    pub(super) async fn actor_for(&mut self, i: usize) -> Result<AgentHandle, String> {
        if let Some(a) = &self.parts[i].actor {
            return Ok(a.clone());
        }
        let shared = self.spec.pool.as_ref();
        let actor = match shared.and_then(|p| p.get(i)) {
            Some(up) => up,
            None => {
                let gate = Arc::new(AgentGate::default());
                let args = AgentArgs {
                    agent: self.spec.agents[i].clone(),
                    gate: gate.clone(),
                };
                // Boxed, as the other rare awaits of a turn's path: every
                // future awaited here is part of the supervisor's drive,
                // which is built (and moved) for every message.
                let (actor, _) = Box::pin(Actor::spawn(None, AgentActor, args))
                    .await
                    .map_err(|e| format!("cannot start its actor: {e}"))?;
                let actor = AgentHandle { actor, gate };
                match shared {
                    Some(pool) => pool.share(i, actor),
                    None => actor,
                }
            }
        };
        self.parts[i].actor = Some(actor.clone());
        Ok(actor)
    }

    /// Drops this run's hold on participant `i`'s actor: it no longer
    /// takes messages (nor does the workflow share it any more).
    pub(super) fn forget_actor(&mut self, i: usize) {
        if let Some(actor) = self.parts[i].actor.take()
            && let Some(pool) = &self.spec.pool
        {
            pool.evict(i, &actor.actor);
        }
    }

    /// Lets go of the participants' actors as the run ends: shared ones
    /// serve the workflow's other runs on; the run's own stop with it (a
    /// turn still in one's inbox is reported lost, to nobody).
    pub(super) fn release_actors(&mut self) {
        let own = self.spec.pool.is_none();
        for part in &mut self.parts {
            if let Some(actor) = part.actor.take()
                && own
            {
                actor.actor.stop(None);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{FnAgent, Workflow};

    fn three() -> Participants {
        let wf = Workflow::builder()
            .participant(FnAgent::sync("a", |_: &Thread| Ok("")))
            .participant(FnAgent::sync("b", |_: &Thread| Ok("")))
            .participant(FnAgent::sync("c", |_: &Thread| Ok("")))
            .build()
            .unwrap();
        Participants::new(&wf.spec, &RunContext::new(), &StateSnapshot::default())
    }

    #[test]
    fn turns_in_flight_follow_the_states() {
        let mut p = three();
        assert_eq!(p.in_flight(), 0);
        p.set(0, TurnState::Running);
        p.set(1, TurnState::BackingOff);
        p.set(2, TurnState::CutShort);
        assert_eq!(p.in_flight(), 2);
        assert_eq!(p.to_run_again().collect::<Vec<_>>(), [0, 1, 2]);
        // Setting a state again changes nothing.
        p.set(0, TurnState::Running);
        assert_eq!(p.in_flight(), 2);
        p.set(1, TurnState::Running);
        assert_eq!(p.in_flight(), 2);
        p.set(0, TurnState::Idle);
        assert_eq!(p.in_flight(), 1);
        assert_eq!(p.to_run_again().collect::<Vec<_>>(), [1, 2]);
    }

    #[test]
    fn a_participant_gets_its_context_when_first_asked() {
        let p = three();
        assert!(p.parts.iter().all(|part| part.ctx.get().is_none()));
        assert_eq!(&**p.ctx(1).path(), "b");
        assert!(p.ctx(1).meter().is_some(), "with a meter of its own");
        assert!(p.ctx(1).is_dropped_on_cancel());
        assert!(p.parts[1].ctx.get().is_some());
        assert!(p.parts[0].ctx.get().is_none() && p.parts[2].ctx.get().is_none());
    }

    #[test]
    fn only_the_latest_progress_of_a_turn_under_way_is_kept() {
        let mut p = three();
        p.parts[0].seq = 7;
        p.set(0, TurnState::Running);
        let reported = Thread::from_messages([crate::Message::user("so far")]);
        assert!(!p.progressed(0, 6, reported.clone()), "an earlier turn's");
        assert!(!p.progressed(1, 0, reported.clone()), "no turn under way");
        assert!(p.progressed(0, 7, reported.clone()));
        let kept: Vec<_> = p.progress().map(|(i, t)| (i, t.len())).collect();
        assert_eq!(kept, [(0, 1)]);
        // A turn ending drops it (one cut short is taken first).
        p.set(0, TurnState::Idle);
        assert_eq!(p.progress().count(), 0);
        assert!(!p.progressed(0, 7, reported));
    }

    #[test]
    fn cancelling_turns_ends_backoffs_and_tells_turns_under_way() {
        let mut p = three();
        p.set(0, TurnState::Running);
        p.set(1, TurnState::BackingOff);
        p.cancel_turns();
        assert!(p.turns_cancelled());
        assert_eq!(p.state(1), TurnState::Idle);
        // A turn under way ends when it reports back, not before.
        assert_eq!(p.state(0), TurnState::Running);
        assert_eq!(p.in_flight(), 1);
    }
}
