//! One owner per run: [`RunLeases`], the store-level capability a process
//! takes before it runs a run, and the [`RunLease`] guard that gives the
//! run back when dropped.
//!
//! Every store implements it the way its storage can share a lock:
//!
//! | store | lease | a holder that died |
//! |---|---|---|
//! | [`MemoryStore`](super::MemoryStore) | a table in the process ([`InProcessLeases`]) | gone with the process |
//! | [`FileStore`](super::FileStore) | an advisory lock (`flock`) on `<run dir>/lease`, with the holder written in it | the kernel drops the lock when the process ends, however it ends |
//! | [`SqliteStore`](super::SqliteStore) | a row in `run_leases`, its heartbeat renewed every [`HEARTBEAT`] | taken over once its heartbeat is older than [`STALE_AFTER`], or at once when its pid is dead on this host |
//!
//! The SQLite scheme (a row, a heartbeat, a bound) needs nothing of the
//! machine it runs on but a clock, so a store shared between machines
//! (PostgreSQL) can use it as it is.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use async_trait::async_trait;

use super::error::StoreError;

/// How often a lease that needs one renews its heartbeat.
pub const HEARTBEAT: Duration = Duration::from_secs(5);

/// How old a heartbeat may be before its lease is taken over (whatever the
/// holder's host): six missed heartbeats.
pub const STALE_AFTER: Duration = Duration::from_secs(30);

/// Who holds a run's lease.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseHolder {
    /// The holder's process id.
    pub pid: u32,
    /// The host it runs on.
    pub host: String,
    /// When it took the lease.
    pub since: SystemTime,
}

impl LeaseHolder {
    /// This process, now.
    pub fn this_process() -> Self {
        LeaseHolder {
            pid: std::process::id(),
            host: this_host(),
            since: SystemTime::now(),
        }
    }

    /// Whether the holder is a process of this host that has ended (or is
    /// a zombie): its lease may be taken over at once.
    pub fn is_dead_here(&self) -> bool {
        self.host == this_host() && !pid_alive(self.pid)
    }
}

impl fmt::Display for LeaseHolder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "pid {} on {}, since {}",
            self.pid,
            self.host,
            humantime::format_rfc3339_seconds(self.since)
        )
    }
}

/// Why a lease was not taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LeaseError {
    /// Another process (or another part of this one) runs the run.
    #[error("run `{run_id}` is being run by {}", holder.as_ref().map_or_else(|| "another process".to_string(), |h| h.to_string()))]
    Held {
        /// The run.
        run_id: String,
        /// Who holds it, when the store could tell.
        holder: Option<LeaseHolder>,
    },
    /// The store could not be asked.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// A store that can say which process runs a run.
///
/// [`acquire`](RunLeases::acquire) takes the lease on a run for this
/// process, or says who holds it ([`LeaseError::Held`]); the lease is held
/// until the [`RunLease`] is dropped. A lease left by a process that died
/// is taken over (see the module doc for how each store tells).
#[async_trait]
pub trait RunLeases: Send + Sync {
    /// Takes the lease on `run_id`, or says who holds it.
    async fn acquire(&self, run_id: &str) -> Result<RunLease, LeaseError>;

    /// [`acquire`](RunLeases::acquire), noting on the lease what the run
    /// is (`note`: text the caller reads back, such as how to start the
    /// run again), so a process that takes over a lease its holder left
    /// behind ([`abandoned`](RunLeases::abandoned)) knows what it takes
    /// over. Stores whose leases nobody else can take over (memory,
    /// directory, SQLite) drop the note: the default.
    async fn acquire_noting(&self, run_id: &str, note: &str) -> Result<RunLease, LeaseError> {
        let _ = note;
        self.acquire(run_id).await
    }

    /// Takes over a lease [`abandoned`](RunLeases::abandoned) named:
    /// as [`acquire_noting`](RunLeases::acquire_noting), but only while
    /// the lease is still left behind — not when its run has ended since
    /// (taken over and finished by another process, which gave the lease
    /// back), so a run is never carried on twice. The default (stores with
    /// nothing abandoned) is `acquire_noting`.
    async fn take_over(&self, run_id: &str, note: &str) -> Result<RunLease, LeaseError> {
        self.acquire_noting(run_id, note).await
    }

