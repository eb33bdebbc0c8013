//! Injectable time: [`Clock`], [`SystemClock`] and [`ManualClock`].
//!
//! Inbox operations take `now` as an argument rather than reading a clock, so
//! the inbox itself is deterministic. The runtime reads a [`Clock`] once per
//! event and passes the value down; tests use a [`ManualClock`] and never sleep.

use std::fmt::Debug;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// A source of the current time.
///
/// `Send + Sync + Debug` are required so that `Arc<dyn Clock>` can be shared
/// by concurrent tasks and printed with the structures that hold it.
pub trait Clock: Send + Sync + Debug {
    /// The current time.
    fn now(&self) -> SystemTime;
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now(&self) -> SystemTime {
        (**self).now()
    }
}

impl<C: Clock + ?Sized> Clock for Box<C> {
    fn now(&self) -> SystemTime {
        (**self).now()
    }
}

impl<C: Clock + ?Sized> Clock for Arc<C> {
    fn now(&self) -> SystemTime {
        (**self).now()
    }
}

/// The wall clock: [`SystemTime::now`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> SystemTime {
        SystemTime::now()
    }
}

/// A clock that moves only when told to, for tests and simulations.
///
/// Clones share one time, so a test can keep a handle and advance the clock
/// that the code under test holds. The time is stored as nanoseconds since
/// [`SystemTime::UNIX_EPOCH`] in an atomic, so it is lock-free; times before
/// the epoch are clamped to it and times after year 2554 saturate.
///
/// ```
/// use std::time::{Duration, SystemTime};
/// use troupe_router::{Clock, ManualClock};
///
/// let clock = ManualClock::new(SystemTime::UNIX_EPOCH);
/// let handle = clock.clone();
/// handle.advance(Duration::from_secs(90));
/// assert_eq!(clock.now(), SystemTime::UNIX_EPOCH + Duration::from_secs(90));
/// ```
#[derive(Debug, Clone, Default)]
pub struct ManualClock {
    nanos: Arc<AtomicU64>,
}

impl ManualClock {
    /// A clock showing `start`.
    pub fn new(start: SystemTime) -> Self {
        Self {
            nanos: Arc::new(AtomicU64::new(to_nanos(start))),
        }
    }

    /// Moves the clock forward by `by` (saturating).
    pub fn advance(&self, by: Duration) {
        let by = u64::try_from(by.as_nanos()).unwrap_or(u64::MAX);
        // Relaxed is enough: the clock publishes no other memory, and every
        // access is to this one atomic, which has a single modification order.
        // `fetch_update` never fails when the closure always returns `Some`.
        let _ = self
            .nanos
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| {
                Some(n.saturating_add(by))
            });
    }

    /// Sets the clock to `to`, which may be earlier than the current time.
    pub fn set(&self, to: SystemTime) {
        self.nanos.store(to_nanos(to), Ordering::Relaxed);
    }
}

impl Clock for ManualClock {
    fn now(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_nanos(self.nanos.load(Ordering::Relaxed))
    }
}

fn to_nanos(t: SystemTime) -> u64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn secs(s: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(s)
    }

    #[test]
    fn manual_clock_advances_and_sets() {
        let clock = ManualClock::new(secs(10));
        assert_eq!(clock.now(), secs(10));
        clock.advance(Duration::from_millis(1500));
        assert_eq!(clock.now(), secs(11) + Duration::from_millis(500));
        clock.set(secs(3));
        assert_eq!(clock.now(), secs(3));
    }

    #[test]
    fn clones_share_time() {
        let a = ManualClock::default();
        let b = a.clone();
        b.advance(Duration::from_secs(7));
        assert_eq!(a.now(), secs(7));
    }

    #[test]
    fn saturates_at_both_ends() {
        let clock = ManualClock::new(SystemTime::UNIX_EPOCH - Duration::from_secs(1));
        assert_eq!(clock.now(), SystemTime::UNIX_EPOCH);
        clock.advance(Duration::MAX);
        clock.advance(Duration::MAX);
        assert_eq!(
            clock.now(),
            SystemTime::UNIX_EPOCH + Duration::from_nanos(u64::MAX)
        );
    }

    #[test]
    fn clocks_are_shareable_trait_objects() {
        fn assert_traits<T: Send + Sync + Debug + Clone>() {}
        assert_traits::<SystemClock>();
        assert_traits::<ManualClock>();
        let manual = ManualClock::new(secs(1));
        let clock: Arc<dyn Clock> = Arc::new(manual.clone());
        manual.advance(Duration::from_secs(1));
        assert_eq!(clock.now(), secs(2));
        assert!(SystemClock.now() > secs(1_600_000_000));
        fn via_ref<C: Clock>(clock: &C) -> SystemTime {
            Clock::now(&clock)
        }
        assert_eq!(via_ref(&manual), secs(2));
        assert_eq!(Box::new(manual).now(), secs(2));
    }
}
