//! [`Inbox`]: one participant's queue of delivered, not yet processed messages.

use std::collections::VecDeque;
use std::time::{Duration, SystemTime};

use crate::config::{InboxConfig, Overflow};
use crate::envelope::Envelope;
use crate::error::ConfigError;
use crate::outcome::{Batch, DropReason, Dropped, Push, Readiness};

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
/// # fn main() -> Result<(), troupe_router::ConfigError> {
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
    config: InboxConfig,
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
    pub fn new(config: InboxConfig) -> Result<Self, ConfigError> {
        config.validate()?;
        Ok(Self::from_valid(config))
    }

    /// For configs already validated (by the router's build).
    pub(crate) fn from_valid(config: InboxConfig) -> Self {
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
    /// capacity ([`ConfigError::SnapshotExceedsCapacity`]).
    pub fn restore(
        config: InboxConfig,
        messages: Vec<(M, SystemTime)>,
    ) -> Result<Self, ConfigError> {
        config.validate()?;
        if let Some(capacity) = config.capacity
            && messages.len() > capacity
        {
            return Err(ConfigError::SnapshotExceedsCapacity {
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
            config,
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

    /// Purges and returns the messages whose time-to-live has passed at `now`.
    pub fn expire(&mut self, now: SystemTime) -> Vec<Dropped<M>> {
        self.purge_expired(now)
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

    fn expiry(&self, message: &M, now: SystemTime) -> Option<DropReason> {
        let ttl = self.config.ttl?;
        // A creation time in the future (clock skew) counts as age zero.
        let age = now
            .duration_since(message.created_at())
            .unwrap_or(Duration::ZERO);
        (age > ttl).then_some(DropReason::Expired { age, ttl })
    }

    fn enqueue(&mut self, slot: Slot<M>, created: SystemTime) {
        self.queue.push_back(slot);
        self.created_floor = Some(self.created_floor.map_or(created, |f| f.min(created)));
    }

    /// Whether some queued message may have expired at `now`; `false` is
    /// certain, `true` calls for a look at each message.
    fn may_hold_expired(&self, now: SystemTime) -> bool {
        match (self.config.ttl, self.created_floor) {
            (Some(ttl), Some(floor)) => now
                .duration_since(floor)
                .is_ok_and(|oldest_age| oldest_age > ttl),
            _ => false,
        }
    }

    fn purge_expired(&mut self, now: SystemTime) -> Vec<Dropped<M>> {
        if !self.may_hold_expired(now) {
            return Vec::new();
        }
        // Creation times need not follow arrival order, so expired messages
        // can sit anywhere in the queue. A read-only pass first: when the
        // floor was merely stale, it refreshes it without moving anything.
        let mut any_expired = false;
        let mut floor: Option<SystemTime> = None;
        for slot in &self.queue {
            any_expired |= self.expiry(&slot.message, now).is_some();
            let created = slot.message.created_at();
            floor = Some(floor.map_or(created, |f| f.min(created)));
        }
        self.created_floor = floor;
        if !any_expired {
            return Vec::new();
        }
        let mut dropped = Vec::new();
        let mut floor: Option<SystemTime> = None;
        // Rotating every slot through once keeps the order of the survivors
        // and reuses the deque's buffer.
        for _ in 0..self.queue.len() {
            let Some(slot) = self.queue.pop_front() else {
                break;
            };
            match self.expiry(&slot.message, now) {
                Some(reason) => dropped.push(Dropped {
                    message: slot.message,
                    reason,
                }),
                None => {
                    let created = slot.message.created_at();
                    floor = Some(floor.map_or(created, |f| f.min(created)));
                    self.queue.push_back(slot);
                }
            }
        }
        self.created_floor = floor;
        dropped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::SenderFilter;

    #[derive(Debug, Clone, PartialEq, Eq)]
    struct Msg {
        id: u32,
        from: &'static str,
        at: SystemTime,
    }

    impl Envelope for Msg {
        fn sender(&self) -> &str {
            self.from
        }
        fn created_at(&self) -> SystemTime {
            self.at
        }
    }

    fn t(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    fn msg(id: u32, from: &'static str, at: u64) -> Msg {
        Msg {
            id,
            from,
            at: t(at),
        }
    }

    fn ids(messages: &[Msg]) -> Vec<u32> {
        messages.iter().map(|m| m.id).collect()
    }

    fn inbox(config: InboxConfig) -> Inbox<Msg> {
        Inbox::new(config).expect("valid config")
    }

    #[test]
    fn filters_by_sender_and_hands_the_message_back() {
        let mut inbox = inbox(InboxConfig::new().senders(["a", "b"]));
        assert_eq!(inbox.push(msg(1, "a", 0), t(0)), Push::Accepted);
        assert_eq!(
            inbox.push(msg(2, "c", 0), t(0)),
            Push::Filtered(msg(2, "c", 0))
        );
        assert_eq!(inbox.push(msg(3, "b", 0), t(0)), Push::Accepted);
        assert_eq!(ids(&inbox.take_all(t(0)).messages), [1, 3]);
    }

    #[test]
    fn any_filter_accepts_everyone() {
        let mut inbox = inbox(InboxConfig::new().senders(SenderFilter::Any));
        assert!(inbox.push(msg(1, "whoever", 0), t(0)).is_accepted());
    }

    #[test]
    fn batch_size_bounds_a_take_in_fifo_order() {
        let mut inbox = inbox(InboxConfig::new().batch_size(2));
        for id in 1..=5 {
            assert!(inbox.push(msg(id, "a", 0), t(0)).is_accepted());
        }
        assert_eq!(ids(&inbox.take_batch(t(0)).messages), [1, 2]);
        assert_eq!(ids(&inbox.take_batch(t(0)).messages), [3, 4]);
        assert_eq!(ids(&inbox.take_batch(t(0)).messages), [5]);
        assert!(inbox.take_batch(t(0)).messages.is_empty());
    }

    #[test]
    fn readiness_follows_batch_size() {
        let mut inbox = inbox(InboxConfig::new().batch_size(2));
        assert_eq!(inbox.readiness(t(0)), Readiness::Empty);
        let _ = inbox.push(msg(1, "a", 0), t(0));
        assert_eq!(inbox.readiness(t(100)), Readiness::Waiting { until: None });
        let _ = inbox.push(msg(2, "a", 0), t(0));
        assert_eq!(inbox.readiness(t(0)), Readiness::Ready);
    }

    #[test]
    fn ttl_expiry_is_reported_with_its_reason() {
        let ttl = Duration::from_secs(60);
        let mut inbox = inbox(InboxConfig::new().batch_size(10).ttl(ttl));
        let _ = inbox.push(msg(1, "a", 0), t(0));
        let _ = inbox.push(msg(2, "a", 50), t(50));
        let _ = inbox.push(msg(3, "a", 10), t(55));

        // Not expired at exactly the ttl.
        assert!(inbox.expire(t(60)).is_empty());

        let batch = inbox.take_batch(t(100));
        assert_eq!(ids(&batch.messages), [2]);
        let dropped: Vec<_> = batch
            .dropped
            .iter()
            .map(|d| (d.message.id, d.reason))
            .collect();
        assert_eq!(
            dropped,
            [
                (
                    1,
                    DropReason::Expired {
                        age: Duration::from_secs(100),
                        ttl
                    }
                ),
                (
                    3,
                    DropReason::Expired {
                        age: Duration::from_secs(90),
                        ttl
                    }
                ),
            ]
        );
    }

    #[test]
    fn expire_keeps_survivors_in_order() {
        let mut inbox = inbox(InboxConfig::new().ttl(Duration::from_secs(10)));
        for (id, at) in [(1, 5), (2, 0), (3, 6), (4, 1), (5, 7)] {
            let _ = inbox.push(msg(id, "a", at), t(at));
        }
        let dropped = inbox.expire(t(15));
        assert_eq!(
            dropped.iter().map(|d| d.message.id).collect::<Vec<_>>(),
            [2, 4]
        );
        assert_eq!(inbox.iter().map(|m| m.id).collect::<Vec<_>>(), [1, 3, 5]);
    }

    #[test]
    fn a_message_expired_on_arrival_is_dropped() {
        let ttl = Duration::from_secs(1);
        let mut inbox = inbox(InboxConfig::new().ttl(ttl));
        let push = inbox.push(msg(1, "a", 0), t(5));
        assert_eq!(
            push,
            Push::Dropped(Dropped {
                message: msg(1, "a", 0),
                reason: DropReason::Expired {
                    age: Duration::from_secs(5),
                    ttl
                },
            })
        );
        assert!(inbox.is_empty());
    }

    #[test]
    fn future_creation_time_counts_as_fresh() {
        let mut inbox = inbox(InboxConfig::new().ttl(Duration::from_secs(1)));
        assert!(inbox.push(msg(1, "a", 100), t(0)).is_accepted());
        assert!(inbox.expire(t(50)).is_empty());
    }

    #[test]
    fn readiness_skips_expired_messages_without_purging() {
        let mut inbox = inbox(
            InboxConfig::new()
                .batch_size(2)
                .ttl(Duration::from_secs(10))
                .max_wait(Duration::from_secs(100)),
        );
        let _ = inbox.push(msg(1, "a", 0), t(0));
        let _ = inbox.push(msg(2, "a", 5), t(5));
        assert_eq!(inbox.readiness(t(5)), Readiness::Ready);
        // Message 1 expired: one live message left, waiting from its arrival.
        assert_eq!(
            inbox.readiness(t(12)),
            Readiness::Waiting {
                until: Some(t(105))
            }
        );
        assert_eq!(inbox.len(), 2);
        // Both expired: nothing to run, yet both still held until purged.
        assert_eq!(inbox.readiness(t(20)), Readiness::Empty);
        assert_eq!(inbox.len(), 2);
        let batch = inbox.take_batch(t(20));
        assert!(batch.messages.is_empty());
        assert_eq!(batch.dropped.len(), 2);
    }

    #[test]
    fn drop_oldest_evicts_the_front() {
        let mut inbox = inbox(InboxConfig::new().capacity(2));
        let _ = inbox.push(msg(1, "a", 0), t(0));
        let _ = inbox.push(msg(2, "a", 0), t(0));
        let push = inbox.push(msg(3, "a", 0), t(0));
        assert_eq!(
            push,
            Push::AcceptedWithDrop(Dropped {
                message: msg(1, "a", 0),
                reason: DropReason::Overflow {
                    capacity: 2,
                    policy: Overflow::DropOldest
                },
            })
        );
        assert!(push.is_accepted());
        assert_eq!(inbox.iter().map(|m| m.id).collect::<Vec<_>>(), [2, 3]);
    }

    #[test]
    fn drop_newest_drops_the_incoming_message() {
        let mut inbox = inbox(
            InboxConfig::new()
                .capacity(1)
                .overflow(Overflow::DropNewest),
        );
        let _ = inbox.push(msg(1, "a", 0), t(0));
        let push = inbox.push(msg(2, "a", 0), t(0));
        assert_eq!(
            push,
            Push::Dropped(Dropped {
                message: msg(2, "a", 0),
                reason: DropReason::Overflow {
                    capacity: 1,
                    policy: Overflow::DropNewest
                },
            })
        );
        assert_eq!(inbox.iter().map(|m| m.id).collect::<Vec<_>>(), [1]);
    }

    #[test]
    fn reject_hands_the_message_back() {
        let mut inbox = inbox(InboxConfig::new().capacity(1).overflow(Overflow::Reject));
        let _ = inbox.push(msg(1, "a", 0), t(0));
        assert_eq!(
            inbox.push(msg(2, "a", 0), t(0)),
            Push::Rejected(msg(2, "a", 0))
        );
        let _ = inbox.take_batch(t(0));
        assert_eq!(inbox.push(msg(3, "a", 0), t(0)), Push::Accepted);
    }

    #[test]
    fn max_wait_makes_a_partial_batch_ready() {
        let mut inbox = inbox(
            InboxConfig::new()
                .batch_size(3)
                .max_wait(Duration::from_secs(10)),
        );
        let _ = inbox.push(msg(1, "a", 0), t(100));
        let _ = inbox.push(msg(2, "a", 0), t(105));
        assert_eq!(
            inbox.readiness(t(109)),
            Readiness::Waiting {
                until: Some(t(110))
            }
        );
        assert_eq!(inbox.readiness(t(110)), Readiness::Ready);
        assert_eq!(ids(&inbox.take_batch(t(110)).messages), [1, 2]);
    }

    #[test]
    fn max_wait_counts_from_the_earliest_arrival() {
        let mut inbox = inbox(
            InboxConfig::new()
                .batch_size(3)
                .max_wait(Duration::from_secs(10)),
        );
        let _ = inbox.push(msg(1, "a", 0), t(100));
        let _ = inbox.push(msg(2, "a", 0), t(50));
        assert_eq!(
            inbox.readiness(t(55)),
            Readiness::Waiting { until: Some(t(60)) }
        );
    }

    #[test]
    fn take_all_flushes_regardless_of_batch_size() {
        let mut inbox = inbox(InboxConfig::new().batch_size(2).ttl(Duration::from_secs(5)));
        for id in 1..=3 {
            let _ = inbox.push(msg(id, "a", 10), t(10));
        }
        let _ = inbox.push(msg(4, "a", 0), t(4));
        let batch = inbox.take_all(t(10));
        assert_eq!(ids(&batch.messages), [1, 2, 3]);
        assert_eq!(batch.dropped.len(), 1);
        assert!(inbox.is_empty());
    }

    #[test]
    fn snapshot_and_restore_round_trip() -> Result<(), ConfigError> {
        let config = InboxConfig::new()
            .batch_size(2)
            .max_wait(Duration::from_secs(3));
        let mut inbox = Inbox::new(config.clone())?;
        let _ = inbox.push(msg(1, "a", 0), t(7));
        let _ = inbox.push(msg(2, "b", 0), t(8));
        let snapshot = inbox.snapshot();
        assert_eq!(snapshot, [(msg(1, "a", 0), t(7)), (msg(2, "b", 0), t(8))]);

        let restored = Inbox::restore(config, snapshot)?;
        assert_eq!(restored.readiness(t(8)), inbox.readiness(t(8)));
        assert_eq!(restored.snapshot(), inbox.snapshot());
        Ok(())
    }

    #[test]
    fn restore_checks_config_and_capacity() {
        let two = vec![(msg(1, "a", 0), t(0)), (msg(2, "a", 0), t(0))];
        let err =
            Inbox::restore(InboxConfig::new().capacity(1), two.clone()).expect_err("over capacity");
        assert_eq!(
            err,
            ConfigError::SnapshotExceedsCapacity {
                len: 2,
                capacity: 1
            }
        );
        let err = Inbox::restore(InboxConfig::new().batch_size(0), two).expect_err("invalid");
        assert_eq!(err, ConfigError::ZeroBatchSize);
    }

    #[test]
    fn new_rejects_invalid_configs() {
        assert_eq!(
            Inbox::<Msg>::new(InboxConfig::new().capacity(0)).err(),
            Some(ConfigError::ZeroCapacity)
        );
    }

    #[test]
    fn iter_len_and_config() {
        let mut inbox = inbox(InboxConfig::new().batch_size(4));
        let _ = inbox.push(msg(1, "a", 0), t(0));
        let _ = inbox.push(msg(2, "a", 0), t(0));
        assert_eq!(inbox.len(), 2);
        assert_eq!(inbox.iter().len(), 2);
        assert_eq!(inbox.iter().next_back().map(|m| m.id), Some(2));
        assert_eq!(inbox.config().batch_size, 4);
    }
}
