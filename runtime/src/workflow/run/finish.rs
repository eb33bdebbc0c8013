//! Checkpoints of a run under way and its end: the thread put back
//! together, the last checkpoint saved (or, nested, the progress reported),
//! the result handed back — waiting for input while any question is open —
//! and the idle actors handed on to the workflow's next run.

use std::sync::Arc;

use super::RunState;
use super::checkpoints::NotSaved;
use super::core::RunCore;
use super::phase::{Failure, Phase};
use super::scheduling::Schedule;
use super::slots::Scheduling as Carried;
use super::tally::Tally;
use crate::checkpoint::snapshot_delta::{Counters, TreeView};
use crate::checkpoint::snapshot_refs::StateRef;
use crate::event::{Event, FinalStatus};
use crate::graph::cursor::Cursor;
use crate::resumable::held_reply::HeldReply;
use crate::resumable::scheduler_state::RunCounters;
use crate::resumable::status::RunStatus;
use crate::stop::StopTracker;
use crate::thread::Thread;
use crate::workflow::protocol::RunAddr;

/// What a checkpoint holds besides the thread tree — the run's counters,
/// borrowed from `tally` — with the status the run ended with (at its end).
fn snapshot_counters<'a>(
    tally: &'a Tally,
    tracker: Option<&StopTracker>,
    status: Option<RunStatus>,
) -> Counters<'a> {
    Counters {
        stop: tracker.map(|t| t.state()),
        stats: tally.stats_ref(),
        turns: tally.turns,
        last: tally.last.as_ref().map(|m| m.id),
        start_len: tally.start_len,
        started_at: tally.started_at,
        status,
    }
}

impl RunState {
    /// The scheduling state its owners hold now, for the thread.
    fn carried(&self) -> Carried {
        Carried {
            pending: self.core.inboxes.contents(&self.core.spec),
            graph: self.cursor_to_keep(),
            interrupted: self.interrupted(),
            new_requests: self.core.tally.waiting.clone(),
            counters: None,
            progress: self.core.reported_slots(),
            held: self.held_replies(),
        }
    }

    /// The replies of a superstep's finished turns a checkpoint keeps.
    fn held_replies(&self) -> Vec<HeldReply> {
        self.scheduling
            .graph()
            .map(|g| g.held(&self.core.spec.names))
            .unwrap_or_default()
    }

    /// Where the graph stands, if it is to be kept.
    fn cursor_to_keep(&self) -> Option<Cursor> {
        let questions_open = !self.core.tally.waiting.is_empty()
            || !self.core.threads.state().scheduler.requests().is_empty();
        self.scheduling
            .graph()
            .and_then(|g| g.cursor_to_keep(questions_open))
    }

    /// The participants whose turn runs again on resume: their input is in
    /// their threads already (those of a superstep under way run with it).
    fn interrupted(&self) -> Vec<String> {
        let graph = self.scheduling.graph();
        self.core
            .parts
            .to_run_again()
            .filter(|&i| !graph.is_some_and(|g| g.runs_with_superstep(i)))
            .map(|i| self.core.spec.names[i].to_string())
            .collect()
    }

