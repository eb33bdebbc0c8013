//! The graph side of a run: the cursor (who runs next, joins, loop
//! counters) and, in supersteps, the superstep under way with the replies
//! held back until its barrier.

use crate::agent::Reply;
use crate::graph::cursor::Cursor;
use crate::graph::{Graph, Isolation};
use crate::resumable::held_reply::HeldReply;
use crate::thread::{Thread, WorkflowState};
use crate::workflow::run::core::RunCore;
use crate::workflow::run::phase::Failure;
use crate::workflow::run::replies::Applied;

/// Where a graph run stands.
pub(in crate::workflow::run) struct GraphRun {
    pub(in crate::workflow::run) cursor: Cursor,
    /// Supersteps: replies of the open superstep, applied at its barrier.
    buffered: Vec<(usize, Box<Reply>)>,
    /// Supersteps: replies of turns that finished in a superstep undone
    /// (or, resumed, in the superstep a checkpoint was taken in): when it
    /// runs again, these nodes do not — their replies are held at once.
    restored: Vec<(usize, Box<Reply>)>,
    /// Supersteps: the nodes of the open superstep.
    current: Vec<usize>,
    /// Supersteps: the buffer the next [`open_superstep`](Self::open_superstep)
    /// hands its nodes out in (given back with
    /// [`recycle_nodes`](Self::recycle_nodes)), so that supersteps do not
    /// each grow a new one.
    spare_nodes: Vec<usize>,
    /// The transitions the last turn took, in a buffer kept from turn to
    /// turn.
    taken: Vec<usize>,
    /// Supersteps: a superstep is under way.
    open: bool,
    /// Supersteps: the span of the superstep under way (see `telemetry`).
    span: tracing::Span,
}

/// How a superstep ended at its barrier.
pub(in crate::workflow::run) enum Barrier {
    /// No superstep was under way.
    None,
    /// It was interrupted and undone: its nodes run again next time.
    Undone,
    /// It completed: superstep `superstep`'s replies, in node order.
    Completed {
        superstep: u64,
        replies: Vec<(usize, Box<Reply>)>,
    },
}

impl GraphRun {
    /// Carries on from `saved` (a cursor that fits `g`), or starts afresh.
    /// A graph that ran out of nodes starts again only for `fresh_input`
    /// (new input in `root` besides answers to its questions; at its entry
    /// node, if it picks one, else at its starts): resuming a finished run
    /// has nothing left to do.
    pub(in crate::workflow::run) fn start(
        g: &Graph,
        saved: Option<Cursor>,
        root: &Thread,
        state: &WorkflowState,
        fresh_input: bool,
    ) -> Self {
        // A cursor of another graph comes with a thread another workflow
        // left (a checkpoint's was checked before): it does not carry on
        // here. Nor does one kept only for questions open (nothing left to
        // run) carry new input: that starts the graph afresh.
        let mut cursor = saved
            .filter(|c| c.fits(g))
            .filter(|c| c.has_next() || !fresh_input)
            .unwrap_or_else(|| Cursor::new(g));
        if !cursor.has_next() && fresh_input {
            let entry = g
                .entry
                .as_ref()
                .and_then(|f| f(root, state))
                .and_then(|name| g.names.iter().position(|n| *n == name));
            match entry {
                Some(i) => cursor.activate(i),
                None => g.starts.iter().for_each(|&i| cursor.activate(i)),
            }
        }
        GraphRun {
            cursor,
            buffered: Vec::new(),
            restored: Vec::new(),
            current: Vec::new(),
            spare_nodes: Vec::new(),
            taken: Vec::new(),
            open: false,
            span: tracing::Span::none(),
        }
    }

    /// Holds node `i`'s reply until the superstep's barrier.
    #[inline]
    pub(in crate::workflow::run) fn hold(&mut self, i: usize, reply: Box<Reply>) {
        self.buffered.push((i, reply));
    }

    /// Closes the superstep under way, if any: undone when `interrupted`,
    /// else its replies in node order, so its outcome does not depend on
    /// which turn finished first.
    pub(in crate::workflow::run) fn barrier(&mut self, interrupted: bool) -> Barrier {
        if !std::mem::take(&mut self.open) {
            return Barrier::None;
        }
        // The superstep's span ends at its barrier.
        self.span = tracing::Span::none();
        let mut replies = std::mem::take(&mut self.buffered);
        // In node order, as `current` is: then a node without a reply (cut
        // short: a nested run stopped gracefully, and the superstep runs
        // again whole) is found in one pass, not one scan per node.
        replies.sort_by_key(|(i, _)| *i);
        let short = replies.len() != self.current.len()
            || replies.iter().zip(&self.current).any(|((j, _), i)| j != i);
        if interrupted || short {
            // What finished is not run again: kept for when it does.
            self.restored.append(&mut replies);
            // Open, so `open_superstep` counted this superstep: at least 1.
            self.cursor.superstep -= 1;
            for &i in &self.current {
                self.cursor.activate(i);
            }
            self.current.clear();
            return Barrier::Undone;
        }
        self.current.clear();
        Barrier::Completed {
            superstep: self.cursor.superstep,
            replies,
        }
    }

    /// Opens the next superstep, its span a child of `run`: its number
    /// and its nodes, in node order.
    pub(in crate::workflow::run) fn open_superstep(
        &mut self,
        run: &tracing::Span,
    ) -> (u64, Vec<usize>) {
        self.cursor.superstep += 1;
        self.span = crate::telemetry::superstep_span(run, self.cursor.superstep);
        let mut nodes = std::mem::take(&mut self.spare_nodes);
        self.cursor.take_next_into(&mut nodes);
        self.current.clone_from(&nodes);
        self.open = true;
        (self.cursor.superstep, nodes)
    }

