//! [`Inbox`]: one participant's queue of delivered, not yet processed messages.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::SystemTime;

use crate::config::{InboxConfig, Overflow};
use crate::envelope::Envelope;
use crate::error::InboxConfigError;
use crate::outcome::{Batch, DropReason, Dropped, Push, Readiness};

mod expiry;

/// A message and the `now` it was pushed at; max wait counts from arrival,
/// while time-to-live counts from the message's own creation time.
#[derive(Debug, Clone)]
struct Slot<M> {
    message: M,
    arrived: SystemTime,
}

/// One participant's inbox: a FIFO queue with a sender filter, batch size,
/// time-to-live, capacity and max wait (see [`InboxConfig`]).
///
/// Every operation takes `now` explicitly, so the inbox is deterministic and
/// tests need no sleeping. Messages the inbox does not keep are always handed
/// back (in [`Push`], [`Batch::dropped`] or [`Inbox::expire`]), never lost
/// silently.
///
/// Expired messages are purged lazily, by [`take_batch`](Self::take_batch),
/// [`take_all`](Self::take_all) and [`expire`](Self::expire). Until then they
/// count in [`len`](Self::len), [`iter`](Self::iter) and toward the capacity,
/// but not in [`readiness`](Self::readiness).
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use troupe_router::{Envelope, Inbox, InboxConfig, Readiness};
///
/// struct Msg(&'static str, SystemTime);
/// impl Envelope for Msg {
///     fn sender(&self) -> &str { self.0 }
///     fn created_at(&self) -> SystemTime { self.1 }
/// }
///
/// # fn main() -> Result<(), troupe_router::InboxConfigError> {
/// let t0 = SystemTime::UNIX_EPOCH;
/// let config = InboxConfig::new().batch_size(2).max_wait(Duration::from_secs(5));
/// let mut inbox = Inbox::new(config)?;
///
/// assert!(inbox.push(Msg("a", t0), t0).is_accepted());
/// let until = t0 + Duration::from_secs(5);
/// assert_eq!(inbox.readiness(t0), Readiness::Waiting { until: Some(until) });
/// assert_eq!(inbox.readiness(until), Readiness::Ready);
///
/// let batch = inbox.take_batch(until);
/// assert_eq!(batch.messages.len(), 1);
/// assert!(inbox.is_empty());
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct Inbox<M> {
    /// Shared with the router and every other inbox of the same shape: a
    /// run makes one inbox per participant, and copying a sender filter
    /// (a set of names) into each cost a run of many agents hundreds of
    /// bytes per agent.
    config: Arc<InboxConfig>,
    queue: VecDeque<Slot<M>>,
    /// No queued message was created before this (`None` when empty). It may
    /// be stale-early after takes, but while it is younger than the ttl no
    /// message can have expired, so expiry checks skip the scan of the queue.
    created_floor: Option<SystemTime>,
}

impl<M: Envelope> Inbox<M> {
    /// An empty inbox.
    ///
    /// # Errors
    ///
    /// The config is invalid (see [`InboxConfig::validate`]).
    pub fn new(config: InboxConfig) -> Result<Self, InboxConfigError> {
        config.validate()?;
        Ok(Self::from_valid(Arc::new(config)))
    }

    /// For configs already validated (by the router's build).
    pub(crate) fn from_valid(config: Arc<InboxConfig>) -> Self {
        Self {
            config,
            queue: VecDeque::new(),
            created_floor: None,
        }
    }

    /// Rebuilds an inbox from a [`snapshot`](Self::snapshot).
    ///
    /// The messages are restored as they were, in order, with their arrival
    /// times: they are not filtered or expired again (the next take does that).
    ///
    /// # Errors
    ///
    /// The config is invalid, or the snapshot holds more messages than its
    /// capacity ([`InboxConfigError::SnapshotExceedsCapacity`]).
    pub fn restore(
        config: InboxConfig,
        messages: Vec<(M, SystemTime)>,
    ) -> Result<Self, InboxConfigError> {
        config.validate()?;
        if let Some(capacity) = config.capacity
            && messages.len() > capacity
        {
            return Err(InboxConfigError::SnapshotExceedsCapacity {
                len: messages.len(),
                capacity,
            });
        }
        let queue: VecDeque<Slot<M>> = messages
            .into_iter()
            .map(|(message, arrived)| Slot { message, arrived })
            .collect();
        let created_floor = queue.iter().map(|s| s.message.created_at()).min();
        Ok(Self {
            config: Arc::new(config),
            queue,
            created_floor,
        })
    }

    /// The inbox's configuration.
    pub fn config(&self) -> &InboxConfig {
        &self.config
    }

