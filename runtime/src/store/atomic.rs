//! Crash-safe file replacement: a reader sees the old file or the new one,
//! never a mix, and once a write returns the new file survives a power cut.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::error::StoreError;

/// Writes `parts` (concatenated) to `path` atomically.
///
/// The bytes go to a hidden temporary file in the same directory (a rename
/// is atomic only within one file system), which is flushed to disk before
/// it is renamed over `path`; then the directory is flushed so the rename
/// itself is durable. On failure the temporary file is removed.
pub(crate) fn write_atomic(path: &Path, parts: &[&[u8]]) -> Result<(), StoreError> {
    let tmp = temp_path(path);
    let result = write_then_rename(&tmp, path, parts);
    if result.is_err() {
        // Best effort: the error being reported matters more than this one.
        let _ = fs::remove_file(&tmp);
    }
    result
}

fn write_then_rename(tmp: &Path, path: &Path, parts: &[&[u8]]) -> Result<(), StoreError> {
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(tmp)
        .map_err(|e| StoreError::io("create", tmp, e))?;
    for part in parts {
        file.write_all(part)
            .map_err(|e| StoreError::io("write", tmp, e))?;
    }
    file.sync_all()
        .map_err(|e| StoreError::io("sync", tmp, e))?;
    drop(file);
    fs::rename(tmp, path).map_err(|e| StoreError::io("rename into place", path, e))?;
    if let Some(dir) = path.parent() {
        sync_dir(dir)?;
    }
    Ok(())
}

/// Flushes a directory's entries (creations, renames, removals) to disk.
pub(crate) fn sync_dir(dir: &Path) -> Result<(), StoreError> {
    #[cfg(unix)]
    {
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|e| StoreError::io("sync directory", dir, e))
    }
    // Other platforms cannot open a directory as a file; their renames are
    // made durable by the file system's own journal.
    #[cfg(not(unix))]
    {
        let _ = dir;
        Ok(())
    }
}

/// A hidden name beside `path`, unique among concurrent writers of this
/// machine (process id and a counter), so two saves of the same file never
/// share a temporary file.
fn temp_path(path: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    path.with_file_name(format!(".{name}.tmp-{}-{n}", std::process::id()))
}

/// Removes the temporary files in `dir` that writes cut short left behind
/// (a process killed between creating one and renaming it), returning how
/// many. A temporary file is ours by its name (`.<name>.tmp-<pid>-<n>`);
/// it is stale when the process that wrote it is gone — where `/proc`
/// tells — or else once it is older than [`STALE_AFTER`]. Files of this
/// process and of live processes sharing the directory are left alone.
/// Best effort: a file that cannot be read or removed is skipped.
pub(crate) fn remove_stale_temps(dir: &Path) -> usize {
    let Ok(entries) = fs::read_dir(dir) else {
        return 0;
    };
    let me = std::process::id();
    let proc_fs = Path::new("/proc/self").exists();
    let mut removed = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name.to_str().and_then(temp_writer) else {
            continue;
        };
        if pid == me {
            continue;
        }
        let stale = if proc_fs {
            !Path::new("/proc").join(pid.to_string()).exists()
        } else {
            entry
                .metadata()
                .and_then(|m| m.modified())
                .ok()
                .and_then(|t| t.elapsed().ok())
                .is_some_and(|age| age > STALE_AFTER)
        };
        if stale && fs::remove_file(entry.path()).is_ok() {
            removed += 1;
        }
    }
    removed
}

/// How old a temporary file must be to count as stale where no `/proc`
/// says whether its writer still runs.
const STALE_AFTER: std::time::Duration = std::time::Duration::from_secs(3600);

/// The process id in a temporary file's name (`.<name>.tmp-<pid>-<n>`),
/// if `name` is one.
fn temp_writer(name: &str) -> Option<u32> {
    let rest = name.strip_prefix('.')?;
    let (_, tail) = rest.rsplit_once(".tmp-")?;
    let (pid, n) = tail.split_once('-')?;
    n.parse::<u64>().ok()?;
    pid.parse().ok()
}

/// Whether a directory entry's name is one of our temporary files (or any
/// hidden file): listings skip them.
pub(crate) fn is_hidden(name: &str) -> bool {
    name.starts_with('.')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_are_recognised_by_their_writer() {
        assert_eq!(temp_writer(".r1.thread.tmp-4242-7"), Some(4242));
        let ours = temp_path(Path::new("/x/log"));
        let ours = ours.file_name().and_then(|n| n.to_str()).unwrap();
        assert_eq!(temp_writer(ours), Some(std::process::id()));
        assert_eq!(temp_writer("r1.thread"), None);
        assert_eq!(temp_writer(".hidden"), None);
        assert_eq!(temp_writer(".a.tmp-x-1"), None);
    }

    #[test]
    fn replaces_and_leaves_no_temp_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f.bin");
        write_atomic(&path, &[b"one"]).unwrap();
        write_atomic(&path, &[b"two", b"-parts"]).unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two-parts");
        let names: Vec<_> = fs::read_dir(dir.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn a_failed_write_names_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("missing-dir").join("f.bin");
        let e = write_atomic(&path, &[b"x"]).unwrap_err();
        assert!(e.to_string().contains("missing-dir"), "{e}");
    }
}
