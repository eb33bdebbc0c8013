//! Starting a run: its thread taken apart, its state put in place (from a
//! checkpoint when resuming, or from the counters its thread keeps), and
//! the input it has not seen taken in — answers to its questions
//! delivered to the agents that asked.

use std::sync::Arc;

use super::checkpoints::Checkpointer;
use super::core::RunCore;
use super::inboxes::Inboxes;
use super::participants::Participants;
use super::phase::Phase;
use super::scheduling::graph_run::GraphRun;
use super::scheduling::{Schedule, Scheduling};
use super::slots::ThreadSlots;
use super::tally::Tally;
use super::wake::Wake;
use super::watcher::Watcher;
use super::{RunArgs, RunState};
use crate::event::Event;
use crate::message::{Message, MessageId};
use crate::resumable::scheduler_state::RunCounters;
use crate::resumable::status::RunStatus;
use crate::state::StateSnapshot;
use crate::stop::{StopTracker, Trigger};
use crate::workflow::answer;
use crate::workflow::protocol::RunAddr;

/// An answer to a question, with the participant that asked it.
type Answer = (usize, Arc<Message>);

impl RunState {
    /// The state of a run starting from `args`, its input taken in and its
    /// watcher watching for `myself`.
    pub(super) fn start(myself: RunAddr, args: RunArgs) -> Result<Self, String> {
        let RunArgs {
            spec,
            thread,
            ctx,
            reply,
            top_level,
            resumed,
            progress,
            span,
        } = args;
        let (thread, resumed_from, run_id) = match resumed {
            Some(r) => {
                // The thread is taken apart below; the rest is counters.
                let mut snapshot = r.snapshot;
                let thread = std::mem::take(&mut snapshot.thread);
                (thread, Some((r.parent, snapshot)), r.run_id)
            }
            None => {
                let id = ctx
                    .run_id()
                    .map_or_else(|| run_id(&spec.name, MessageId::new()), |r| r.to_string());
                (thread, None, id)
            }
        };
        if !span.is_disabled() {
            span.record("troupe.run.id", run_id.as_str());
        }
        // Every event of the run (and of the runs nested in it) carries
        // its id.
        let ctx = if ctx.run_id().is_none() {
            ctx.into_run_id(run_id.as_str())
        } else {
            ctx
        };
        let (mut threads, mut carried) = ThreadSlots::take_apart(&spec, thread);
        if !top_level {
            // A nested run works on its parent's state; its changes go
            // back up in its reply. A run cut short and resumed (its
            // progress was checkpointed in its thread) keeps what it had
            // changed itself, on top.
            let mut values = ctx.state().clone();
            values.apply(&threads.values().changes_since(&StateSnapshot::default()));
            threads.set_values(values);
        }
        let store = if top_level { spec.store.clone() } else { None };
        let parent = resumed_from.as_ref().map(|r| r.0);
        // A nested run reports its progress only to a run above that
        // checkpoints; a run with a store saves its own.
        let progress = if store.is_some() { None } else { progress };
        let mut core = RunCore {
            parts: Participants::new(&spec, &ctx, threads.values()),
            inboxes: Inboxes::new(&spec)?,
            wake: Wake::default(),
            threads,
            tracker: spec.stop.clone().map(StopTracker::new),
            phase: Phase::Running,
            tally: Tally::default(),
            checkpoints: Checkpointer::new(store, progress, run_id, parent, spec.durability),
            watcher: Watcher::default(),
            restart: Vec::new(),
            waiting: Default::default(),
            ended: Vec::new(),
            parallel: tokio::runtime::Handle::try_current()
                .is_ok_and(|h| h.runtime_flavor() != tokio::runtime::RuntimeFlavor::CurrentThread),
            fanning: false,
            reply: Some(reply),
            spec,
            ctx,
            span: Box::new(span),
        };
        if core.checkpoints.enabled() {
            core.parts.hand_out_hooks();
        }
        // A checkpoint's counters, or those a run not finished left in
        // the thread: the run counts on from them.
        let mut ended = false;
        let counters = match resumed_from {
            Some((_, snapshot)) => {
                core.tally.started_at = snapshot.started_at;
                if let Some(RunStatus::Stopped(reason)) = snapshot.status {
                    // It had ended on its stop condition: it ends so again,
                    // running nothing more.
                    core.phase.stop_gracefully(RunStatus::Stopped(reason));
                    ended = true;
                }
                Some(RunCounters {
                    stop: snapshot.stop,
                    stats: snapshot.stats,
                    turns: snapshot.turns,
                    last: snapshot.last,
                    start_len: snapshot.start_len,
                })
            }
            None => carried.counters.take(),
        };
        if let Some(counters) = counters {
            core.restore_counters(counters);
        }
        let (answers, fresh) = core.split_input();
        let scheduling = match core.spec.graph.as_ref() {
            Some(g) => {
                let graph = GraphRun::start(
                    g,
                    carried.graph,
                    core.threads.root(),
                    core.threads.state(),
                    !fresh.is_empty(),
                );
                Scheduling::graph_by(g.scheduler, g.max_supersteps, graph)
            }
            None => Scheduling::router(),
        };
        let mut run = RunState { core, scheduling };
        // Turns a checkpoint says had finished in its superstep: their
        // replies wait for its barrier, the turns do not run again.
        let held: Vec<_> = carried
            .held
            .into_iter()
            .filter_map(|h| {
                let i = run.core.spec.router.index_of(&h.node)?;
                Some((i, Box::new(h.into_reply()?)))
            })
            .collect();
        if let Some(g) = run.scheduling.graph_mut()
            && !held.is_empty()
        {
            g.restore(held);
        }
        run.core.ctx.emit_with(|| Event::RunStarted {
            path: run.core.ctx.path().clone(),
            participants: run.core.parts.len(),
        });
        run.core
            .inboxes
            .restore(&run.core.spec, &run.core.ctx, carried.pending);
        if ended {
            run.core
                .checkpoints
                .resumed_ended(run.core.inboxes.delivered());
        }
        for name in carried.interrupted {
            if let Some(i) = run.core.spec.router.index_of(&name) {
                run.core.restart.push(i);
            }
        }
        run.deliver_answers(answers);
        run.take_input(fresh);
        if run.core.tally.start_len == 0 {
            run.core.tally.start_len = run.core.threads.root().len();
        }
        run.core.watcher = Watcher::spawn(&run.core.ctx, run.core.spec.stop.as_ref(), myself);
        Ok(run)
    }
}

