//! `Session`: conversations kept apart, persisted, serialized per
//! conversation and concurrent across conversations.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

#[cfg(feature = "sqlite")]
use troupe_runtime::store::SqliteStore;
use troupe_runtime::store::{FileStore, MemoryStore, StoreError, ThreadStore};
use troupe_runtime::{
    AgentError, FnAgent, Session, Thread, Workflow, message::USER, session::SessionError,
};

/// Fails the test instead of hanging it.
async fn guard<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(10), f)
        .await
        .expect("the test hung")
}

/// The user messages an agent's thread holds, joined with commas.
fn seen(t: &Thread) -> String {
    t.messages()
        .iter()
        .filter(|m| &*m.source == USER)
        .map(|m| m.text_content().into_owned())
        .collect::<Vec<_>>()
        .join(",")
}

/// A bot that answers with every user message it has seen, and fails on
/// "boom".
fn bot() -> Workflow {
    let agent = FnAgent::sync("bot", |t: &Thread| {
        let last = t.last().map(|m| m.text_content().into_owned());
        if last.as_deref() == Some("boom") {
            return Err(AgentError::failed("asked to fail"));
        }
        Ok(format!("seen: {}", seen(t)))
    });
    Workflow::builder()
        .name("bot")
        .participant(agent)
        .build()
        .unwrap()
}

/// Counts turns in flight and the most ever in flight at once.
#[derive(Default)]
struct Gauge {
    now: AtomicUsize,
    max: AtomicUsize,
    turns: AtomicUsize,
}

/// A slow bot, so that overlapping turns would overlap in time.
fn slow_bot(gauge: Arc<Gauge>) -> Workflow {
    let agent = FnAgent::new("bot", move |t: Arc<Thread>, _ctx| {
        let gauge = gauge.clone();
        async move {
            let n = gauge.now.fetch_add(1, Ordering::SeqCst) + 1;
            gauge.max.fetch_max(n, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(40)).await;
            gauge.now.fetch_sub(1, Ordering::SeqCst);
            gauge.turns.fetch_add(1, Ordering::SeqCst);
            Ok::<_, AgentError>(format!("seen: {}", seen(&t)))
        }
    });
    Workflow::builder()
        .name("bot")
        .participant(agent)
        .build()
        .unwrap()
}

fn texts(t: &Thread) -> Vec<String> {
    t.messages()
        .iter()
        .map(|m| m.text_content().into_owned())
        .collect()
}

