//! Checkpoints of a run under way and its end: the thread put back
//! together, the last checkpoint saved (or, nested, the progress reported),
//! the result handed back — waiting for input while any question is open —
//! and the idle actors handed on to the workflow's next run.

use ractor::ActorRef;

use super::RunState;
use super::phase::Phase;
use super::slots::Scheduling;
use crate::event::{Event, FinalStatus};
use crate::thread::Thread;
use crate::workflow::protocol::RunMsg;
use crate::workflow::result::RunStatus;
use crate::workflow::scheduler_state::RunCounters;
use crate::workflow::snapshot_delta::{Counters, TreeView};

impl RunState {
    /// The scheduling state its other owners hold now, for the thread.
    fn scheduling(&self) -> Scheduling {
        let graph = self.graph.as_ref();
        let questions_open =
            !self.tally.waiting.is_empty() || !self.threads.state().scheduler.requests().is_empty();
        Scheduling {
            pending: self.inboxes.contents(&self.spec),
            graph: graph.and_then(|g| g.cursor_to_keep(questions_open)),
            // Their input is in their threads already: they run again on
            // resume (with their superstep, if one is under way).
            interrupted: self
                .parts
                .to_run_again()
                .filter(|&i| !graph.is_some_and(|g| g.runs_with_superstep(i)))
                .map(|i| self.spec.names[i].to_string())
                .collect(),
            new_requests: self.tally.waiting.clone(),
            counters: None,
            // A nested run under way continues from what it reported.
            progress: self
                .parts
                .progress()
                .map(|(i, t)| (self.spec.slot_of[i], t.clone()))
                .collect(),
        }
    }

    /// What the run counted so far, to carry on from.
    fn counters(&self) -> RunCounters {
        RunCounters {
            stop: self.tracker.as_ref().map(|t| t.state()),
            stats: self.tally.stats(),
            turns: self.tally.turns,
            last: self.tally.last.as_ref().map(|m| m.id),
            start_len: self.tally.start_len,
        }
    }

    /// Takes a checkpoint of the run as it is now: saved if it has a
    /// store, reported to the run above if it is a nested run that does.
    pub(super) async fn checkpoint_now(&mut self) {
        if self.checkpoints.stores() {
            if self.checkpoints.at_exit_only() {
                return;
            }
            let mut scheduling = self.scheduling();
            let progress = std::mem::take(&mut scheduling.progress);
            let counters = self.snapshot_counters(None);
            let (state, children) = self.threads.view(&self.spec, &progress, scheduling);
            let tree = TreeView {
                messages: self.threads.root().messages(),
                state: Some(&state),
                children,
            };
            let superstep = self.graph.as_ref().map_or(0, |g| g.completed_superstep());
            self.checkpoints
                .save(
                    &self.ctx,
                    &tree,
                    &counters,
                    superstep,
                    self.spec.topology_hash,
                    self.inboxes.delivered(),
                )
                .await;
        } else if self.checkpoints.reports() {
            let mut scheduling = self.scheduling();
            scheduling.counters = Some(self.counters());
            let thread = self.threads.to_thread(&self.spec, scheduling);
            self.checkpoints.report(thread, self.inboxes.delivered());
        }
    }

    /// What a checkpoint holds besides the thread tree, with the status
    /// the run ended with (at its end).
    fn snapshot_counters(&self, status: Option<RunStatus>) -> Counters {
        Counters {
            stop: self.tracker.as_ref().map(|t| t.state()),
            stats: self.tally.stats(),
            turns: self.tally.turns,
            last: self.tally.last.as_ref().map(|m| m.id),
            start_len: self.tally.start_len,
            started_at: self.tally.started_at,
            status,
        }
    }

