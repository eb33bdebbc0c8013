//! Times as SQLite integers: whole seconds and nanoseconds either side of
//! the Unix epoch, so any `SystemTime` round-trips exactly.

use std::time::{Duration, SystemTime};

/// `SystemTime` as whole seconds (floored, negative before 1970) and
/// nanoseconds, so any time round-trips exactly.
pub(super) fn to_unix(t: SystemTime) -> (i64, i64) {
    match t.duration_since(SystemTime::UNIX_EPOCH) {
        Ok(d) => (d.as_secs() as i64, d.subsec_nanos() as i64),
        Err(e) => {
            let d = e.duration();
            let (secs, nanos) = (d.as_secs() as i64, d.subsec_nanos() as i64);
            if nanos == 0 {
                (-secs, 0)
            } else {
                (-secs - 1, 1_000_000_000 - nanos)
            }
        }
    }
}

/// The time [`to_unix`] gave as seconds and nanoseconds; `None` if it
/// cannot be a `SystemTime`.
pub(super) fn from_unix(secs: i64, nanos: i64) -> Option<SystemTime> {
    let nanos = Duration::from_nanos(u64::try_from(nanos).ok()?);
    if secs >= 0 {
        SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs as u64) + nanos)
    } else {
        SystemTime::UNIX_EPOCH
            .checked_sub(Duration::from_secs(secs.unsigned_abs()))?
            .checked_add(nanos)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_round_trip_either_side_of_the_epoch() {
        let e = SystemTime::UNIX_EPOCH;
        for t in [
            e,
            e + Duration::new(5, 7),
            e - Duration::new(5, 7),
            e - Duration::new(0, 1),
            e - Duration::new(3, 0),
            SystemTime::now(),
        ] {
            let (s, n) = to_unix(t);
            assert!((0..1_000_000_000).contains(&n));
            assert_eq!(from_unix(s, n), Some(t));
        }
    }
}
