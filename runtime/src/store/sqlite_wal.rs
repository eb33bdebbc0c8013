//! When [`SqliteStore`](super::SqliteStore)'s WAL is copied into the
//! database, and the copying.
//!
//! SQLite's automatic WAL checkpoint is off: it would run, and flush, in
//! whichever commit crossed its mark — on the calling thread when that
//! commit is made there. Instead the saves count what they commit
//! ([`WalCopies::wrote`]); every ~4 MiB a copy is due, and it is made on
//! the blocking pool **when the saves pause** — a run waiting on its model,
//! between turns, at its end — or at once when the WAL has grown to
//! 64 MiB (`WAL_BOUND`) because they never do.
//!
//! In a pause, a copy's bulk, and its flushes, go through a connection of
//! its own beside the store's; what was committed meanwhile is then copied
//! through the store's connection, saves waiting for that short copy only.
//! At the bound, all of it goes through the store's connection, so the WAL
//! grows no further. A WAL copied whole is started over by the next
//! commit; one copied beside a writer that never pauses would never be, and
//! would grow with the run.
//! Copies made while saves went on measurably slowed them (their flushes
//! contend with the writes into the WAL, and the last step takes the
//! store's lock), which is why a due copy waits for a pause first.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use super::sqlite_rows::BUSY_TIMEOUT;

/// WAL bytes committed after which a copy of the WAL is due: about
/// SQLite's own mark (1,000 pages).
const COPY_DUE: u64 = 4 << 20;

/// Bytes in the WAL at which a due copy is made at once, the saves not
/// having paused: the WAL's size, at most, on disk (about 16,000 pages).
const WAL_BOUND: u64 = 64 << 20;

/// How long without a commit counts as a pause.
const PAUSE: Duration = Duration::from_millis(5);

/// How often a due copy looks for a pause.
const LOOK_EVERY: Duration = Duration::from_millis(1);

/// Copies of the WAL beside the saves, at most, before the rest is copied
/// through the store's connection.
const BESIDE_COPIES: usize = 4;

/// WAL frames left that the store's connection copies while saves wait.
const SMALL_REST: i64 = 64;

/// A WAL frame: a page and its 24-byte header.
const FRAME: u64 = 4096 + 24;

/// Payload bytes a page holds (a page less its header and cell pointers).
const PAGE_PAYLOAD: u64 = 4072;

/// Pages a commit writes besides its payload's: the leaves of the table's
/// b-tree and of its key's index.
const COMMIT_PAGES: u64 = 2;

/// What a commit of `bytes` adds to the WAL: whole frames.
fn frames_bytes(bytes: usize) -> u64 {
    ((bytes as u64).div_ceil(PAGE_PAYLOAD) + COMMIT_PAGES) * FRAME
}

/// What the saves of one store committed, and whether a copy is under way.
#[derive(Debug)]
pub(super) struct WalCopies {
    /// WAL bytes committed since the last copy was started.
    since_copy: AtomicU64,
    /// WAL bytes committed since the WAL was last copied whole.
    in_wal: AtomicU64,
    /// When the last commit was made, in µs since `epoch`.
    last_commit: AtomicU64,
    epoch: Instant,
    /// A copy is waiting for a pause or being made.
    copying: AtomicBool,
}

impl WalCopies {
    pub(super) fn new() -> Self {
        WalCopies {
            since_copy: AtomicU64::new(0),
            in_wal: AtomicU64::new(0),
            last_commit: AtomicU64::new(0),
            epoch: Instant::now(),
            copying: AtomicBool::new(false),
        }
    }

    /// Counts a commit of a `bytes` payload; says whether a copy is now due (and
    /// none under way: the caller then starts one, [`copy`]).
    pub(super) fn wrote(&self, bytes: usize) -> bool {
        self.last_commit.store(self.now(), Ordering::Relaxed);
        let added = frames_bytes(bytes);
        self.in_wal.fetch_add(added, Ordering::Relaxed);
        let before = self.since_copy.fetch_add(added, Ordering::Relaxed);
        if before + added < COPY_DUE {
            return false;
        }
        self.since_copy.store(0, Ordering::Relaxed);
        !self.copying.swap(true, Ordering::AcqRel)
    }

