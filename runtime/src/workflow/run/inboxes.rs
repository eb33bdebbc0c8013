//! The run's inboxes and delivery: routing a message to the inboxes that
//! accept it, placing one deliberately, taking a participant's batch,
//! reporting what is dropped (TTL, capacity), and marking the inboxes the
//! scheduler should look at again.

use std::collections::{BTreeMap, VecDeque};
use std::ops::Range;
use std::sync::Arc;
use std::time::SystemTime;

use troupe_router::{Inbox, Push, Readiness};

use crate::context::RunContext;
use crate::event::Event;
use crate::message::{Message, MessageId};
use crate::workflow::spec::Spec;

/// Every participant's inbox, by index.
pub(super) struct Inboxes {
    inboxes: Vec<Inbox<Arc<Message>>>,
    /// Messages waiting in all inboxes together (held ones not counted:
    /// an inbox holding some back is full, so never empty).
    queued: usize,
    /// Per inbox, messages held back by a full inbox under
    /// `overflow: reject`, oldest first; they enter as turns take room.
    /// Empty (no inbox's) until something is first held: most runs hold
    /// nothing, and every run made these.
    held: Vec<VecDeque<Arc<Message>>>,
    /// Inboxes that received something since the scheduler last looked.
    dirty: Vec<usize>,
    /// By inbox, whether it is in `dirty`; empty in a graph run, whose
    /// scheduler does not go by the inboxes: nothing is marked there, nor
    /// made for it.
    is_dirty: Vec<bool>,
    /// Deliveries accepted over the run.
    delivered: u64,
    /// Whether any inbox has a time-to-live or a max wait: only then does
    /// an inbox read the time it is given (see [`Inboxes::now`]).
    timed: bool,
}

