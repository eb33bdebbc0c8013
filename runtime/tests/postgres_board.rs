//! The serve workers' board on PostgreSQL (`PostgresBoard`): events
//! appended in batches read back in order from any position, each written
//! once; a notification wakes a second board when a run changes; a session
//! claimed by a live worker is refused to another; retention deletes
//! records over with their events and old schedule ticks, and keeps the
//! rest.
#![cfg(feature = "postgres")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod pg_db;

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use troupe_runtime::store::{BoardRun, Notice, PostgresBoard, RunBoard};

fn record(board: &PostgresBoard, id: &str, session: Option<&str>, status: &str) -> BoardRun {
    BoardRun {
        id: id.into(),
        team: "desk".into(),
        session: session.map(str::to_string),
        worker: board.worker().into(),
        status: status.into(),
        started_ms: 1,
        detail: json!({"id": id, "status": status}),
        webhook: None,
        alive: true,
    }
}

fn lines(from: usize, to: usize) -> Vec<Arc<str>> {
    (from..to)
        .map(|n| Arc::from(format!("event {n}")))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn events_are_read_in_order_and_a_change_wakes_another_board() {
    let Some(url) = pg_db::fresh_db("board_events").await else {
        return;
    };
    let a = PostgresBoard::connect(&url).await.unwrap();
    let b = PostgresBoard::connect(&url).await.unwrap();
    assert_ne!(a.worker(), b.worker());
    let mut woken = b.notices();
    let r = record(&a, "run-1", None, "running");
    a.publish("run-1", Some(&r), 0, &lines(0, 3)).await.unwrap();
    // A batch overlapping what is written: each event stays written once.
    a.publish("run-1", None, 2, &lines(2, 5)).await.unwrap();
    let got = b.events("run-1", 0, 100).await.unwrap();
    let want: Vec<(u64, String)> = (0..5).map(|n| (n, format!("event {n}"))).collect();
    assert_eq!(got, want);
    assert_eq!(b.events("run-1", 3, 1).await.unwrap(), want[3..4].to_vec());
    let seen = b.run("run-1").await.unwrap().unwrap();
    assert_eq!((seen.status.as_str(), seen.alive), ("running", true));
    let woke = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let Ok(Notice::Run(id)) = woken.recv().await {
                return id;
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(woke, "run-1");
    assert_eq!(b.runs(10).await.unwrap().len(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_running_on_a_live_worker_is_refused_to_another() {
    let Some(url) = pg_db::fresh_db("board_sessions").await else {
        return;
    };
    let a = PostgresBoard::connect(&url).await.unwrap();
    let b = PostgresBoard::connect(&url).await.unwrap();
    let first = record(&a, "run-a", Some("s1"), "running");
    assert_eq!(a.claim_session(&first).await.unwrap(), None);
    let second = record(&b, "run-b", Some("s1"), "running");
    let other = b.claim_session(&second).await.unwrap().unwrap();
    assert_eq!(other.id, "run-a");
    assert_eq!(
        b.running_elsewhere("desk", "s1").await.unwrap().unwrap().id,
        "run-a"
    );
    assert_eq!(a.running_elsewhere("desk", "s1").await.unwrap(), None);
    // Over: the session is free.
    a.publish(
        "run-a",
        Some(&record(&a, "run-a", Some("s1"), "completed")),
        0,
        &[],
    )
    .await
    .unwrap();
    assert_eq!(b.claim_session(&second).await.unwrap(), None);
    // A worker whose heartbeat stopped holds nothing.
    pg_db::exec(
        &url,
        &format!(
            "UPDATE troupe_serve_workers SET beat = now() - interval '1 hour' WHERE worker = '{}'",
            b.worker()
        ),
    )
    .await;
    assert_eq!(a.running_elsewhere("desk", "s1").await.unwrap(), None);
    // Requests reach the runs they name, once.
    a.control("run-b", "cancel").await.unwrap();
    let taken = b.take_controls(&["run-b".into()]).await.unwrap();
    assert_eq!((taken.len(), taken[0].action.as_str()), (1, "cancel"));
    assert!(b.take_controls(&["run-b".into()]).await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retention_deletes_old_records_with_their_events_and_old_ticks() {
    let Some(url) = pg_db::fresh_db("board_prune").await else {
        return;
    };
    let a = PostgresBoard::connect(&url).await.unwrap();
    for (id, status) in [
        ("old-done", "completed"),
        ("old-going", "running"),
        ("new-done", "completed"),
    ] {
        a.publish(id, Some(&record(&a, id, None, status)), 0, &lines(0, 2))
            .await
            .unwrap();
    }
    pg_db::exec(
        &url,
        "UPDATE troupe_serve_runs SET updated_at = now() - interval '2 hours' WHERE run_id LIKE 'old-%';
         INSERT INTO troupe_schedule_ticks (team, schedule, tick_secs, pid, host, claimed_at)
           VALUES ('desk', 'daily', 1, 1, 'h', now() - interval '2 hours'),
                  ('desk', 'daily', 2, 1, 'h', now());",
    )
    .await;
    let (runs, ticks) = a.prune(Duration::from_secs(3600)).await.unwrap();
    // The old run still running on a live worker stays.
    assert_eq!((runs, ticks), (1, 1));
    let left: Vec<String> = a
        .runs(10)
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.id)
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
    assert!(!left.contains(&"old-done".to_string()), "{left:?}");
    assert!(a.events("old-done", 0, 10).await.unwrap().is_empty());
    assert_eq!(a.events("new-done", 0, 10).await.unwrap().len(), 2);
}