    /// Takes a checkpoint of the run as it is now: saved if it has a
    /// store, reported to the run above if it is a nested run that does.
    ///
    /// Saved, the checkpoint is written from the run's state where it is
    /// (inboxes, slots, counters borrowed from their owners): nothing is
    /// copied to be serialized.
    pub(super) async fn checkpoint_now(&mut self) {
        if self.core.checkpoints.stores() {
            if self.core.checkpoints.at_exit_only() {
                return;
            }
            let progress = self.core.reported_slots();
            let mut scheduler = self.core.threads.scheduler_with(
                self.cursor_to_keep(),
                &self.core.tally.waiting,
                self.interrupted(),
            );
            scheduler.set_held(self.held_replies());
            let mut state = self.core.threads.state_view(&scheduler);
            self.core
                .inboxes
                .waiting(&self.core.spec, &mut state.pending, &mut state.waiting);
            let tree = TreeView {
                messages: self.core.threads.root().messages(),
                state: Some(StateRef::Parts(&state)),
                children: self.core.threads.children_view(&self.core.spec, &progress),
            };
            let counters = snapshot_counters(&self.core.tally, self.core.tracker.as_ref(), None);
            let superstep = self
                .scheduling
                .graph()
                .map_or(0, |g| g.completed_superstep());
            let saved = self
                .core
                .checkpoints
                .save(
                    &self.core.ctx,
                    &tree,
                    &counters,
                    superstep,
                    self.core.spec.topology_hash,
                    self.core.inboxes.delivered(),
                )
                .await;
            if let Err(not_saved) = saved {
                self.core.fail(Failure::NotSaved(not_saved));
            }
        } else if self.core.checkpoints.reports() {
            let mut scheduling = self.carried();
            scheduling.counters = Some(self.core.counters());
            let thread = self.core.threads.to_thread(&self.core.spec, scheduling);
            self.core.report(thread);
        }
    }

    /// Saves `thread` (put together) with the run's counters and the
    /// status it ended with as a checkpoint.
    async fn save_checkpoint(
        &mut self,
        thread: &Thread,
        status: RunStatus,
    ) -> Result<(), NotSaved> {
        let counters =
            snapshot_counters(&self.core.tally, self.core.tracker.as_ref(), Some(status));
        let superstep = self
            .scheduling
            .graph()
            .map_or(0, |g| g.completed_superstep());
        self.core
            .checkpoints
            .save(
                &self.core.ctx,
                &TreeView::of(thread),
                &counters,
                superstep,
                self.core.spec.topology_hash,
                self.core.inboxes.delivered(),
            )
            .await
    }