    /// The leases whose holder died (a process of this host that has
    /// ended, or a heartbeat older than [`STALE_AFTER`]): each run was cut
    /// short while its holder ran it, and may be taken over. A store one
    /// process owns has none to offer: the default.
    async fn abandoned(&self) -> Result<Vec<Abandoned>, StoreError> {
        Ok(Vec::new())
    }

    /// Claims the tick at `tick_secs` (Unix seconds) of schedule
    /// `schedule` of team `team`: `true` for the one caller that is to run
    /// it. A store one process owns (memory, directory, SQLite) has one
    /// server, which runs every tick: the default says `true`; a store
    /// shared by several servers (PostgreSQL) records the claim so only
    /// its first caller gets `true`.
    async fn claim_tick(
        &self,
        team: &str,
        schedule: &str,
        tick_secs: i64,
    ) -> Result<bool, StoreError> {
        let _ = (team, schedule, tick_secs);
        Ok(true)
    }
}

#[async_trait]
impl<T: RunLeases + ?Sized> RunLeases for Arc<T> {
    async fn acquire(&self, run_id: &str) -> Result<RunLease, LeaseError> {
        (**self).acquire(run_id).await
    }

    async fn acquire_noting(&self, run_id: &str, note: &str) -> Result<RunLease, LeaseError> {
        (**self).acquire_noting(run_id, note).await
    }

    async fn take_over(&self, run_id: &str, note: &str) -> Result<RunLease, LeaseError> {
        (**self).take_over(run_id, note).await
    }

    async fn abandoned(&self) -> Result<Vec<Abandoned>, StoreError> {
        (**self).abandoned().await
    }

    async fn claim_tick(
        &self,
        team: &str,
        schedule: &str,
        tick_secs: i64,
    ) -> Result<bool, StoreError> {
        (**self).claim_tick(team, schedule, tick_secs).await
    }
}

/// A lease its holder left behind (see [`RunLeases::abandoned`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Abandoned {
    /// The run.
    pub run_id: String,
    /// Who held it.
    pub holder: LeaseHolder,
    /// What its holder noted on it ([`RunLeases::acquire_noting`]).
    pub note: Option<String>,
}

/// A run's lease, held by this process until dropped.
pub struct RunLease {
    run_id: String,
    holder: LeaseHolder,
    /// What keeps the lease (a file lock, a heartbeat); its own `Drop`
    /// gives it back.
    _held: Box<dyn Send + Sync>,
}

impl RunLease {
    /// A lease on `run_id` held by `holder` for as long as `held` lives:
    /// dropping `held` must give the lease back. For stores outside this
    /// crate.
    pub fn new(
        run_id: impl Into<String>,
        holder: LeaseHolder,
        held: impl Send + Sync + 'static,
    ) -> Self {
        RunLease {
            run_id: run_id.into(),
            holder,
            _held: Box::new(held),
        }
    }

    /// The run held.
    pub fn run_id(&self) -> &str {
        &self.run_id
    }

    /// Who holds it (this process).
    pub fn holder(&self) -> &LeaseHolder {
        &self.holder
    }
}

impl fmt::Debug for RunLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunLease")
            .field("run_id", &self.run_id)
            .field("holder", &self.holder)
            .finish()
    }
}

/// Leases kept in this process: what the memory store holds (its runs live
/// no longer than the process). Clones share the table.
#[derive(Debug, Clone, Default)]
pub struct InProcessLeases {
    held: Arc<Mutex<HashMap<String, LeaseHolder>>>,
}

impl InProcessLeases {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the lease on `run_id` if no one in this process holds it.
    pub fn try_acquire(&self, run_id: &str) -> Result<RunLease, LeaseError> {
        let mut held = self.held.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(holder) = held.get(run_id) {
            return Err(LeaseError::Held {
                run_id: run_id.to_string(),
                holder: Some(holder.clone()),
            });
        }
        let holder = LeaseHolder::this_process();
        held.insert(run_id.to_string(), holder.clone());
        let release = InProcessRelease {
            table: self.held.clone(),
            run_id: run_id.to_string(),
        };
        Ok(RunLease::new(run_id, holder, release))
    }
}

