//! Checkpoints of a run under way and its end: the thread put back
//! together, the last checkpoint saved, the result handed back, and the
//! idle actors handed on to the workflow's next run.

use ractor::ActorRef;

use super::RunState;
use super::graph_run::GraphRun;
use super::phase::Phase;
use super::slots::Scheduling;
use crate::event::Event;
use crate::thread::Thread;
use crate::workflow::protocol::RunMsg;
use crate::workflow::result::RunStatus;
use crate::workflow::snapshot::Snapshot;

impl RunState {
    /// The scheduling state its other owners hold now, for the thread.
    fn scheduling(&self) -> Scheduling {
        Scheduling {
            pending: self.inboxes.contents(&self.spec),
            graph: self.graph.as_ref().and_then(GraphRun::cursor_to_keep),
            // Their input is in their threads already: they run again on
            // resume.
            interrupted: self
                .parts
                .to_run_again()
                .map(|i| self.spec.names[i].to_string())
                .collect(),
            new_requests: self.tally.waiting.clone(),
        }
    }

    /// Saves a checkpoint of the run as it is now (if it has a store).
    pub(super) async fn checkpoint_now(&mut self) {
        if self.checkpoints.enabled() {
            let thread = self.threads.to_thread(&self.spec, self.scheduling());
            self.save_checkpoint(thread).await;
        }
    }

    /// Saves `thread` with the run's counters as a checkpoint; gives the
    /// thread back.
    async fn save_checkpoint(&mut self, thread: Thread) -> Thread {
        let snapshot = Snapshot {
            thread,
            stop: self.tracker.as_ref().map(|t| t.state()),
            usage: self.tally.usage,
            turns: self.tally.turns,
            last: self.tally.last.as_ref().map(|m| m.id),
            start_len: self.tally.start_len,
            stopped: match &self.phase {
                Phase::Stopping(RunStatus::Stopped(reason)) => Some(reason.clone()),
                _ => None,
            },
        };
        let superstep = self.graph.as_ref().map_or(0, |g| g.cursor.superstep);
        self.checkpoints
            .save(
                &self.ctx,
                snapshot,
                superstep,
                self.spec.topology_hash,
                self.inboxes.delivered(),
            )
            .await
    }

    /// Hands back the result, saves the last checkpoint and stops the run's
    /// actors.
    pub(super) async fn finish(&mut self, myself: &ActorRef<RunMsg>) {
        let Some(reply) = self.reply.take() else {
            return;
        };
        self.watcher.stop();
        let scheduling = self.scheduling();
        let mut thread = std::mem::take(&mut self.threads).into_thread(&self.spec, scheduling);
        let failed = self.phase.is_failing();
        if !failed
            && self.checkpoints.enabled()
            && self.checkpoints.due_at_end(self.inboxes.delivered())
        {
            thread = self.save_checkpoint(thread).await;
        }
        let (run_id, checkpoint) = (self.checkpoints.run_id(), self.checkpoints.parent());
        let result = match std::mem::replace(&mut self.phase, Phase::Running) {
            Phase::Failing(f) => Err(f.into_error(thread)),
            Phase::Stopping(status) => Ok(self.tally.result(thread, status, run_id, checkpoint)),
            Phase::Running => {
                Ok(self
                    .tally
                    .result(thread, RunStatus::Completed, run_id, checkpoint))
            }
        };
        self.ctx.emit_with(|| Event::RunFinished {
            path: self.ctx.path().clone(),
            status: match &result {
                Ok(r) => r.status.to_string(),
                Err(e) => format!("failed: {e}"),
            },
            usage: self.tally.usage,
            turns: self.tally.turns,
            elapsed_ms: self.tally.started.elapsed().as_secs_f64() * 1e3,
        });
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
