//! What the PostgreSQL store keeps of runs beside their checkpoints: a
//! forked run's lineage (the checks every other store passes in
//! `lineage::tests`), a run's failure (summarised as failed, forgotten
//! when its lease is taken again), and the leases their holders left
//! behind with their notes — taken over once, never after the run ended.
#![cfg(feature = "postgres")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod pg_db;

use troupe_runtime::history::summarize_run;
use troupe_runtime::store::{
    Checkpoint, CheckpointId, CheckpointStore, LeaseError, Lineage, PostgresStore, RunFailure,
    RunLeases,
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn lineage_is_kept_apart_from_the_checkpoints() {
    let Some(url) = pg_db::fresh_db("lineage").await else {
        return;
    };
    let store = PostgresStore::connect(&url).await.unwrap();
    let cp = Checkpoint::new("orig", None, 1, 7, b"F-state".to_vec());
    store.save(&cp).await.unwrap();
    assert_eq!(store.lineage("orig").await.unwrap(), None);
    assert_eq!(store.lineage("fork").await.unwrap(), None);
    let l = Lineage::new("orig", cp.id);
    assert!(store.save_lineage("fork", &l).await.unwrap());
    // Read back by another connection, as another worker would.
    let other = PostgresStore::connect(&url).await.unwrap();
    assert_eq!(other.lineage("fork").await.unwrap(), Some(l));
    assert_eq!(other.lineage("orig").await.unwrap(), None);
    assert_eq!(other.load("orig", &cp.id).await.unwrap(), Some(cp));
    assert_eq!(other.runs().await.unwrap(), ["orig"]);
    assert!(
        store
            .save_lineage("../x", &Lineage::new("orig", CheckpointId(1)))
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failure_is_kept_until_the_run_is_leased_again() {
    let Some(url) = pg_db::fresh_db("failures").await else {
        return;
    };
    let store = PostgresStore::connect(&url).await.unwrap();
    assert_eq!(store.failure("r1").await.unwrap(), None);
    let lease = store.acquire("r1").await.unwrap();
    let f = RunFailure::new("model `m`: down");
    assert!(store.save_failure("r1", &f).await.unwrap());
    drop(lease);
    let back = store.failure("r1").await.unwrap().unwrap();
    assert_eq!(back.error, f.error);
    // Taking the lease again carries the run on: no longer failed.
    let _again = store.acquire("r1").await.unwrap();
    assert_eq!(store.failure("r1").await.unwrap(), None);
    // An unknown run has no summary to mark.
    assert!(summarize_run(&store, "r1").await.unwrap().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_left_behind_is_offered_with_its_note_and_taken_over_once() {
    let Some(url) = pg_db::fresh_db("abandoned").await else {
        return;
    };
    let a = PostgresStore::connect(&url).await.unwrap();
    let b = PostgresStore::connect(&url).await.unwrap();
    // A live holder's lease is not left behind.
    let held = a.acquire_noting("live", "{\"team\":\"t\"}").await.unwrap();
    assert!(b.abandoned().await.unwrap().is_empty());
    drop(held);

    // Rows of a dead process of this host, and of a stale holder elsewhere.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    let host = troupe_runtime::store::this_host();
    pg_db::exec(
        &url,
        &format!(
            "DELETE FROM troupe_run_leases;
             INSERT INTO troupe_run_leases VALUES ('dead', 'old', {dead}, '{host}', 0, now(), 'note-1');
             INSERT INTO troupe_run_leases VALUES ('stale', 'old', 1, 'elsewhere', 1, now() - interval '31 seconds', NULL);
             INSERT INTO troupe_run_leases VALUES ('fresh', 'old', 1, 'elsewhere', 2, now(), 'n');"
        ),
    )
    .await;
    let left = b.abandoned().await.unwrap();
    let ids: Vec<(&str, Option<&str>)> = left
        .iter()
        .map(|a| (a.run_id.as_str(), a.note.as_deref()))
        .collect();
    assert_eq!(ids, [("dead", Some("note-1")), ("stale", None)]);
    assert_eq!(left[0].holder.pid, dead);

    // One store takes it over; the other is refused.
    let taken = b.take_over("dead", "note-1").await.unwrap();
    let err = a.take_over("dead", "note-1").await.unwrap_err();
    assert!(matches!(err, LeaseError::Held { .. }), "{err}");
    assert!(
        b.abandoned()
            .await
            .unwrap()
            .iter()
            .all(|x| x.run_id != "dead")
    );
    // Its run ended (the lease given back): seen left behind before, it
    // is not taken over again.
    drop(taken);
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    let err = a.take_over("dead", "note-1").await.unwrap_err();
    assert!(
        matches!(err, LeaseError::Held { holder: None, .. }),
        "{err}"
    );
}
