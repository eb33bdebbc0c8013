//! Starting a run: its thread taken apart, its state put in place (from a
//! checkpoint when resuming), and the input it has not seen taken in.

use std::sync::Arc;
use std::time::SystemTime;

use ractor::ActorRef;

use super::checkpoints::Checkpointer;
use super::graph_run::GraphRun;
use super::inboxes::Inboxes;
use super::participants::Participants;
use super::phase::Phase;
use super::slots::ThreadSlots;
use super::tally::Tally;
use super::wake::Wake;
use super::watcher::Watcher;
use super::{RunArgs, RunState};
use crate::event::Event;
use crate::message::{Message, MessageId};
use crate::stop::{StopTracker, Trigger};
use crate::workflow::protocol::RunMsg;
use crate::workflow::result::RunStatus;

impl RunState {
    /// The state of a run starting from `args`, its input taken in and its
    /// watcher watching for `myself`.
    pub(super) fn start(myself: ActorRef<RunMsg>, args: RunArgs) -> Result<Self, String> {
        let RunArgs {
            spec,
            thread,
            ctx,
            reply,
            top_level,
            resumed,
        } = args;
        let (thread, resumed_from, run_id) = match resumed {
            Some(r) => {
                // The thread is taken apart below; the rest is counters.
                let mut snapshot = r.snapshot;
                let thread = std::mem::take(&mut snapshot.thread);
                (thread, Some((r.parent, snapshot)), r.run_id)
            }
            None => {
                let id = ctx.run_id().map_or_else(
                    || format!("{}-{}", spec.name, &MessageId::new().to_string()[16..]),
                    |r| r.to_string(),
                );
                (thread, None, id)
            }
        };
        let (mut threads, scheduling) = ThreadSlots::take_apart(&spec, thread);
        if !top_level {
            // A nested run works on its parent's state; its changes go
            // back up in its reply.
            threads.set_values(ctx.state().clone());
        }
        let store = if top_level { spec.store.clone() } else { None };
        let parent = resumed_from.as_ref().map(|r| r.0);
        let mut run = RunState {
            parts: Participants::new(&spec, &ctx),
            inboxes: Inboxes::new(&spec)?,
            wake: Wake::default(),
            threads,
            graph: None,
            tracker: spec.stop.clone().map(StopTracker::new),
            phase: Phase::Running,
            tally: Tally::default(),
            checkpoints: Checkpointer::new(store, run_id, parent),
            watcher: Watcher::default(),
            restart: Vec::new(),
            reply: Some(reply),
            spec,
            ctx,
        };
        if let Some((_, snapshot)) = resumed_from {
            if let (Some(t), Some(state)) = (run.tracker.as_mut(), snapshot.stop) {
                t.restore(state);
            }
            let root = run.threads.root();
            let tally = &mut run.tally;
            tally.usage = snapshot.usage;
            tally.turns = snapshot.turns;
            tally.start_len = snapshot.start_len.min(root.len());
            tally.last = snapshot
                .last
                .and_then(|id| root.messages().iter().rev().find(|m| m.id == id).cloned());
            tally.produced = root.messages()[tally.start_len..].to_vec();
            if let Some(reason) = snapshot.stopped {
                // It had ended on its stop condition: it ends so again.
                run.phase.stop_gracefully(RunStatus::Stopped(reason));
            }
        }
        run.graph =
            run.spec.graph.as_ref().map(|g| {
                GraphRun::start(g, scheduling.graph, run.threads.root(), run.threads.state())
            });
        run.ctx.emit_with(|| Event::RunStarted {
            path: run.ctx.path().clone(),
            participants: run.parts.len(),
        });
        run.inboxes.restore(&run.spec, &run.ctx, scheduling.pending);
        for name in scheduling.interrupted {
            if let Some(i) = run.spec.router.index_of(&name) {
                run.restart.push(i);
            }
        }
        run.take_input();
        if run.tally.start_len == 0 {
            run.tally.start_len = run.threads.root().len();
        }
        run.watcher = Watcher::spawn(&run.ctx, run.spec.stop.as_ref(), myself);
        Ok(run)
    }

    /// Delivers the thread's messages that the workflow has not seen yet:
    /// by the router, or — a graph without one — to the nodes about to run.
    fn take_input(&mut self) {
        let root = self.threads.root();
        let from = self.threads.state().consumed.min(root.len());
        let fresh: Vec<Arc<Message>> = root.messages()[from..].to_vec();
        let len = root.len();
        self.threads.state_mut().consumed = len;
        let first_nodes: Vec<usize> = match &self.graph {
            Some(g) if self.spec.edge_delivery => g.cursor.next_nodes().to_vec(),
            _ => Vec::new(),
        };
        let now = SystemTime::now();
        for m in fresh {
            if let Some(reason) = self.observe(Trigger::Message {
                message: &m,
                produced: false,
            }) {
                self.phase.stop_gracefully(RunStatus::Stopped(reason));
            }
            if self.spec.edge_delivery {
                for &t in &first_nodes {
                    self.inboxes
                        .push(&self.spec, &self.ctx, t, m.clone(), now, false);
                }
            } else {
                self.inboxes.route(&self.spec, &self.ctx, &m.source, &m);
            }
        }
    }
}
