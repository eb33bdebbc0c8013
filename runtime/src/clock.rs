//! The run's one clock: tokio's time, so a test on paused time
//! (`#[tokio::test(start_paused = true)]`) drives every wait of a run —
//! inbox time-to-live and max wait, retry backoff, stop timeouts and
//! deadlines — without sleeping for real.
//!
//! Everything that *waits* (retry backoff, the wake-up for a partial batch,
//! [`StopCondition::timeout`](crate::StopCondition::timeout), the context's
//! deadline, a scripted model's delay) sleeps on tokio's timer. Everything
//! that *stamps* a time an inbox compares — a message's creation time, when it
//! arrived in an inbox — reads [`RunClock`], a
//! [`troupe_router::Clock`] fed from the same tokio time: the wall clock
//! when the process first read it, plus how far tokio's clock has moved
//! since. On a running clock that is the wall clock (give or take the
//! system clock being set while the process runs); on a paused one it moves
//! only as the test advances time.
//!
//! Left on the wall clock, on purpose: the metadata nobody waits on — a
//! checkpoint's `created_at` and a store's timestamps (they order
//! checkpoints across processes, which share no tokio clock), a run's
//! `started_at` in its summary, and the per-process seed of message ids.

use std::sync::OnceLock;
use std::time::SystemTime;

use tokio::time::Instant;

/// The runtime's clock, as a [`troupe_router::Clock`]: tokio's time turned
/// into a [`SystemTime`] (the notes at the top of `runtime/src/clock.rs`
/// say what waits on tokio's timer and what stamps with this clock).
///
/// It is zero-sized and reads no lock: one thread-local look-up for
/// tokio's clock, then arithmetic.
///
/// ```
/// use std::time::Duration;
/// use troupe_runtime::{Clock, RunClock};
///
/// # #[tokio::main(flavor = "current_thread", start_paused = true)]
/// # async fn main() {
/// let before = RunClock.now();
/// tokio::time::sleep(Duration::from_secs(3600)).await; // paused: returns at once
/// assert_eq!(RunClock.now().duration_since(before).unwrap(), Duration::from_secs(3600));
/// # }
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RunClock;

impl troupe_router::Clock for RunClock {
    #[inline]
    fn now(&self) -> SystemTime {
        now()
    }
}

/// The wall clock and tokio's clock, read together once per process.
fn anchor() -> &'static (SystemTime, Instant) {
    static ANCHOR: OnceLock<(SystemTime, Instant)> = OnceLock::new();
    ANCHOR.get_or_init(|| (SystemTime::now(), Instant::now()))
}

/// The current time on the run's clock (see [`RunClock`]).
#[inline]
pub(crate) fn now() -> SystemTime {
    let (wall, at) = *anchor();
    let tokio_now = Instant::now();
    // A paused runtime started after the anchor may show an instant before
    // it (another test advanced its own clock first): count backwards then.
    match tokio_now.checked_duration_since(at) {
        Some(ahead) => wall.checked_add(ahead).unwrap_or(wall),
        None => wall
            .checked_sub(at.duration_since(tokio_now))
            .unwrap_or(wall),
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test(start_paused = true)]
    async fn follows_paused_time_exactly() {
        let t0 = now();
        tokio::time::advance(Duration::from_millis(1500)).await;
        assert_eq!(
            now().duration_since(t0).ok(),
            Some(Duration::from_millis(1500))
        );
        tokio::time::sleep(Duration::from_secs(60)).await;
        assert_eq!(
            now().duration_since(t0).ok(),
            Some(Duration::from_millis(61_500))
        );
    }

    #[test]
    fn tracks_the_wall_clock_outside_a_runtime() {
        let wall = SystemTime::now();
        let ours = now();
        let gap = ours.duration_since(wall).unwrap_or_else(|e| e.duration());
        assert!(gap < Duration::from_secs(5), "{gap:?}");
    }
}
