//! Who runs next: the drive after every message the supervisor handles —
//! by inbox readiness without a graph, by supersteps or by dataflow with
//! one — and the run's end once nothing is left in flight.

use troupe_router::Readiness;

use super::RunState;
use super::graph_run::Barrier;
use super::phase::Failure;
use super::scheduling::Scheduling;
use crate::event::Event;
use crate::resumable::status::RunStatus;
use crate::workflow::protocol::RunAddr;

impl RunState {
    /// Starts every turn that can start, and finishes the run when nothing
    /// is left to do.
    pub(super) async fn drive(&mut self, myself: &RunAddr) {
        if self.reply.is_none() {
            return;
        }
        for index in std::mem::take(&mut self.restart) {
            if !self.phase.is_failing() && !self.parts.turns_cancelled() {
                self.start_turn(index, Vec::new(), myself).await;
            }
        }
        // Both checks run: a checkpoint made due is taken or dropped here.
        let due = self.checkpoints.take_due();
        if self.phase.is_running()
            && (due
                || self
                    .checkpoints
                    .due_every(self.spec.checkpoint_every, self.inboxes.delivered()))
        {
            Box::pin(self.checkpoint_now()).await;
        }
        match &self.scheduling {
            Scheduling::Router => self.drive_router(myself).await,
            Scheduling::Supersteps { limit, .. } => {
                let limit = *limit;
                self.drive_supersteps(limit, myself).await;
            }
            Scheduling::Dataflow(_) => self.drive_dataflow(myself).await,
        }
        if self.in_flight() == 0 && self.reply.is_some() {
            Box::pin(self.finish(myself)).await;
        }
    }

    /// Without a graph: every participant whose inbox holds a full batch
    /// runs (up to the concurrency limit); when nothing runs, partial
    /// batches wait for their max wait or are flushed.
    async fn drive_router(&mut self, myself: &RunAddr) {
        let limit = self.spec.max_concurrency.unwrap_or(usize::MAX);
        while self.in_flight() < limit {
            let Some(i) = self.inboxes.pop_dirty() else {
                break;
            };
            if self.phase.is_running() && !self.busy(i) {
                self.try_start(i, false, myself).await;
            }
        }
        if self.in_flight() > 0 || !self.phase.is_running() || self.inboxes.queued() == 0 {
            return;
        }
        // Nothing runs: partial batches either wait for their max wait or,
        // with none set, are flushed so no message is stranded.
        let now = self.inboxes.now();
        for i in 0..self.parts.len() {
            if self.inboxes.is_empty(i) || !self.phase.is_running() {
                continue;
            }
            match self.inboxes.readiness(i, now) {
                Readiness::Waiting { until: Some(t) } => {
                    self.wake.arm(t, myself);
                    self.wake.hold();
                    return;
                }
                Readiness::Ready => self.try_start(i, false, myself).await,
                _ => self.try_start(i, true, myself).await,
            }
        }
    }

    /// A graph in supersteps: once every turn of the open superstep is
    /// done, its replies are applied in node order (or, interrupted, it is
    /// undone), a checkpoint is taken, and the next superstep starts.
    async fn drive_supersteps(&mut self, limit: Option<u64>, myself: &RunAddr) {
        // The router's readiness does not schedule a graph.
        self.inboxes.clear_dirty();
        // A superstep whose turns had all finished before the run resumed
        // starts none: its barrier comes at once.
        while self.superstep(limit, myself).await {}
    }

    /// Closes the open superstep if its turns are done and opens the next;
    /// returns whether that one started no turn (every turn of it had
    /// finished before: see `GraphRun::hold_restored`).
    async fn superstep(&mut self, limit: Option<u64>, myself: &RunAddr) -> bool {
        if self.in_flight() > 0 {
            return false;
        }
        let interrupted = self.phase.is_failing()
            || self.phase.is_stopping_with(&RunStatus::Cancelled)
            || self.parts.turns_cancelled();
        let Some(run) = self.scheduling.graph_mut() else {
            return false;
        };
        match run.barrier(interrupted) {
            Barrier::None => {}
            Barrier::Undone => return false,
            Barrier::Completed {
                superstep,
                mut replies,
            } => {
                for (i, reply) in replies.drain(..) {
                    self.apply_reply(i, reply);
                }
                if let Some(run) = self.scheduling.graph_mut() {
                    run.recycle_replies(replies);
                }
                self.ctx.emit_with(|| Event::SuperstepCompleted {
                    path: self.ctx.path().clone(),
                    superstep,
                });
                // Between supersteps nothing is in flight: the state is
                // whole, and the next superstep has not begun. (Checked
                // before the future is made: without a store there is
                // nothing to box. After the last superstep the run's end
                // saves it, with how the run ended.)
                let more = self.scheduling.graph().is_some_and(|g| g.cursor.has_next());
                if self.phase.is_running() && self.checkpoints.enabled() && more {
                    Box::pin(self.checkpoint_now()).await;
                }
            }
        }
        let Some(run) = self.scheduling.graph_mut() else {
            return false;
        };
        if !self.phase.is_running() || !run.cursor.has_next() {
            return false;
        }
        if let Some(limit) = limit
            && run.cursor.superstep >= limit
        {
            self.fail(Failure::SuperstepLimit { limit });
            return false;
        }
        let (superstep, nodes) = run.open_superstep(&self.span);
        self.ctx.emit_with(|| Event::SuperstepStarted {
            path: self.ctx.path().clone(),
            superstep,
            nodes: nodes
                .iter()
                .map(|&i| self.spec.names[i].to_string())
                .collect(),
        });
        self.fanning = self.parallel && nodes.len() > 1;
        for &i in &nodes {
            // A turn that finished before the run resumed has its reply.
            if self
                .scheduling
                .graph_mut()
                .is_some_and(|g| g.hold_restored(i))
            {
                continue;
            }
            let batch = self.take_batch(i, true);
            self.start_turn(i, batch, myself).await;
        }
        self.fanning = false;
        if let Some(run) = self.scheduling.graph_mut() {
            run.recycle_nodes(nodes);
        }
        self.in_flight() == 0 && self.phase.is_running()
    }

    /// A graph in dataflow: every activated node not already running
    /// starts, up to the concurrency limit, without waiting for others.
    async fn drive_dataflow(&mut self, myself: &RunAddr) {
        self.inboxes.clear_dirty();
        if !self.phase.is_running() {
            return;
        }
        let room = self
            .spec
            .max_concurrency
            .unwrap_or(usize::MAX)
            .saturating_sub(self.in_flight());
        let mut ready = Vec::new();
        if let Some(run) = self.scheduling.graph_mut() {
            for &i in run.cursor.next_nodes() {
                if !self.parts.state(i).is_in_flight() && ready.len() < room {
                    ready.push(i);
                }
            }
            for &i in &ready {
                run.cursor.take_one(i);
            }
        }
        self.fanning = self.parallel && ready.len() > 1;
        for i in ready {
            let batch = self.take_batch(i, true);
            self.start_turn(i, batch, myself).await;
        }
        self.fanning = false;
    }
}