    /// Holds node `i`'s reply for the open superstep's barrier if its turn
    /// had finished before (see `restored`); returns whether it had (then
    /// it does not run).
    pub(in crate::workflow::run) fn hold_restored(&mut self, i: usize) -> bool {
        match self.restored.iter().position(|(j, _)| *j == i) {
            Some(k) => {
                let held = self.restored.swap_remove(k);
                self.buffered.push(held);
                true
            }
            None => false,
        }
    }

    /// Carries on with `replies`, of turns a checkpoint says had finished
    /// in the superstep it was taken in.
    pub(in crate::workflow::run) fn restore(&mut self, replies: Vec<(usize, Box<Reply>)>) {
        self.restored = replies;
    }

    /// The replies of finished turns a checkpoint taken now holds: those
    /// of the open superstep, and those kept from one undone (a run
    /// resumed from it does not run those turns again), by node name.
    pub(in crate::workflow::run) fn held(&self, names: &[std::sync::Arc<str>]) -> Vec<HeldReply> {
        let open = self.buffered.iter().filter(|_| self.open);
        open.chain(&self.restored)
            .filter_map(|(i, reply)| HeldReply::of(&names[*i], reply))
            .collect()
    }

    /// Takes back the nodes [`open_superstep`](Self::open_superstep)
    /// handed out, once started, as the next superstep's buffer.
    pub(in crate::workflow::run) fn recycle_nodes(&mut self, mut nodes: Vec<usize>) {
        nodes.clear();
        self.spare_nodes = nodes;
    }

    /// Takes back the replies [`barrier`](Self::barrier) handed out, once
    /// applied, as the next superstep's buffer (unless replies of the next
    /// one came in meanwhile).
    pub(in crate::workflow::run) fn recycle_replies(
        &mut self,
        mut replies: Vec<(usize, Box<Reply>)>,
    ) {
        if self.buffered.is_empty() {
            replies.clear();
            self.buffered = replies;
        }
    }

    /// The cursor to keep in the thread: one with nodes left to run, or
    /// of a run with `questions_open` (an answer carries the graph on from
    /// its asker: joins half-way and loop counters hold); a graph that ran
    /// out starts afresh, loop counters too, next time. Taken while a
    /// superstep is under way (a nested run reported its progress), it is
    /// the cursor of that superstep undone: its nodes run again, none of
    /// its replies applied yet.
    pub(in crate::workflow::run) fn cursor_to_keep(&self, questions_open: bool) -> Option<Cursor> {
        if self.open {
            let mut cursor = self.cursor.clone();
            cursor.superstep = self.completed_superstep();
            for &i in &self.current {
                cursor.activate(i);
            }
            return Some(cursor);
        }
        (self.cursor.has_next() || questions_open).then(|| self.cursor.clone())
    }

    /// The span of the superstep under way, the parent of its turns; `None`
    /// outside one (or when nobody listens).
    #[inline]
    pub(in crate::workflow::run) fn superstep_span(&self) -> Option<&tracing::Span> {
        (self.open && !self.span.is_disabled()).then_some(&self.span)
    }

    /// Ends the span of a superstep the run ends in (failed or cancelled).
    pub(in crate::workflow::run) fn close_span(&mut self) {
        self.span = tracing::Span::none();
    }

    /// The last superstep completed.
    #[inline]
    pub(in crate::workflow::run) fn completed_superstep(&self) -> u64 {
        self.cursor.superstep.saturating_sub(u64::from(self.open))
    }

    /// Whether node `i` belongs to the superstep under way: a checkpoint
    /// taken now runs it again with its superstep, not as a turn of its
    /// own.
    #[inline]
    pub(in crate::workflow::run) fn runs_with_superstep(&self, i: usize) -> bool {
        self.open && self.current.contains(&i)
    }

    /// Node `index` produced what `applied` holds (and picked its nodes):
    /// takes the transitions whose conditions hold, copying its thread to
    /// branches that inherit it and, without a router, delivering along
    /// them.
    pub(super) fn take_transitions(&mut self, core: &mut RunCore, index: usize, applied: &Applied) {
        let Some(g) = core.spec.graph.as_ref() else {
            return;
        };
        let state = core.threads.values();
        let selected = applied.next.as_deref();
        let taken = &mut self.taken;
        if let Err(e) =
            self.cursor
                .finished_into(g, index, &applied.produced, selected, state, taken)
        {
            core.fail(Failure::LoopLimit {
                step: e.step,
                limit: e.limit,
            });
            return;
        }
        let now = core.inboxes.now();
        for &e in self.taken.iter() {
            let to = g.edges[e].to;
            let (from_slot, to_slot) = (core.spec.slot_of[index], core.spec.slot_of[to]);
            // Agents sharing a thread inherit it already; copying it onto
            // itself would clone the whole thread every turn.
            if g.isolation[index] == Isolation::Inherit && from_slot != to_slot {
                let parent = core.threads.slot(from_slot).clone();
                core.threads
                    .slot_mut(to_slot)
                    .extend_shared(parent.messages().iter().cloned());
            }
            if core.spec.edge_delivery {
                for m in &applied.produced {
                    core.inboxes
                        .push(&core.spec, &core.ctx, to, m.clone(), now, false);
                }
            }
        }
    }
}
