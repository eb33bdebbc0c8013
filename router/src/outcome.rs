//! What inbox operations report: [`Push`], [`Dropped`], [`Readiness`], [`Batch`].
//!
//! An inbox never loses a message silently: every message it does not keep is
//! handed back to the caller inside one of these values, with the reason.

use std::fmt;
use std::time::{Duration, SystemTime};

use crate::config::Overflow;

/// Why a message was dropped.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DropReason {
    /// It outlived the inbox's time-to-live.
    Expired {
        /// Its age (from creation) when it was dropped.
        age: Duration,
        /// The inbox's time-to-live.
        ttl: Duration,
    },
    /// The inbox was full.
    Overflow {
        /// The inbox's capacity.
        capacity: usize,
        /// The policy that chose this message.
        policy: Overflow,
    },
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Expired { age, ttl } => write!(
                f,
                "expired: age {} exceeds ttl {}",
                humantime::format_duration(*age),
                humantime::format_duration(*ttl)
            ),
            Self::Overflow { capacity, policy } => {
                write!(f, "inbox full (capacity {capacity}, policy: {policy})")
            }
        }
    }
}

/// A message the inbox dropped, handed back with the reason.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dropped<M> {
    /// The message the inbox did not keep.
    pub message: M,
    /// Why it was dropped.
    pub reason: DropReason,
}

/// The outcome of [`Inbox::push`](crate::Inbox::push).
#[derive(Debug, Clone, PartialEq, Eq)]
#[must_use = "a push that is not accepted hands the message back"]
pub enum Push<M> {
    /// The message is in the inbox.
    Accepted,
    /// The inbox does not accept this sender; the message is handed back.
    Filtered(M),
    /// The message is in the inbox, and the oldest one was evicted to make
    /// room ([`Overflow::DropOldest`]).
    AcceptedWithDrop(Dropped<M>),
    /// The message was dropped: it had already expired on arrival, or the
    /// inbox was full under [`Overflow::DropNewest`].
    Dropped(Dropped<M>),
    /// The inbox is full under [`Overflow::Reject`]; the message is handed back.
    Rejected(M),
}

impl<M> Push<M> {
    /// Whether the pushed message is now in the inbox.
    pub fn is_accepted(&self) -> bool {
        matches!(self, Self::Accepted | Self::AcceptedWithDrop(_))
    }
}

/// Whether an inbox has work, from [`Inbox::readiness`](crate::Inbox::readiness).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Readiness {
    /// No live messages.
    Empty,
    /// A partial batch is waiting.
    Waiting {
        /// When it becomes ready: the arrival of its oldest message plus the
        /// max wait. `None` without a max wait: it then runs only when full
        /// or flushed with [`Inbox::take_all`](crate::Inbox::take_all).
        until: Option<SystemTime>,
    },
    /// A full batch, or a partial batch whose max wait has passed.
    Ready,
}

impl Readiness {
    /// Whether this is [`Readiness::Ready`].
    pub fn is_ready(&self) -> bool {
        matches!(self, Self::Ready)
    }
}

/// What [`Inbox::take_batch`](crate::Inbox::take_batch) and friends return.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Batch<M> {
    /// The messages taken, oldest first.
    pub messages: Vec<M>,
    /// Expired messages purged on the way.
    pub dropped: Vec<Dropped<M>>,
}

impl<M> Default for Batch<M> {
    fn default() -> Self {
        Self {
            messages: Vec::new(),
            dropped: Vec::new(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reasons_display_their_numbers() {
        let expired = DropReason::Expired {
            age: Duration::from_secs(61),
            ttl: Duration::from_secs(60),
        };
        assert_eq!(expired.to_string(), "expired: age 1m 1s exceeds ttl 1m");
        let full = DropReason::Overflow {
            capacity: 3,
            policy: Overflow::DropNewest,
        };
        assert_eq!(
            full.to_string(),
            "inbox full (capacity 3, policy: drop newest)"
        );
    }

    #[test]
    fn helpers() {
        assert!(Push::<()>::Accepted.is_accepted());
        assert!(!Push::Filtered(()).is_accepted());
        assert!(Readiness::Ready.is_ready());
        assert!(!Readiness::Empty.is_ready());
        assert_eq!(Batch::<u8>::default().messages.len(), 0);
    }
}