impl Inboxes {
    /// The empty inboxes of `spec`'s participants, as its router shapes
    /// them.
    pub(super) fn new(spec: &Spec) -> Result<Self, String> {
        let inboxes = spec
            .names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                spec.router
                    .inbox(i)
                    .ok_or_else(|| format!("the router has no inbox for '{name}'"))
            })
            .collect::<Result<Vec<_>, String>>()?;
        let n = inboxes.len();
        let timed = inboxes
            .iter()
            .any(|b| b.config().ttl.is_some() || b.config().max_wait.is_some());
        // Only the router's scheduler looks at which inboxes changed.
        let marks = if spec.graph.is_none() { n } else { 0 };
        Ok(Inboxes {
            inboxes,
            queued: 0,
            held: Vec::new(),
            dirty: Vec::with_capacity(marks),
            is_dirty: vec![false; marks],
            delivered: 0,
            timed,
        })
    }

    /// The time to give the inboxes: the run's clock when one of them
    /// counts time (a TTL, a max wait), else a constant — inboxes that
    /// count nothing keep arrival times no one reads (nor checkpoints:
    /// restored messages arrive anew), so a turn reads no clock for them.
    #[inline]
    pub(super) fn now(&self) -> SystemTime {
        if self.timed {
            crate::clock::now()
        } else {
            SystemTime::UNIX_EPOCH
        }
    }

    /// Puts `m` in `target`'s inbox and reports it (delivered, dropped,
    /// held). `routed` applies the router's sender filter; messages placed
    /// deliberately (along a graph edge, restored from a checkpoint, an
    /// answer to the target's question) skip it.
    ///
    /// A full inbox first purges what has expired, so an expired message
    /// never keeps a live one out; only then does its overflow policy
    /// apply. Under `reject` the message is held outside the inbox, in
    /// order, until a turn takes room (backpressure: nothing is lost, and
    /// the sender is not slowed).
    pub(super) fn push(
        &mut self,
        spec: &Spec,
        ctx: &RunContext,
        target: usize,
        m: Arc<Message>,
        now: SystemTime,
        routed: bool,
    ) {
        if self.is_full(target) {
            self.purge(spec, ctx, target, now);
            self.refill(spec, ctx, target, now);
        }
        if self.held(target).is_empty() {
            self.place(spec, ctx, target, m, now, routed);
            return;
        }
        // Messages held already go first.
        if routed && !self.inboxes[target].config().senders.accepts(&m.source) {
            return;
        }
        self.hold(spec, ctx, target, m);
    }

    /// The messages held back for `target`'s inbox (see `held`).
    #[inline]
    fn held(&self, target: usize) -> &VecDeque<Arc<Message>> {
        static NONE: VecDeque<Arc<Message>> = VecDeque::new();
        self.held.get(target).unwrap_or(&NONE)
    }

    /// Whether `target`'s inbox is at its capacity.
    #[inline]
    fn is_full(&self, target: usize) -> bool {
        let inbox = &self.inboxes[target];
        inbox.config().capacity.is_some_and(|c| inbox.len() >= c)
    }

    /// Purges what expired in `target`'s inbox, reporting each.
    fn purge(&mut self, spec: &Spec, ctx: &RunContext, target: usize, now: SystemTime) {
        let expired = self.inboxes[target].expire(now);
        self.queued -= expired.len();
        for d in expired {
            emit_dropped(ctx, spec, target, d.message.id, d.reason.to_string());
        }
    }

    /// Moves held messages into `target`'s inbox while it has room.
    fn refill(&mut self, spec: &Spec, ctx: &RunContext, target: usize, now: SystemTime) {
        while !self.is_full(target) {
            let Some(m) = self.held.get_mut(target).and_then(VecDeque::pop_front) else {
                break;
            };
            self.place(spec, ctx, target, m, now, false);
        }
    }

    /// Holds `m` outside `target`'s full inbox.
    fn hold(&mut self, spec: &Spec, ctx: &RunContext, target: usize, m: Arc<Message>) {
        let capacity = self.inboxes[target].config().capacity.unwrap_or(0);
        ctx.emit_with(|| Event::MessageHeld {
            path: ctx.path().clone(),
            message: m.id,
            to: spec.names[target].to_string(),
            capacity,
        });
        if self.held.is_empty() {
            self.held = (0..self.inboxes.len()).map(|_| VecDeque::new()).collect();
        }
        self.held[target].push_back(m);
    }

    /// Puts `m` in `target`'s inbox as its policies say.
    fn place(
        &mut self,
        spec: &Spec,
        ctx: &RunContext,
        target: usize,
        m: Arc<Message>,
        now: SystemTime,
        routed: bool,
    ) {
        let inbox = &mut self.inboxes[target];
        let before = inbox.len();
        let id = m.id;
        let outcome = if routed {
            inbox.push(m, now)
        } else {
            inbox.deliver(m, now)
        };
        self.queued = self.queued + inbox.len() - before;
        if outcome.is_accepted() {
            self.delivered += 1;
        }
        let delivered = || Event::MessageDelivered {
            path: ctx.path().clone(),
            message: id,
            to: spec.names[target].to_string(),
        };
        match outcome {
            Push::Accepted => ctx.emit_with(delivered),
            Push::AcceptedWithDrop(d) => {
                ctx.emit_with(delivered);
                emit_dropped(ctx, spec, target, d.message.id, d.reason.to_string());
            }
            Push::Dropped(d) => emit_dropped(ctx, spec, target, d.message.id, d.reason.to_string()),
            Push::Rejected(m) => self.hold(spec, ctx, target, m),
            Push::Filtered(_) => return,
        }
        self.mark_dirty(target);
    }

    /// Delivers `m`, said by `sender`, to every inbox the router says
    /// accepts it.
    #[inline]
    pub(super) fn route(&mut self, spec: &Spec, ctx: &RunContext, sender: &str, m: &Arc<Message>) {
        let now = self.now();
        for &t in spec.router.targets(sender) {
            self.push(spec, ctx, t, m.clone(), now, true);
        }
    }

    /// Puts back what was waiting in the inboxes when the thread was
    /// taken; messages for someone who is not a participant are dropped
    /// with a warning.
    pub(super) fn restore(
        &mut self,
        spec: &Spec,
        ctx: &RunContext,
        pending: BTreeMap<String, Vec<Arc<Message>>>,
    ) {
        let now = self.now();
        for (name, messages) in pending {
            match spec.router.index_of(&name) {
                Some(i) => {
                    for m in messages {
                        self.push(spec, ctx, i, m, now, false);
                    }
                }
                None => ctx.emit_with(|| Event::Warning {
                    path: ctx.path().clone(),
                    text: format!(
                        "{} pending message(s) for '{name}', who is not a participant, were dropped",
                        messages.len()
                    ),
                }),
            }
        }
    }

    /// Takes what participant `i` reads this turn — a full batch, or with
    /// `all` everything in its inbox — and reports what expired meanwhile.
    pub(super) fn take(
        &mut self,
        spec: &Spec,
        ctx: &RunContext,
        i: usize,
        all: bool,
    ) -> Vec<Arc<Message>> {
        let now = self.now();
        let inbox = &mut self.inboxes[i];
        let before = inbox.len();
        let batch = if all {
            inbox.take_all(now)
        } else {
            inbox.take_batch(now)
        };
        self.queued -= before - inbox.len();
        for d in &batch.dropped {
            emit_dropped(ctx, spec, i, d.message.id, d.reason.to_string());
        }
        if !self.held(i).is_empty() {
            self.refill(spec, ctx, i, now);
        }
        batch.messages
    }

    /// Whether participant `i`'s inbox holds a full batch, or when a
    /// partial one may be taken.
    #[inline]
    pub(super) fn readiness(&self, i: usize, now: SystemTime) -> Readiness {
        self.inboxes[i].readiness(now)
    }

    /// Whether participant `i`'s inbox is empty.
    #[inline]
    pub(super) fn is_empty(&self, i: usize) -> bool {
        self.inboxes[i].is_empty()
    }

    /// Messages waiting in all inboxes together.
    #[inline]
    pub(super) fn queued(&self) -> usize {
        self.queued
    }

    /// Deliveries accepted over the run.
    #[inline]
    pub(super) fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Marks participant `i`'s inbox for the scheduler to look at (in a
    /// run without a graph).
    #[inline]
    pub(super) fn mark_dirty(&mut self, i: usize) {
        if let Some(marked) = self.is_dirty.get_mut(i)
            && !*marked
        {
            *marked = true;
            self.dirty.push(i);
        }
    }

    /// Marks every inbox that holds anything (a partial batch's wait may
    /// be over).
    pub(super) fn mark_all_waiting(&mut self) {
        for i in 0..self.inboxes.len() {
            if !self.inboxes[i].is_empty() {
                self.mark_dirty(i);
            }
        }
    }

    /// The next marked inbox, unmarked.
    #[inline]
    pub(super) fn pop_dirty(&mut self) -> Option<usize> {
        let i = self.dirty.pop()?;
        self.is_dirty[i] = false;
        Some(i)
    }

    /// Unmarks every inbox (a graph's scheduler does not go by them).
    #[inline]
    pub(super) fn clear_dirty(&mut self) {
        for i in self.dirty.drain(..) {
            self.is_dirty[i] = false;
        }
    }

    /// What waits in each inbox, by participant name (empty inboxes left
    /// out), for the thread a run returns or checkpoints.
    pub(super) fn contents(&self, spec: &Spec) -> BTreeMap<String, Vec<Arc<Message>>> {
        self.inboxes
            .iter()
            .enumerate()
            .filter(|(_, inbox)| !inbox.is_empty())
            .map(|(i, inbox)| {
                let held = self.held(i).iter();
                (
                    spec.names[i].to_string(),
                    inbox.iter().chain(held).cloned().collect(),
                )
            })
            .collect()
    }

    /// What waits in each inbox, borrowed, for a checkpoint: appended to
    /// `waiting` inbox after inbox, each non-empty inbox's range in it
    /// added to `pending` under its participant's name, in name order (as
    /// [`Inboxes::contents`] keys them).
    pub(super) fn waiting<'a>(
        &'a self,
        spec: &'a Spec,
        pending: &mut Vec<(&'a str, Range<usize>)>,
        waiting: &mut Vec<&'a Arc<Message>>,
    ) {
        pending.reserve(spec.participants_by_name.len());
        waiting.reserve(self.queued + self.held.iter().map(VecDeque::len).sum::<usize>());
        for &i in &spec.participants_by_name {
            let inbox = &self.inboxes[i];
            if inbox.is_empty() {
                continue;
            }
            let from = waiting.len();
            waiting.extend(inbox.iter());
            waiting.extend(self.held(i));
            pending.push((&*spec.names[i], from..waiting.len()));
        }
    }
}

/// Reports that `target`'s inbox dropped message `id`, and why.
fn emit_dropped(ctx: &RunContext, spec: &Spec, target: usize, id: MessageId, reason: String) {
    ctx.emit_with(|| Event::MessageDropped {
        path: ctx.path().clone(),
        message: id,
        to: spec.names[target].to_string(),
        reason,
    });
}