    /// Saves `thread` (put together) with the run's counters and the
    /// status it ended with as a checkpoint.
    async fn save_checkpoint(&mut self, thread: &Thread, status: RunStatus) {
        let counters = self.snapshot_counters(Some(status));
        let superstep = self.graph.as_ref().map_or(0, |g| g.completed_superstep());
        self.checkpoints
            .save(
                &self.ctx,
                &TreeView::of(thread),
                &counters,
                superstep,
                self.spec.topology_hash,
                self.inboxes.delivered(),
            )
            .await;
    }

    /// Hands back the result, saves the last checkpoint and stops the run's
    /// actors.
    pub(super) async fn finish(&mut self, myself: &ActorRef<RunMsg>) {
        let Some(reply) = self.reply.take() else {
            return;
        };
        self.watcher.stop();
        self.trim_history();
        let mut scheduling = self.scheduling();
        // A run that ends with questions open waits for their answers; a
        // run over its thread then counts on from here.
        let waits = match &self.phase {
            Phase::Running | Phase::Stopping(RunStatus::WaitingForInput(_)) => {
                !scheduling.new_requests.is_empty()
                    || !self.threads.state().scheduler.requests().is_empty()
            }
            _ => false,
        };
        if waits {
            scheduling.counters = Some(self.counters());
        }
        let thread = std::mem::take(&mut self.threads).into_thread(&self.spec, scheduling);
        // The questions it waits for: every one open in its thread.
        let open = waits.then(|| {
            thread
                .state()
                .map(|s| s.scheduler.requests().to_vec())
                .unwrap_or_default()
        });
        let failed = self.phase.is_failing();
        if !failed
            && self.checkpoints.stores()
            && self.checkpoints.due_at_end(self.inboxes.delivered())
        {
            let status = match (&self.phase, &open) {
                (_, Some(open)) => RunStatus::WaitingForInput(open.clone()),
                (Phase::Stopping(status), None) => status.clone(),
                _ => RunStatus::Completed,
            };
            self.save_checkpoint(&thread, status).await;
        }
        let (run_id, checkpoint) = (self.checkpoints.run_id(), self.checkpoints.parent());
        let status = match (std::mem::replace(&mut self.phase, Phase::Running), open) {
            (Phase::Failing(f), _) => Err(f.into_error(thread, self.tally.stats())),
            (_, Some(open)) => Ok((thread, RunStatus::WaitingForInput(open))),
            (Phase::Stopping(status), None) => Ok((thread, status)),
            (Phase::Running, None) => Ok((thread, RunStatus::Completed)),
        };
        let result =
            status.map(|(thread, status)| self.tally.result(thread, status, run_id, checkpoint));
        self.ctx.emit_with(|| {
            let (status, detail) = match &result {
                Ok(r) => r.status.final_status(),
                Err(e) => (FinalStatus::Failed, Some(e.to_string())),
            };
            Event::RunFinished {
                path: self.ctx.path().clone(),
                status,
                detail,
                usage: self.tally.stats.total.usage(),
                turns: self.tally.turns,
                stats: self.tally.stats(),
                elapsed_ms: self.tally.started.elapsed().as_secs_f64() * 1e3,
            }
        });
        // What this run spent reaches the turn it runs under (a nested
        // run's, failed or not) before that turn ends.
        if let Some(meter) = self.ctx.meter() {
            meter.record_all(&self.tally.stats().since(&self.tally.base));
        }
        // The run's span ends before the caller hears of it, so whoever
        // flushes spans next finds it closed.
        tracing::debug!(
            target: "troupe::run",
            path = %self.ctx.path(),
            turns = self.tally.turns,
            ok = result.is_ok(),
            "run finished"
        );
        crate::telemetry::record_run_end(&self.span, result.as_ref().map(|r| &r.status));
        if let Some(g) = &mut self.graph {
            g.close_span();
        }
        self.span = tracing::Span::none();
        // The caller may have stopped waiting; then the result has no taker.
        let _ = reply.send(result);
        // A run that ended cleanly hands its idle actors on; the rest stop
        // with it.
        if !failed {
            self.parts.keep_idle_actors(myself);
        }
        myself.stop_children(None);
        myself.stop(None);
    }
}