#[tokio::test]
async fn conversations_are_kept_apart() {
    let store = MemoryStore::new();
    let session = Session::new(bot(), store.clone());
    assert_eq!(
        guard(session.send("alice", "a1"))
            .await
            .unwrap()
            .final_text(),
        "seen: a1"
    );
    assert_eq!(
        guard(session.send("bob", "b1")).await.unwrap().final_text(),
        "seen: b1"
    );
    assert_eq!(
        guard(session.send("alice", "a2"))
            .await
            .unwrap()
            .final_text(),
        "seen: a1,a2"
    );
    assert_eq!(
        texts(&session.history("alice").await.unwrap()),
        ["a1", "seen: a1", "a2", "seen: a1,a2"]
    );
    assert_eq!(
        texts(&session.history("bob").await.unwrap()),
        ["b1", "seen: b1"]
    );
    assert_eq!(store.conversations().await.unwrap(), ["alice", "bob"]);
    assert!(session.history("carol").await.unwrap().is_empty());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_conversation_continues_in_a_new_session_over_the_same_files() {
    let dir = tempfile::tempdir().unwrap();
    {
        let session = Session::new(bot(), FileStore::open(dir.path()).unwrap());
        guard(session.send("chat", "hello")).await.unwrap();
    }
    // A new process, in effect: a new workflow value, a new store value.
    let session = Session::new(bot(), FileStore::open(dir.path()).unwrap());
    let reply = guard(session.send("chat", "again")).await.unwrap();
    assert_eq!(reply.final_text(), "seen: hello,again");
    assert_eq!(session.history("chat").await.unwrap().len(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_sends_to_one_conversation_are_serialized() {
    let gauge = Arc::new(Gauge::default());
    let session = Session::new(slow_bot(gauge.clone()), MemoryStore::new());
    let sends: Vec<_> = (0..6)
        .map(|i| {
            let session = session.clone();
            tokio::spawn(async move { session.send("one", format!("m{i}")).await })
        })
        .collect();
    let mut replies = Vec::new();
    for s in sends {
        replies.push(guard(s).await.unwrap().unwrap().final_text());
    }
    assert_eq!(gauge.max.load(Ordering::SeqCst), 1, "two turns overlapped");
    assert_eq!(gauge.turns.load(Ordering::SeqCst), 6);

    // Every message and every answer is kept, and each turn saw all the
    // turns before it: the k-th answer lists k messages.
    let history = session.history("one").await.unwrap();
    assert_eq!(history.len(), 12);
    let mut counts: Vec<usize> = replies
        .iter()
        .map(|r| r.trim_start_matches("seen: ").split(',').count())
        .collect();
    counts.sort();
    assert_eq!(counts, [1, 2, 3, 4, 5, 6]);
    for i in 0..6 {
        assert!(texts(&history).contains(&format!("m{i}")), "m{i} was lost");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn different_conversations_run_concurrently() {
    let gauge = Arc::new(Gauge::default());
    let session = Session::new(slow_bot(gauge.clone()), MemoryStore::new());
    let sends: Vec<_> = (0..4)
        .map(|i| {
            let session = session.clone();
            tokio::spawn(async move { session.send(&format!("c{i}"), "hi").await })
        })
        .collect();
    for s in sends {
        guard(s).await.unwrap().unwrap();
    }
    assert!(
        gauge.max.load(Ordering::SeqCst) >= 2,
        "conversations were serialized"
    );
}

#[cfg(feature = "sqlite")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_backed_session_persists() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("chat.db");
    {
        let session = Session::new(bot(), SqliteStore::open(&db).unwrap());
        guard(session.send("x", "one")).await.unwrap();
        guard(session.send("y", "other")).await.unwrap();
    }
    let store = SqliteStore::open(&db).unwrap();
    let session = Session::new(bot(), store.clone());
    let reply = guard(session.send("x", "two")).await.unwrap();
    assert_eq!(reply.final_text(), "seen: one,two");
    assert_eq!(store.conversations().await.unwrap(), ["x", "y"]);
}

#[tokio::test]
async fn a_failed_turn_keeps_the_thread_and_the_conversation_goes_on() {
    let session = Session::new(bot(), MemoryStore::new());
    guard(session.send("c", "hi")).await.unwrap();
    let e = guard(session.send("c", "boom")).await.unwrap_err();
    match &e {
        SessionError::Run {
            conversation,
            save_error,
            ..
        } => {
            assert_eq!(conversation, "c");
            assert!(save_error.is_none());
        }
        other => panic!("expected a run error, got {other}"),
    }
    assert!(e.to_string().contains("asked to fail"), "{e}");
    assert!(texts(&session.history("c").await.unwrap()).contains(&"boom".to_string()));
    let reply = guard(session.send("c", "fine")).await.unwrap();
    assert_eq!(reply.final_text(), "seen: hi,boom,fine");
}

#[tokio::test]
async fn an_invalid_conversation_id_is_refused_before_running() {
    let gauge = Arc::new(Gauge::default());
    let session = Session::new(slow_bot(gauge.clone()), MemoryStore::new());
    for bad in ["", "../etc", "a/b"] {
        let e = session.send(bad, "hi").await.unwrap_err();
        assert!(
            matches!(
                e,
                SessionError::Store {
                    source: StoreError::InvalidId { .. },
                    ..
                }
            ),
            "{e}"
        );
    }
    assert_eq!(gauge.turns.load(Ordering::SeqCst), 0);
}

#[tokio::test]
async fn reset_forgets_a_conversation() {
    let session = Session::new(bot(), MemoryStore::new());
    guard(session.send("c", "first")).await.unwrap();
    assert!(session.reset("c").await.unwrap());
    assert!(!session.reset("c").await.unwrap());
    assert!(session.history("c").await.unwrap().is_empty());
    let reply = guard(session.send("c", "fresh")).await.unwrap();
    assert_eq!(reply.final_text(), "seen: fresh");
}
