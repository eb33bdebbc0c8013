//! The run's inboxes and delivery: routing a message to the inboxes that
//! accept it, placing one deliberately, taking a participant's batch,
//! reporting what is dropped (TTL, capacity), and marking the inboxes the
//! scheduler should look at again.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use troupe_router::{Inbox, Push, Readiness};

use crate::context::RunContext;
use crate::event::Event;
use crate::message::Message;
use crate::workflow::spec::Spec;

/// Every participant's inbox, by index.
pub(super) struct Inboxes {
    inboxes: Vec<Inbox<Arc<Message>>>,
    /// Messages waiting in all inboxes together.
    queued: usize,
    /// Inboxes that received something since the scheduler last looked.
    dirty: Vec<usize>,
    is_dirty: Vec<bool>,
    /// Deliveries accepted over the run.
    delivered: u64,
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
        Ok(Inboxes {
            inboxes,
            queued: 0,
            dirty: Vec::with_capacity(n),
            is_dirty: vec![false; n],
            delivered: 0,
        })
    }

    /// Puts `m` in `target`'s inbox and reports it (delivered, dropped).
    /// `routed` applies the router's sender filter; messages placed
    /// deliberately (along a graph edge, restored from a checkpoint, an
    /// answer to the target's question) skip it.
    pub(super) fn push(
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
        let to = &spec.names[target];
        let delivered = || Event::MessageDelivered {
            path: ctx.path().clone(),
            message: id,
            to: to.to_string(),
        };
        let dropped = |id, reason: String| Event::MessageDropped {
            path: ctx.path().clone(),
            message: id,
            to: to.to_string(),
            reason,
        };
        if outcome.is_accepted() {
            self.delivered += 1;
        }
        match outcome {
            Push::Accepted => ctx.emit_with(delivered),
            Push::AcceptedWithDrop(d) => {
                ctx.emit_with(delivered);
                ctx.emit_with(|| dropped(d.message.id, d.reason.to_string()));
            }
            Push::Dropped(d) => ctx.emit_with(|| dropped(d.message.id, d.reason.to_string())),
            Push::Rejected(m) => {
                ctx.emit_with(|| dropped(m.id, "rejected: the inbox is full".into()))
            }
            Push::Filtered(_) => return,
        }
        self.mark_dirty(target);
    }

    /// Delivers `m`, said by `sender`, to every inbox the router says
    /// accepts it.
    #[inline]
    pub(super) fn route(&mut self, spec: &Spec, ctx: &RunContext, sender: &str, m: &Arc<Message>) {
        let now = SystemTime::now();
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
        let now = SystemTime::now();
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
        let now = SystemTime::now();
        let inbox = &mut self.inboxes[i];
        let before = inbox.len();
        let batch = if all {
            inbox.take_all(now)
        } else {
            inbox.take_batch(now)
        };
        self.queued -= before - inbox.len();
        for d in &batch.dropped {
            ctx.emit_with(|| Event::MessageDropped {
                path: ctx.path().clone(),
                message: d.message.id,
                to: spec.names[i].to_string(),
                reason: d.reason.to_string(),
            });
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

    /// Marks participant `i`'s inbox for the scheduler to look at.
    #[inline]
    pub(super) fn mark_dirty(&mut self, i: usize) {
        if !self.is_dirty[i] {
            self.is_dirty[i] = true;
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
            .map(|(i, inbox)| (spec.names[i].to_string(), inbox.iter().cloned().collect()))
            .collect()
    }
}