    /// Delivers a message that arrives at `now`.
    ///
    /// In order: a sender the filter refuses is handed back
    /// ([`Push::Filtered`]); a message already past its time-to-live is
    /// dropped ([`Push::Dropped`] with [`DropReason::Expired`]); a full inbox
    /// applies its [`Overflow`] policy. Expired messages already queued still
    /// occupy their slots here: call [`expire`](Self::expire) first to free them.
    pub fn push(&mut self, message: M, now: SystemTime) -> Push<M> {
        if !self.config.senders.accepts(message.sender()) {
            return Push::Filtered(message);
        }
        self.deliver(message, now)
    }

    /// Delivers a message whose destination the caller has already decided
    /// (a workflow moving a message along a graph edge, or answering a
    /// question this inbox's owner asked): like [`push`](Self::push) but
    /// without the sender filter. TTL and capacity still apply.
    pub fn deliver(&mut self, message: M, now: SystemTime) -> Push<M> {
        if let Some(reason) = self.expiry(&message, now) {
            return Push::Dropped(Dropped { message, reason });
        }
        let created = message.created_at();
        let slot = Slot {
            message,
            arrived: now,
        };
        let Some(capacity) = self.config.capacity.filter(|&c| self.queue.len() >= c) else {
            self.enqueue(slot, created);
            return Push::Accepted;
        };
        let policy = self.config.overflow;
        let reason = DropReason::Overflow { capacity, policy };
        match policy {
            Overflow::DropOldest => {
                let evicted = self.queue.pop_front();
                self.enqueue(slot, created);
                match evicted {
                    Some(old) => Push::AcceptedWithDrop(Dropped {
                        message: old.message,
                        reason,
                    }),
                    // Capacity is at least 1, so a full queue has a front.
                    None => Push::Accepted,
                }
            }
            Overflow::DropNewest => Push::Dropped(Dropped {
                message: slot.message,
                reason,
            }),
            Overflow::Reject => Push::Rejected(slot.message),
        }
    }

    /// Whether the inbox has a batch to run at `now`.
    ///
    /// Does not mutate: expired messages are skipped, not purged. So
    /// [`Readiness::Ready`] means [`take_batch`](Self::take_batch) at the same
    /// `now` returns at least one message, and [`Readiness::Empty`] can hold
    /// while expired messages still await purging. Costs O(batch size) when
    /// nothing has expired.
    pub fn readiness(&self, now: SystemTime) -> Readiness {
        let batch_size = self.config.batch_size;
        let check_expiry = self.may_hold_expired(now);
        let mut live = 0;
        let mut oldest: Option<SystemTime> = None;
        for slot in &self.queue {
            if check_expiry && self.expiry(&slot.message, now).is_some() {
                continue;
            }
            live += 1;
            if live >= batch_size {
                return Readiness::Ready;
            }
            // Callers may pass a `now` that goes backwards, so the head of
            // the queue is not necessarily the earliest arrival.
            oldest = Some(oldest.map_or(slot.arrived, |t| t.min(slot.arrived)));
        }
        let Some(oldest) = oldest else {
            return Readiness::Empty;
        };
        let until = self.config.max_wait.and_then(|w| oldest.checked_add(w));
        match until {
            Some(until) if now >= until => Readiness::Ready,
            until => Readiness::Waiting { until },
        }
    }

    /// Purges expired messages (reported in [`Batch::dropped`]), then takes up
    /// to the batch size of the remaining ones, oldest first.
    ///
    /// Takes whatever is there, ready or not: check
    /// [`readiness`](Self::readiness) first to honour batch size and max wait.
    pub fn take_batch(&mut self, now: SystemTime) -> Batch<M> {
        let dropped = self.purge_expired(now);
        let n = self.config.batch_size.min(self.queue.len());
        let messages = self.queue.drain(..n).map(|s| s.message).collect();
        if self.queue.is_empty() {
            self.created_floor = None;
        }
        Batch { messages, dropped }
    }

    /// Flushes the inbox: purges expired messages, then takes every other
    /// one regardless of batch size.
    pub fn take_all(&mut self, now: SystemTime) -> Batch<M> {
        let dropped = self.purge_expired(now);
        let messages = self.queue.drain(..).map(|s| s.message).collect();
        self.created_floor = None;
        Batch { messages, dropped }
    }

    /// Messages held, including expired ones not yet purged.
    pub fn len(&self) -> usize {
        self.queue.len()
    }

    /// Whether the inbox holds no message at all (expired or not).
    pub fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// The messages held, oldest first, including expired ones not yet purged.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &M> + ExactSizeIterator {
        self.queue.iter().map(|s| &s.message)
    }

    /// The messages with their arrival times, oldest first, for checkpoints;
    /// see [`restore`](Self::restore).
    pub fn snapshot(&self) -> Vec<(M, SystemTime)>
    where
        M: Clone,
    {
        self.queue
            .iter()
            .map(|s| (s.message.clone(), s.arrived))
            .collect()
    }

    fn enqueue(&mut self, slot: Slot<M>, created: SystemTime) {
        self.queue.push_back(slot);
        self.created_floor = Some(self.created_floor.map_or(created, |f| f.min(created)));
    }
}

#[cfg(test)]
mod tests;