impl RunCore {
    /// Picks up what a run (a checkpoint, or a run not finished over this
    /// thread) had counted.
    fn restore_counters(&mut self, counters: RunCounters) {
        if let (Some(t), Some(state)) = (self.tracker.as_mut(), counters.stop) {
            t.restore(state);
        }
        let root = self.threads.root();
        let tally = &mut self.tally;
        tally.set_base(counters.stats.clone());
        tally.stats = counters.stats;
        if let Some(t) = self.tracker.as_mut() {
            t.set_spent(tally.stats.total);
        }
        tally.turns = counters.turns;
        tally.start_len = counters.start_len.min(root.len());
        tally.last = counters
            .last
            .and_then(|id| root.messages().iter().rev().find(|m| m.id == id).cloned());
        tally.produced = root.messages()[tally.start_len..].to_vec();
    }

    /// Takes the thread's messages the workflow has not seen yet: the
    /// answers to its open questions (each with the asking participant,
    /// its question closed), and the rest of its new input.
    fn split_input(&mut self) -> (Vec<Answer>, Vec<Arc<Message>>) {
        let root = self.threads.root();
        let from = self.threads.state().consumed.min(root.len());
        let new: Vec<Arc<Message>> = root.messages()[from..].to_vec();
        let len = root.len();
        let state = self.threads.state_mut();
        state.consumed = len;
        if state.scheduler.requests().is_empty() {
            return (Vec::new(), new);
        }
        let requests = &mut state.scheduler.body_mut().requests;
        let mut answers = Vec::new();
        let mut fresh = Vec::with_capacity(new.len());
        for m in new {
            let asker = answer::answered(requests, &m).and_then(|pos| {
                self.spec
                    .router
                    .index_of(&requests[pos].agent)
                    .map(|i| (pos, i))
            });
            match asker {
                Some((pos, i)) => {
                    requests.remove(pos);
                    answers.push((i, m));
                }
                None => fresh.push(m),
            }
        }
        (answers, fresh)
    }
}

impl RunState {
    /// Delivers each answer to the participant that asked (past its
    /// inbox's filter), which — in a graph — runs next. An agent asking
    /// from a nested run is that run: the answer reaches it there in turn.
    fn deliver_answers(&mut self, answers: Vec<Answer>) {
        let now = self.core.inboxes.now();
        for (i, m) in answers {
            if let Some(run) = self.scheduling.graph_mut() {
                run.cursor.activate(i);
            }
            self.core
                .inboxes
                .push(&self.core.spec, &self.core.ctx, i, m, now, false);
        }
    }

    /// Delivers `fresh`, the thread's new input: by the router, or — a
    /// graph without one — to the nodes about to run.
    fn take_input(&mut self, fresh: Vec<Arc<Message>>) {
        let first_nodes: Vec<usize> = match self.scheduling.graph() {
            Some(g) if self.core.spec.edge_delivery => g.cursor.next_nodes().to_vec(),
            _ => Vec::new(),
        };
        let now = self.core.inboxes.now();
        for m in fresh {
            if let Some(reason) = self.core.observe(Trigger::Message {
                message: &m,
                produced: false,
            }) {
                self.core.phase.stop_gracefully(RunStatus::Stopped(reason));
            }
            if self.core.spec.edge_delivery {
                for &t in &first_nodes {
                    self.core.inboxes.push(
                        &self.core.spec,
                        &self.core.ctx,
                        t,
                        m.clone(),
                        now,
                        false,
                    );
                }
            } else {
                self.core
                    .inboxes
                    .route(&self.core.spec, &self.core.ctx, &m.source, &m);
            }
        }
    }
}

/// A run's id made up when the caller gave none: the workflow's name, a
/// dash and the last 16 hex digits of a fresh id (its low 64 bits).
/// Written digit by digit: through `format!` it was ~1.5 K instructions,
/// every run.
fn run_id(name: &str, id: MessageId) -> String {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    let low = id.0 as u64;
    let mut out = String::with_capacity(name.len() + 17);
    out.push_str(name);
    out.push('-');
    for shift in (0..16).rev() {
        out.push(char::from(HEX[((low >> (shift * 4)) & 0xf) as usize]));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_made_up_run_id_is_the_name_and_the_ids_last_16_hex_digits() {
        let id = MessageId(0x0123_4567_89ab_cdef_fedc_ba98_7654_3210);
        assert_eq!(run_id("team", id), "team-fedcba9876543210");
        assert_eq!(
            run_id("team", id),
            format!("team-{}", &id.to_string()[16..])
        );
        assert_eq!(run_id("", MessageId(0xa)), "-000000000000000a");
    }
}
