//! A participant's turn from start to end: its input taken from its inbox,
//! its thread lent to its actor, its outcome received, its retries, and
//! the loss of its actor.

use std::sync::Arc;

use tokio::time::Instant;

use troupe_router::Readiness;

use super::core::RunCore;
use super::participants::TurnState;
use super::phase::Failure;
use crate::agent::{ErrorKind, Reply};
use crate::event::Event;
use crate::graph::node_input;
use crate::message::Message;
use crate::resumable::status::RunStatus;
use crate::stats::RunStats;
use crate::stop::Trigger;
use crate::workflow::agent_actor::first_poll;
use crate::workflow::protocol::{
    AgentMsg, RunAddr, RunMsg, TurnEnd, TurnOutcome, TurnTicket, WaitingTurn, elapsed_since,
};

impl RunCore {
    /// Takes what participant `i` reads this turn — a full batch, or with
    /// `all` everything in its inbox — shaped by its input mode.
    pub(super) fn take_batch(&mut self, i: usize, all: bool) -> Vec<Arc<Message>> {
        let batch = self.inboxes.take(&self.spec, &self.ctx, i, all);
        let spec = &*self.spec;
        node_input::render(&spec.inputs[i], batch, |step| spec.description_of(step))
    }

    /// Starts participant `i`'s turn if its inbox is ready (or, with
    /// `flush`, holds anything).
    pub(super) async fn try_start(&mut self, i: usize, flush: bool, myself: &RunAddr) {
        if !flush {
            match self.inboxes.readiness(i, self.inboxes.now()) {
                Readiness::Ready => {}
                Readiness::Waiting { until: Some(t) } => {
                    self.wake.arm(t, myself);
                    return;
                }
                _ => return,
            }
        }
        let batch = self.take_batch(i, flush);
        if !batch.is_empty() {
            self.start_turn(i, batch, None, myself).await;
        }
    }

    /// Appends `batch` to participant `i`'s thread and lends it the thread
    /// for a turn, its span a child of `parent` (a superstep's) or else of
    /// the run's.
    pub(super) async fn start_turn(
        &mut self,
        i: usize,
        batch: Vec<Arc<Message>>,
        parent: Option<&tracing::Span>,
        myself: &RunAddr,
    ) {
        let handle = match self.parts.actor_for(i).await {
            Ok(a) => a,
            Err(reason) => {
                let agent = self.parts.path(i);
                self.fail(Failure::Lost { agent, reason });
                return;
            }
        };
        let taken = batch.len();
        let slot = self.spec.slot_of[i];
        if taken > 0 {
            self.threads.slot_mut(slot).extend_shared(batch);
            self.keep_history(slot);
        }
        self.checkpoints.touch();
        let state = self.threads.values();
        let parent = parent.unwrap_or(&*self.span);
        let thread = self.threads.slot(slot).clone();
        let ctx = self.parts.turn(i, &thread, myself, state, parent);
        let timed = ctx.events_enabled();
        // The agent's actor idle (nothing in its inbox, not polling a turn
        // of another run): the turn is polled here, on the run's task, as
        // the actor would have — no hop there and back. Its end is taken
        // in after this drive (`settle`); a turn still waiting is polled on
        // beside the mailbox, as one sent back by the actor is. (Not the
        // turns of a fan-out on a multi-threaded runtime: on their actors'
        // tasks they run in parallel.)
        if !self.fanning
            && let Some(claim) = handle.gate.try_inline()
        {
            self.parts.set(i, TurnState::Running);
            self.emit_started(i, taken);
            let started = timed.then(Instant::now);
            let back = if ctx.cancellation().is_cancelled() {
                Ok(TurnOutcome::Cancelled)
            } else {
                first_poll(self.spec.agents[i].clone(), thread, ctx).await
            };
            drop(claim);
            match back {
                Ok(outcome) => self.ended.push(TurnEnd {
                    index: i,
                    outcome,
                    elapsed: elapsed_since(started),
                }),
                Err(turn) => self.waiting.push(WaitingTurn::new(i, started, turn)),
            }
            return;
        }
        let turn = AgentMsg::Turn {
            thread,
            ctx,
            ticket: TurnTicket::new(myself.clone(), i, timed),
        };
        // Told before the turn is sent: on a multi-threaded runtime its
        // actor may poll it — and the agent stream its first words —
        // before this task runs another line, and every reader of the
        // event log (a streamed chat completion, AG-UI, A2A) takes the
        // agent's words as those of the turn it last saw start.
        self.emit_started(i, taken);
        handle.gate.queue();
        if let Err(e) = handle.actor.cast(turn) {
            handle.gate.unqueue();
            // A kept actor may have died with the runtime that ran it (a
            // workflow reused under another runtime): the same turn, given
            // back by the failed send, goes to one fresh spawn.
            self.parts.forget_actor(i);
            let sent = match e {
                ractor::MessagingErr::SendErr(turn) => match self.parts.actor_for(i).await {
                    Ok(fresh) => {
                        fresh.gate.queue();
                        let sent = fresh.actor.cast(turn).is_ok();
                        if !sent {
                            fresh.gate.unqueue();
                        }
                        sent
                    }
                    Err(_) => false,
                },
                _ => false,
            };
            if !sent {
                let agent = self.parts.path(i);
                self.fail(Failure::Lost {
                    agent,
                    reason: "its actor no longer takes messages".into(),
                });
                return;
            }
        }
        self.parts.set(i, TurnState::Running);
    }

