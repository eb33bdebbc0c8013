//! Requests that wait for a reply on the serve workers' board
//! (`RunBoard::ask`): each is taken by one worker, its reply reaches the
//! asker (woken on the run's channel), and one no worker took can be
//! withdrawn while one taken cannot.
#![cfg(feature = "postgres")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod pg_db;

use std::time::Duration;

use serde_json::json;
use troupe_runtime::store::{AskState, Notice, PostgresBoard, RunBoard};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_is_taken_once_and_its_reply_reaches_the_asker() {
    let Some(url) = pg_db::fresh_db("board_asks").await else {
        return;
    };
    let asker = PostgresBoard::connect(&url).await.unwrap();
    let holder = PostgresBoard::connect(&url).await.unwrap();
    let other = PostgresBoard::connect(&url).await.unwrap();
    let payload = json!({"request_id": "q1", "answer": "order A-1"});
    let id = asker.ask("run-1", "answer", &payload).await.unwrap();
    assert_eq!(asker.ask_state(id).await.unwrap(), AskState::Waiting);
    // Only requests on the runs named are taken; each by one worker.
    assert!(
        holder
            .take_asks(&["run-2".into()])
            .await
            .unwrap()
            .is_empty()
    );
    let taken = holder.take_asks(&["run-1".into()]).await.unwrap();
    assert_eq!(taken.len(), 1);
    assert_eq!(
        (taken[0].id, taken[0].kind.as_str(), &taken[0].payload),
        (id, "answer", &payload)
    );
    assert!(other.take_asks(&["run-1".into()]).await.unwrap().is_empty());
    assert_eq!(asker.ask_state(id).await.unwrap(), AskState::Taken);
    // Taken: not withdrawn.
    assert!(!asker.withdraw(id).await.unwrap());
    let mut woken = asker.notices();
    let reply = json!({"ok": {"status": "running"}});
    holder.reply(id, "run-1", &reply).await.unwrap();
    let woke = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            if let Ok(Notice::Run(run)) = woken.recv().await {
                return run;
            }
        }
    })
    .await
    .unwrap();
    assert_eq!(woke, "run-1");
    assert_eq!(asker.ask_state(id).await.unwrap(), AskState::Replied(reply));
    // Nobody took this one: withdrawn, and gone.
    let lone = asker.ask("run-3", "rollback", &json!(null)).await.unwrap();
    assert!(asker.withdraw(lone).await.unwrap());
    assert_eq!(asker.ask_state(lone).await.unwrap(), AskState::Gone);
    assert!(
        holder
            .take_asks(&["run-3".into()])
            .await
            .unwrap()
            .is_empty()
    );
}
