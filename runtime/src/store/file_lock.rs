//! [`FileStore`]'s run leases: an advisory lock (`flock`) on the file
//! `lease` in the run's directory, taken without waiting.
//!
//! The kernel gives a `flock` back when the process holding it ends,
//! however it ends (`kill -9` too), so a dead holder never blocks a run:
//! there is nothing to time out. Locks are per open file, so two leases
//! on one run in the same process conflict as well. The holder writes its
//! pid, host and start into the locked file, for the message a refused
//! process prints; the file is emptied before the lock is given back, and
//! never removed (removing it would let two processes lock two different
//! files of the same name).

use std::fs::{File, OpenOptions};
#[cfg(unix)]
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use async_trait::async_trait;

use super::error::StoreError;
use super::file::FileStore;
use super::key::check_run_id;
use super::lease::{LeaseError, RunLease, RunLeases};
#[cfg(unix)]
use super::lease::{LeaseHolder, from_unix_secs, unix_secs};

/// The lock file's name in a run's directory.
const LEASE_NAME: &str = "lease";

/// How many more times (10 ms apart) a refused lease reads a holder file
/// that is still empty.
#[cfg(unix)]
const HOLDER_READS: usize = 20;

#[async_trait]
impl RunLeases for FileStore {
    async fn acquire(&self, run_id: &str) -> Result<RunLease, LeaseError> {
        check_run_id(run_id)?;
        let path = self.log_path(run_id).with_file_name(LEASE_NAME);
        let run_id = run_id.to_string();
        tokio::task::spawn_blocking(move || lock(&path, &run_id))
            .await
            .map_err(StoreError::from)?
    }
}

/// A taken lock: empties the holder file, then unlocks (by closing).
#[cfg(unix)]
struct Locked {
    file: nix::fcntl::Flock<File>,
}

#[cfg(unix)]
impl Drop for Locked {
    fn drop(&mut self) {
        // Best effort: a stale holder text is only read while the file is
        // locked, so a failure here misleads no one.
        let _ = self.file.set_len(0);
    }
}

#[cfg(unix)]
fn lock(path: &Path, run_id: &str) -> Result<RunLease, LeaseError> {
    use nix::errno::Errno;
    use nix::fcntl::{Flock, FlockArg};

    let file = open(path)?;
    match Flock::lock(file, FlockArg::LockExclusiveNonblock) {
        Ok(mut file) => {
            let holder = LeaseHolder::this_process();
            write_holder(&mut file, &holder)
                .map_err(|e| StoreError::io("write the lease holder to", path, e))?;
            Ok(RunLease::new(run_id, holder, Locked { file }))
        }
        Err((mut file, Errno::EWOULDBLOCK)) => {
            // The holder writes its name just after it locks: a file
            // read empty is read again for a moment.
            let mut holder = read_holder(&mut file);
            for _ in 0..HOLDER_READS {
                if holder.is_some() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
                holder = read_holder(&mut file);
            }
            Err(LeaseError::Held {
                run_id: run_id.to_string(),
                holder,
            })
        }
        Err((_, e)) => Err(StoreError::io("lock", path, std::io::Error::from(e)).into()),
    }
}

#[cfg(not(unix))]
fn lock(path: &Path, run_id: &str) -> Result<RunLease, LeaseError> {
    // No `flock`: the lease holds within this process only.
    use std::sync::OnceLock;
    static HELD: OnceLock<super::lease::InProcessLeases> = OnceLock::new();
    open(path)?;
    HELD.get_or_init(Default::default)
        .try_acquire(&format!("{}", path.display()))
        .map(|lease| RunLease::new(run_id, lease.holder().clone(), lease))
        .map_err(|e| match e {
            LeaseError::Held { holder, .. } => LeaseError::Held {
                run_id: run_id.to_string(),
                holder,
            },
            other => other,
        })
}

/// Opens (creating it and its directory) the lock file.
fn open(path: &Path) -> Result<File, StoreError> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(|e| StoreError::io("create directory", dir, e))?;
    }
    OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(path)
        .map_err(|e| StoreError::io("open", PathBuf::from(path), e))
}

/// `pid=…`, `host=…`, `since=…` (Unix seconds), a line each.
#[cfg(unix)]
fn write_holder(file: &mut File, holder: &LeaseHolder) -> std::io::Result<()> {
    file.set_len(0)?;
    file.seek(SeekFrom::Start(0))?;
    let text = format!(
        "pid={}\nhost={}\nsince={}\n",
        holder.pid,
        holder.host,
        unix_secs(holder.since)
    );
    file.write_all(text.as_bytes())
}

/// The holder a locked file names, if it is written yet.
#[cfg(unix)]
fn read_holder(file: &mut File) -> Option<LeaseHolder> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(4096).read_to_string(&mut text).ok()?;
    // A holder being written may be read half-way (`since=17` of ten
    // digits): only a record whose last line is ended is whole.
    if !text.ends_with('\n') {
        return None;
    }
    let field = |name: &str| {
        text.lines()
            .find_map(|l| l.strip_prefix(name)?.strip_prefix('='))
    };
    Some(LeaseHolder {
        pid: field("pid")?.parse().ok()?,
        host: field("host")?.to_string(),
        since: from_unix_secs(field("since")?.parse().ok()?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_run_has_one_holder_until_its_lease_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let store = FileStore::open(dir.path()).unwrap();
        let other = FileStore::open(dir.path()).unwrap();
        let lease = store.acquire("run-1").await.unwrap();
        let err = other.acquire("run-1").await.unwrap_err();
        match &err {
            LeaseError::Held { run_id, holder } => {
                assert_eq!(run_id, "run-1");
                // The file keeps whole seconds, so `since` is compared
                // by pid and host only.
                let h = holder.as_ref().unwrap();
                assert_eq!(h.pid, std::process::id());
                assert_eq!(h.host, lease.holder().host);
            }
            other => panic!("{other}"),
        }
        // A run without checkpoints is still no run of the store.
        assert!(
            crate::store::CheckpointStore::runs(&store)
                .await
                .unwrap()
                .is_empty()
        );
        let _second = other.acquire("run-2").await.unwrap();
        drop(lease);
        other.acquire("run-1").await.unwrap();
        assert!(store.acquire("../x").await.is_err());
    }
}
