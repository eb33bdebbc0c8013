//! Time-to-live: when a message has expired, and purging expired messages
//! from an inbox without disturbing the order of the rest.

use std::time::{Duration, SystemTime};

use super::Inbox;
use crate::envelope::Envelope;
use crate::outcome::{DropReason, Dropped};

impl<M: Envelope> Inbox<M> {
    /// Purges and returns the messages whose time-to-live has passed at `now`.
    pub fn expire(&mut self, now: SystemTime) -> Vec<Dropped<M>> {
        self.purge_expired(now)
    }

    /// Why `message` is expired at `now`, or `None` while it is live.
    pub(super) fn expiry(&self, message: &M, now: SystemTime) -> Option<DropReason> {
        let ttl = self.config.ttl?;
        // A creation time in the future (clock skew) counts as age zero.
        let age = now
            .duration_since(message.created_at())
            .unwrap_or(Duration::ZERO);
        (age > ttl).then_some(DropReason::Expired { age, ttl })
    }

    /// Whether some queued message may have expired at `now`; `false` is
    /// certain, `true` calls for a look at each message.
    pub(super) fn may_hold_expired(&self, now: SystemTime) -> bool {
        match (self.config.ttl, self.created_floor) {
            (Some(ttl), Some(floor)) => now
                .duration_since(floor)
                .is_ok_and(|oldest_age| oldest_age > ttl),
            _ => false,
        }
    }

    pub(super) fn purge_expired(&mut self, now: SystemTime) -> Vec<Dropped<M>> {
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