    /// Tells the event sink participant `i` started a turn on `batch`
    /// messages.
    fn emit_started(&self, i: usize, batch: usize) {
        self.ctx.emit_with(|| Event::AgentStarted {
            path: self.parts.ctx(i).path().clone(),
            batch,
        });
    }

    /// Takes in a participant's turn's `end` (see `RunState::turn_done`):
    /// its spend, a failure retried or failing the run, a turn cut short
    /// becoming `cut_short`. Returns the reply of a turn that finished.
    pub(super) fn end_turn(
        &mut self,
        end: TurnEnd,
        cut_short: TurnState,
        myself: &RunAddr,
    ) -> Option<Box<Reply>> {
        let TurnEnd {
            index,
            outcome,
            elapsed,
        } = end;
        if !self.parts.running(index) {
            // A turn this run no longer waits for: what it spent still
            // counts.
            self.fold_spend(index, None, false);
            return None;
        }
        let outcome = match outcome {
            // As if the actor had failed: retried as a panic, or the run
            // fails.
            TurnOutcome::Panicked(text) => {
                self.actor_lost(index, Some(text), cut_short, myself);
                return None;
            }
            TurnOutcome::Lost => {
                self.parts.forget_actor(index);
                self.actor_lost(index, None, cut_short, myself);
                return None;
            }
            other => other,
        };
        let reported = self.parts.take_progress(index);
        self.parts.set(index, TurnState::Idle);
        let reply = match outcome {
            TurnOutcome::Done(mut reply) => {
                self.fold_spend(index, Some(&reply), true);
                // Outputs the turn yielded come before its reply's own.
                if let Some(meter) = self.parts.ctx(index).meter() {
                    let mut yielded = meter.take_yielded();
                    if !yielded.is_empty() {
                        yielded.append(&mut reply.messages);
                        reply.messages = yielded;
                    }
                }
                reply
            }
            // A nested run stopped gracefully with this one: its turn was
            // cut short, and runs again on resume.
            TurnOutcome::Failed(source)
                if source.kind() == ErrorKind::Cancelled
                    && self.phase.is_stopping_with(&RunStatus::Interrupted) =>
            {
                self.fold_spend(index, None, false);
                // It goes on from where it reported it stopped (a nested
                // run reports as it ends interrupted): what it finished
                // is not done again.
                if let Some(thread) = reported {
                    let slot = self.spec.slot_of[index];
                    self.threads.replace(slot, Arc::unwrap_or_clone(thread));
                }
                self.parts.set(index, cut_short);
                return None;
            }
            TurnOutcome::Failed(source) => {
                self.fold_spend(index, None, true);
                let text = source.to_string();
                let path = self.parts.ctx(index).path().clone();
                self.ctx.emit_with(|| Event::AgentFailed {
                    path: path.clone(),
                    kind: source.kind(),
                    error: text.clone(),
                    attempt: self.parts.failures(index) + 1,
                });
                if !self.retry_later(index, Some(source.kind()), &text, cut_short, myself) {
                    self.fail(Failure::Failed {
                        agent: path.to_string(),
                        source: *source,
                    });
                }
                return None;
            }
            TurnOutcome::Panicked(_) | TurnOutcome::Lost => return None,
            TurnOutcome::Cancelled => {
                self.fold_spend(index, None, false);
                // A nested run cut short goes on from what it last
                // reported when its turn runs again.
                if let Some(thread) = reported {
                    let slot = self.spec.slot_of[index];
                    self.threads.replace(slot, Arc::unwrap_or_clone(thread));
                }
                // Cut short: it runs again when the run resumes. (A graph's
                // interrupted superstep is re-activated whole instead.)
                self.parts.set(index, cut_short);
                // The turn may learn of the caller's cancel before the
                // watcher's message arrives: the run is cancelled either way.
                if self.ctx.cancellation().is_cancelled() {
                    self.stop_now(RunStatus::Cancelled);
                }
                return None;
            }
        };
        self.parts.succeeded(index);
        self.ctx.emit_with(|| Event::AgentFinished {
            path: self.parts.ctx(index).path().clone(),
            produced: reply.messages.len(),
            elapsed_ms: elapsed.as_secs_f64() * 1e3,
        });
        Some(reply)
    }