    fn now(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_micros()).unwrap_or(u64::MAX)
    }

    /// Whether the copy should be made now, and how: `Some(Beside)` when
    /// the saves paused, `Some(Through)` when the WAL is at its bound.
    fn time_to_copy(&self) -> Option<How> {
        if self.in_wal.load(Ordering::Relaxed) >= WAL_BOUND {
            return Some(How::Through);
        }
        let quiet = self
            .now()
            .saturating_sub(self.last_commit.load(Ordering::Relaxed));
        (quiet >= PAUSE.as_micros() as u64).then_some(How::Beside)
    }
}

/// How a copy of the WAL is made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum How {
    /// Its bulk through a connection of its own, the rest through the
    /// store's: in a pause, saves that come meanwhile wait for the rest only.
    Beside,
    /// All of it through the store's connection, saves waiting: the WAL
    /// grows no further than its bound while they never pause.
    Through,
}

/// Makes the due copy of the WAL of the store whose connection is `conn`
/// (of the database file `path`; `None` in memory, copied through `conn`
/// alone) on the blocking pool, once [`WalCopies::time_to_copy`]. Nothing
/// outside a tokio runtime (the WAL then waits for the next due copy).
pub(super) fn copy(wal: &Arc<WalCopies>, conn: &Arc<Mutex<Connection>>, path: Option<&Arc<Path>>) {
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        wal.copying.store(false, Ordering::Release);
        return;
    };
    let (wal, conn, path) = (wal.clone(), Arc::downgrade(conn), path.cloned());
    handle.spawn_blocking(move || {
        copy_when_due(&wal, &conn, path.as_deref());
        wal.copying.store(false, Ordering::Release);
    });
}

fn copy_when_due(wal: &WalCopies, conn: &Weak<Mutex<Connection>>, path: Option<&Path>) {
    let how = loop {
        if let Some(how) = wal.time_to_copy() {
            break how;
        }
        // The store gone, its last connection's close copies the WAL.
        if conn.strong_count() == 0 {
            return;
        }
        std::thread::sleep(LOOK_EVERY);
    };
    if how == How::Beside
        && let Some(path) = path
        && let Ok(beside) = Connection::open(path)
    {
        let _ = beside.busy_timeout(BUSY_TIMEOUT);
        // Again while saves added much during a copy: what is left for
        // the store's connection is then little.
        for _ in 0..BESIDE_COPIES {
            match checkpoint_wal(&beside) {
                Some(left) if left > SMALL_REST => {}
                _ => break,
            }
        }
    }
    let Some(conn) = conn.upgrade() else { return };
    let conn = conn.lock().unwrap_or_else(|p| p.into_inner());
    if checkpoint_wal(&conn) == Some(0) {
        wal.in_wal.store(0, Ordering::Relaxed);
    }
}

/// Copies the WAL into the database as far as readers allow; returns how
/// many of its frames are not copied yet (when SQLite says). Best effort:
/// one that fails leaves the WAL longer until the next.
fn checkpoint_wal(conn: &Connection) -> Option<i64> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
        Ok(r.get::<_, i64>(1)? - r.get::<_, i64>(2)?)
    })
    .ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_is_due_every_few_mib_and_not_twice_at_once() {
        let wal = WalCopies::new();
        let mut due = 0;
        for _ in 0..2_000 {
            if wal.wrote(4_000) {
                due += 1;
            }
        }
        // ~25 MB of frames: due once, then not again while it is under way.
        assert_eq!(due, 1);
        wal.copying.store(false, Ordering::Release);
        let mut again = false;
        for _ in 0..400 {
            again |= wal.wrote(4_000);
        }
        assert!(again, "a copy is due again once the last one is done");
    }

    #[test]
    fn a_commit_is_counted_in_whole_frames() {
        assert_eq!(frames_bytes(0), 2 * FRAME);
        assert_eq!(frames_bytes(1_200), 3 * FRAME);
        assert_eq!(frames_bytes(12 * 1024), 6 * FRAME);
    }

    #[test]
    fn a_due_copy_waits_for_a_pause_unless_the_wal_is_at_its_bound() {
        let wal = WalCopies::new();
        wal.wrote(100);
        assert_eq!(wal.time_to_copy(), None, "a commit just made is no pause");
        std::thread::sleep(PAUSE * 2);
        assert_eq!(wal.time_to_copy(), Some(How::Beside), "a pause");
        wal.wrote(usize::try_from(WAL_BOUND).unwrap_or(usize::MAX));
        assert_eq!(
            wal.time_to_copy(),
            Some(How::Through),
            "a WAL at its bound is copied at once, saves waiting"
        );
    }
}
