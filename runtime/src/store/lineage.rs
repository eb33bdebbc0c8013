//! [`Lineage`]: where a forked run came from — the run and checkpoint it
//! was started from — kept by the stores beside the run's checkpoints
//! (see [`CheckpointStore::lineage`](super::CheckpointStore::lineage)).
//!
//! Stores keep it apart from the checkpoints, so stores written before
//! forks existed load as they are (their runs have no lineage), and a
//! fork never writes into the run it came from.

use std::time::SystemTime;

use serde::{Deserialize, Serialize};

use crate::checkpoint::record::CheckpointId;
use super::error::StoreError;

/// Where a run was forked from.
///
/// ```
/// use troupe_runtime::store::{CheckpointId, Lineage};
///
/// let l = Lineage::new("run-1", CheckpointId(7));
/// assert_eq!(l.to_string(), format!("run-1@{}", CheckpointId(7)));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lineage {
    /// The run it was forked from.
    pub parent_run: String,
    /// The checkpoint of that run it started from.
    pub checkpoint: CheckpointId,
    /// When it was forked.
    pub forked_at: SystemTime,
}

impl Lineage {
    /// A lineage from `checkpoint` of run `parent_run`, forked now.
    pub fn new(parent_run: impl Into<String>, checkpoint: CheckpointId) -> Self {
        Lineage {
            parent_run: parent_run.into(),
            checkpoint,
            forked_at: SystemTime::now(),
        }
    }
}

impl std::fmt::Display for Lineage {
    /// `RUN@CHECKPOINT`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}", self.parent_run, self.checkpoint)
    }
}

/// The JSON a file store keeps a lineage as (one object, times in
/// seconds since the epoch).
pub(super) fn encode(lineage: &Lineage) -> Vec<u8> {
    let (secs, nanos) = since_epoch(lineage.forked_at);
    let value = serde_json::json!({
        "parent_run": lineage.parent_run,
        "checkpoint": lineage.checkpoint.to_string(),
        "forked_secs": secs,
        "forked_nanos": nanos,
    });
    format!("{value}\n").into_bytes()
}

/// Seconds and nanoseconds since the epoch (0 before it).
pub(super) fn since_epoch(t: SystemTime) -> (u64, u32) {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .map_or((0, 0), |d| (d.as_secs(), d.subsec_nanos()))
}

/// The time `secs` and `nanos` after the epoch.
pub(super) fn from_epoch(secs: u64, nanos: u32) -> SystemTime {
    SystemTime::UNIX_EPOCH + std::time::Duration::new(secs, nanos.min(999_999_999))
}

/// A lineage read back from its JSON (`what` names the file in errors).
pub(super) fn decode(bytes: &[u8], what: &str) -> Result<Lineage, StoreError> {
    let bad = |reason: String| StoreError::Corrupt {
        what: what.to_string(),
        reason,
    };
    let value: serde_json::Value = serde_json::from_slice(bytes).map_err(|e| bad(e.to_string()))?;
    let text = |key: &str| {
        value
            .get(key)
            .and_then(serde_json::Value::as_str)
            .ok_or_else(|| bad(format!("no text field `{key}`")))
    };
    let parent_run = text("parent_run")?.to_string();
    let checkpoint = text("checkpoint")?
        .parse()
        .map_err(|e: StoreError| bad(e.to_string()))?;
    let secs = value
        .get("forked_secs")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(0);
    let nanos = value
        .get("forked_nanos")
        .and_then(serde_json::Value::as_u64)
        .and_then(|n| u32::try_from(n).ok())
        .unwrap_or(0);
    Ok(Lineage {
        parent_run,
        checkpoint,
        forked_at: from_epoch(secs, nanos),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::CheckpointStore;

    #[test]
    fn a_lineage_round_trips_through_its_json_and_damage_is_named() {
        let l = Lineage::new("run-1", CheckpointId::new());
        let back = decode(&encode(&l), "f").unwrap();
        assert_eq!(back, l);
        let e = decode(b"{\"parent_run\": 3}", "lineage file x").unwrap_err();
        assert!(e.to_string().contains("lineage file x"), "{e}");
    }

    /// Each store keeps a lineage beside a run without touching its
    /// checkpoints, and a store written before lineage existed (no
    /// `lineage/` directory, no `run_lineage` table) loads as it was.
    async fn keeps_lineage(store: &dyn crate::store::CheckpointStore) {
        use crate::store::Checkpoint;
        let cp = Checkpoint::new("orig", None, 1, 7, b"F-state".to_vec());
        store.save(&cp).await.unwrap();
        assert_eq!(store.lineage("orig").await.unwrap(), None);
        assert_eq!(store.lineage("fork").await.unwrap(), None);
        let l = Lineage::new("orig", cp.id);
        assert!(store.save_lineage("fork", &l).await.unwrap());
        assert_eq!(store.lineage("fork").await.unwrap(), Some(l));
        assert_eq!(store.lineage("orig").await.unwrap(), None);
        assert_eq!(store.load("orig", &cp.id).await.unwrap(), Some(cp));
        assert_eq!(store.runs().await.unwrap(), ["orig"]);
        assert!(
            store
                .save_lineage("../x", &Lineage::new("orig", CheckpointId(1)))
                .await
                .is_err()
        );
    }

    #[tokio::test]
    async fn every_store_keeps_lineage_apart_from_the_checkpoints() {
        keeps_lineage(&crate::store::MemoryStore::new()).await;
        let dir = tempfile::tempdir().unwrap();
        let files = crate::store::FileStore::open(dir.path().join("files")).unwrap();
        keeps_lineage(&files).await;
        assert!(files.lineage_path("fork").is_file());
        #[cfg(feature = "sqlite")]
        {
            let db = dir.path().join("runs.db");
            // A database of before: opened and read, it gains no table.
            let old = crate::store::SqliteStore::open(&db).unwrap();
            assert_eq!(old.lineage("any").await.unwrap(), None);
            drop(old);
            let tables = |db: &std::path::Path| -> Vec<String> {
                let conn = rusqlite::Connection::open(db).unwrap();
                let mut q = conn
                    .prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")
                    .unwrap();
                q.query_map([], |r| r.get(0))
                    .unwrap()
                    .map(Result::unwrap)
                    .collect()
            };
            assert!(!tables(&db).contains(&"run_lineage".to_string()));
            keeps_lineage(&crate::store::SqliteStore::open(&db).unwrap()).await;
            assert!(tables(&db).contains(&"run_lineage".to_string()));
        }
    }
}