#[async_trait]
impl RunLeases for InProcessLeases {
    async fn acquire(&self, run_id: &str) -> Result<RunLease, LeaseError> {
        self.try_acquire(run_id)
    }
}

#[async_trait]
impl RunLeases for super::MemoryStore {
    async fn acquire(&self, run_id: &str) -> Result<RunLease, LeaseError> {
        super::key::check_run_id(run_id)?;
        self.leases.try_acquire(run_id)
    }
}

/// Removes a run from an [`InProcessLeases`] table when dropped.
struct InProcessRelease {
    table: Arc<Mutex<HashMap<String, LeaseHolder>>>,
    run_id: String,
}

impl Drop for InProcessRelease {
    fn drop(&mut self) {
        let mut held = self.table.lock().unwrap_or_else(|p| p.into_inner());
        held.remove(&self.run_id);
    }
}

/// This host's name (`localhost` when it cannot be read).
pub fn this_host() -> String {
    system_host_name()
        .or_else(|| std::env::var("COMPUTERNAME").ok())
        .unwrap_or_else(|| "localhost".into())
}

#[cfg(unix)]
fn system_host_name() -> Option<String> {
    nix::unistd::gethostname()
        .ok()
        .map(|name| name.to_string_lossy().into_owned())
}

#[cfg(not(unix))]
fn system_host_name() -> Option<String> {
    None
}

/// Whether process `pid` of this host is alive (a zombie is not: it has
/// ended and waits only to be reaped).
pub(crate) fn pid_alive(pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            // The state follows the command name, which is in parentheses
            // and may hold anything: read after the last `)`.
            Ok(stat) => !stat
                .rsplit_once(')')
                .is_some_and(|(_, rest)| rest.trim_start().starts_with(['Z', 'X'])),
            Err(_) => false,
        }
    }
    #[cfg(all(unix, not(target_os = "linux")))]
    {
        use nix::errno::Errno;
        use nix::sys::signal::kill;
        use nix::unistd::Pid;
        let Ok(raw) = i32::try_from(pid) else {
            return false;
        };
        !matches!(kill(Pid::from_raw(raw), None), Err(Errno::ESRCH))
    }
    #[cfg(not(unix))]
    {
        // Without a way to ask, a holder counts as alive until its
        // heartbeat is stale.
        let _ = pid;
        true
    }
}

/// Seconds since the Unix epoch (0 before it).
pub(crate) fn unix_secs(t: SystemTime) -> i64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
}

/// The time `secs` seconds after the Unix epoch.
pub(crate) fn from_unix_secs(secs: i64) -> SystemTime {
    SystemTime::UNIX_EPOCH + Duration::from_secs(u64::try_from(secs).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn one_holder_per_run_in_process_and_drop_gives_it_back() {
        let leases = InProcessLeases::new();
        let first = leases.acquire("r1").await.unwrap();
        assert_eq!(first.holder().pid, std::process::id());
        let err = leases.acquire("r1").await.unwrap_err();
        assert!(
            matches!(&err, LeaseError::Held { run_id, holder: Some(h) } if run_id == "r1" && h.pid == std::process::id()),
            "{err}"
        );
        assert!(
            err.to_string()
                .contains(&format!("pid {}", std::process::id()))
        );
        // Another run is free.
        let _other = leases.clone().acquire("r2").await.unwrap();
        drop(first);
        leases.acquire("r1").await.unwrap();
    }

    #[test]
    fn this_process_is_alive_and_an_ended_child_is_not() {
        assert!(pid_alive(std::process::id()));
        let mut child = std::process::Command::new("true").spawn().unwrap();
        let pid = child.id();
        child.wait().unwrap();
        assert!(!pid_alive(pid) || cfg!(not(unix)));
    }
}