    /// Hands back the result, saves the last checkpoint and stops the run's
    /// actors.
    pub(super) async fn finish(&mut self, myself: &RunAddr) {
        let Some(reply) = self.core.reply.take() else {
            return;
        };
        self.core.watcher.stop();
        self.core.trim_history();
        let mut scheduling = self.carried();
        // A run that ends with questions open waits for their answers; a
        // run over its thread then counts on from here.
        let waits = match &self.core.phase {
            Phase::Running | Phase::Stopping(RunStatus::WaitingForInput(_)) => {
                !scheduling.new_requests.is_empty()
                    || !self.core.threads.state().scheduler.requests().is_empty()
            }
            _ => false,
        };
        // A nested run stopped gracefully is its turn cut short: it reports
        // where it stopped, counters inside, and its turn goes on from
        // there when the run above resumes (nothing it finished is done
        // again).
        let interrupted = self.core.checkpoints.reports()
            && matches!(&self.core.phase, Phase::Stopping(RunStatus::Interrupted))
            && !waits;
        if waits || interrupted {
            scheduling.counters = Some(self.core.counters());
        }
        let thread =
            std::mem::take(&mut self.core.threads).into_thread(&self.core.spec, scheduling);
        if interrupted {
            self.core.report(thread.clone());
        }
        // The questions it waits for: every one open in its thread.
        let open = waits.then(|| {
            thread
                .state()
                .map(|s| s.scheduler.requests().to_vec())
                .unwrap_or_default()
        });
        let failed = self.core.phase.is_failing();
        if !failed
            && self.core.checkpoints.stores()
            && self
                .core
                .checkpoints
                .due_at_end(self.core.inboxes.delivered())
        {
            let status = match (&self.core.phase, &open) {
                (_, Some(open)) => RunStatus::WaitingForInput(open.clone()),
                (Phase::Stopping(status), None) => status.clone(),
                _ => RunStatus::Completed,
            };
            if let Err(not_saved) = self.save_checkpoint(&thread, status).await {
                // The run's end is not saved: it fails, naming the last
                // checkpoint that was.
                self.core.phase.fail(Failure::NotSaved(not_saved));
            }
        }
        let (run_id, checkpoint) = (
            self.core.checkpoints.run_id(),
            self.core.checkpoints.parent(),
        );
        let status = match (
            std::mem::replace(&mut self.core.phase, Phase::Running),
            open,
        ) {
            (Phase::Failing(f), _) => Err(f.into_error(
                thread,
                self.core.tally.stats(&self.core.spec.participants_by_name),
            )),
            (_, Some(open)) => Ok((thread, RunStatus::WaitingForInput(open))),
            (Phase::Stopping(status), None) => Ok((thread, status)),
            (Phase::Running, None) => Ok((thread, RunStatus::Completed)),
        };
        let result = status.map(|(thread, status)| {
            let by_name = &self.core.spec.participants_by_name;
            self.core
                .tally
                .result(thread, status, run_id, checkpoint, by_name)
        });
        self.core.ctx.emit_with(|| {
            let (status, detail) = match &result {
                Ok(r) => r.status.final_status(),
                Err(e) => (FinalStatus::Failed, Some(e.to_string())),
            };
            Event::RunFinished {
                path: self.core.ctx.path().clone(),
                status,
                detail,
                usage: self.core.tally.stats.total.usage(),
                turns: self.core.tally.turns,
                stats: Box::new(self.core.tally.stats(&self.core.spec.participants_by_name)),
                elapsed_ms: self.core.tally.started.elapsed().as_secs_f64() * 1e3,
            }
        });
        // What this run spent reaches the turn it runs under (a nested
        // run's, failed or not) before that turn ends.
        if let Some(meter) = self.core.ctx.meter() {
            meter.record_all(
                &self
                    .core
                    .tally
                    .since_base(&self.core.tally.stats(&self.core.spec.participants_by_name)),
            );
        }
        // The run's span ends before the caller hears of it, so whoever
        // flushes spans next finds it closed.
        tracing::debug!(
            target: "troupe::run",
            path = %self.core.ctx.path(),
            turns = self.core.tally.turns,
            ok = result.is_ok(),
            "run finished"
        );
        crate::telemetry::record_run_end(&self.core.span, result.as_ref().map(|r| &r.status));
        if let Some(g) = self.scheduling.graph_mut() {
            g.close_span();
        }
        *self.core.span = tracing::Span::none();
        // The caller may have stopped waiting; then the result has no taker.
        let _ = reply.send(Box::new(result));
        // Shared actors serve the workflow's other runs on; the run's own
        // stop with it.
        self.core.parts.release_actors();
        myself.stop();
    }
}

impl RunCore {
    /// The slots of nested runs under way, as they last reported them: a
    /// nested run continues from there.
    pub(super) fn reported_slots(&self) -> Vec<(usize, Arc<Thread>)> {
        self.parts
            .progress()
            .map(|(i, t)| (self.spec.slot_of[i], t.clone()))
            .collect()
    }

    /// What the run counted so far, to carry on from.
    pub(super) fn counters(&self) -> RunCounters {
        RunCounters {
            stop: self.tracker.as_ref().map(|t| t.state()),
            stats: self.tally.stats(&self.spec.participants_by_name),
            turns: self.tally.turns,
            last: self.tally.last.as_ref().map(|m| m.id),
            start_len: self.tally.start_len,
        }
    }

    /// Reports `thread` (put together with the run's counters) to the run
    /// above, with what the run spent since its last report: the report
    /// carries it up (see `Participants::turn`), so a checkpoint above
    /// that holds the thread counts what its counters count, no more, no
    /// less.
    pub(super) fn report(&mut self, thread: Thread) {
        if let Some(meter) = self.ctx.meter() {
            let stats = self.tally.stats(&self.spec.participants_by_name);
            meter.record_all(&self.tally.since_base(&stats));
            self.tally.set_base(stats);
        }
        self.checkpoints.report(thread, self.inboxes.delivered());
    }
}