    /// Folds what participant `index`'s turn spent (its meter, or its
    /// `reply`'s usage) into the run's stats — `ended` counts the turn —
    /// and stops the run if that exhausts a budget.
    fn fold_spend(&mut self, index: usize, reply: Option<&Reply>, ended: bool) {
        let ctx = self.parts.ctx(index);
        // A turn that did not end with a reply yields nothing.
        if reply.is_none()
            && let Some(meter) = ctx.meter()
        {
            drop(meter.take_yielded());
        }
        let reported = self.parts.metered(index);
        self.tally
            .fold_turn(index, ctx.path(), ctx.meter(), reply, (ended, reported));
        self.judge_spend();
    }

    /// Folds what participant `index`'s turn `seq` reported it spent with
    /// its progress (see [`Tally::fold_reported`](super::tally::Tally::fold_reported)),
    /// and stops the run if that exhausts a budget. Counted whether or not
    /// the run still waits for that turn: it was spent.
    pub(super) fn fold_reported(&mut self, index: usize, seq: u64, spent: &RunStats) {
        self.parts.reported_spend(index, seq);
        let path = self.parts.ctx(index).path().clone();
        self.tally.fold_reported(index, &path, spent);
        self.judge_spend();
    }

    /// Shows the stop condition what the run spent in all.
    fn judge_spend(&mut self) {
        let total = self.tally.stats.total;
        if let Some(reason) = self.observe(Trigger::Spent(&total)) {
            self.phase.stop_gracefully(RunStatus::Stopped(reason));
        }
    }

    /// Schedules another attempt of participant `index`'s failed turn if
    /// its retry policy allows; returns whether it did.
    fn retry_later(
        &mut self,
        index: usize,
        kind: Option<ErrorKind>,
        error: &str,
        cut_short: TurnState,
        myself: &RunAddr,
    ) -> bool {
        if self.phase.is_failing() || self.parts.turns_cancelled() {
            return false;
        }
        let Some(policy) = &self.spec.retries[index] else {
            return false;
        };
        let attempt = self.parts.failed_attempt(index);
        if !policy.should_retry_error(attempt, kind, error) {
            return false;
        }
        if self.phase.is_stopping_with(&RunStatus::Interrupted) {
            // No new attempt while stopping gracefully: it runs on resume.
            self.parts.set(index, cut_short);
            return true;
        }
        let delay = policy.delay(attempt);
        self.parts.set(index, TurnState::BackingOff);
        self.ctx.emit_with(|| Event::Retry {
            path: self.parts.ctx(index).path().clone(),
            attempt,
            error: error.to_string(),
            delay_ms: delay.as_secs_f64() * 1e3,
        });
        myself.send_after(delay, move || RunMsg::Retry { index });
        true
    }

    /// A retry's backoff is over: the same turn again, on the same thread,
    /// started by the next drive (the actor may have to be spawned again,
    /// which takes an await).
    pub(super) fn retry_now(&mut self, index: usize) {
        if self.parts.state(index) != TurnState::BackingOff {
            return; // interrupted meanwhile
        }
        self.parts.set(index, TurnState::Idle);
        self.restart.push(index);
    }

    /// Participant `index`'s actor went away, having `failed` with this
    /// text or stopped: a turn it had under way is retried as a panic or
    /// fails the run (a retry not run now becoming `cut_short`); an idle
    /// actor is spawned again when needed.
    fn actor_lost(
        &mut self,
        index: usize,
        failed: Option<String>,
        cut_short: TurnState,
        myself: &RunAddr,
    ) {
        if !self.parts.busy(index) {
            return;
        }
        self.parts.set(index, TurnState::Idle);
        self.fold_spend(index, None, failed.is_some());
        let agent = self.parts.path(index);
        match failed {
            Some(message) => {
                self.ctx.emit_with(|| Event::AgentFailed {
                    path: self.parts.ctx(index).path().clone(),
                    kind: ErrorKind::Failed,
                    error: format!("panicked: {message}"),
                    attempt: self.parts.failures(index) + 1,
                });
                if !self.retry_later(index, None, &message, cut_short, myself) {
                    self.fail(Failure::Panicked { agent, message });
                }
            }
            None => self.fail(Failure::Lost {
                agent,
                reason: "its actor was stopped".into(),
            }),
        }
    }
}
