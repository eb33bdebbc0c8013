//! A graph in dataflow: every activated node not already running starts,
//! up to the concurrency limit, without waiting for others; its reply is
//! applied when it ends.

use super::graph_run::GraphRun;
use super::schedule::{Drive, Schedule};
use crate::workflow::protocol::RunAddr;
use crate::workflow::run::core::RunCore;
use crate::workflow::run::replies::Applied;

/// A graph run in dataflow (see the module's documentation).
pub(in crate::workflow::run) struct Dataflow {
    graph: GraphRun,
}

impl Dataflow {
    /// Runs `graph` in dataflow.
    pub(super) fn new(graph: GraphRun) -> Self {
        Dataflow { graph }
    }
}

impl Schedule for Dataflow {
    async fn drive(&mut self, core: &mut RunCore, myself: &RunAddr) -> Drive {
        // The router's readiness does not schedule a graph.
        core.inboxes.clear_dirty();
        if !core.phase.is_running() {
            return Drive::Done;
        }
        let room = core
            .spec
            .max_concurrency
            .unwrap_or(usize::MAX)
            .saturating_sub(core.in_flight());
        let mut ready = Vec::new();
        for &i in self.graph.cursor.next_nodes() {
            if !core.parts.busy(i) && ready.len() < room {
                ready.push(i);
            }
        }
        for &i in &ready {
            self.graph.cursor.take_one(i);
        }
        core.fanning = core.parallel && ready.len() > 1;
        for i in ready {
            let batch = core.take_batch(i, true);
            core.start_turn(i, batch, None, myself).await;
        }
        core.fanning = false;
        Drive::Done
    }

    #[inline]
    fn took(&mut self, core: &mut RunCore, index: usize, applied: Applied) {
        self.graph.take_transitions(core, index, &applied);
    }

    fn graph(&self) -> Option<&GraphRun> {
        Some(&self.graph)
    }

    fn graph_mut(&mut self) -> Option<&mut GraphRun> {
        Some(&mut self.graph)
    }
}
