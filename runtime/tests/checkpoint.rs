//! Checkpoints and resume: every superstep's checkpoint resumes to the same
//! result, refusals name their reason, a killed process resumes with
//! nothing lost or duplicated, and a question to the user is answered from
//! another process.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use proptest::prelude::*;
use troupe_runtime::store::{CheckpointStore, FileStore, MemoryStore};
use troupe_runtime::{
    CheckpointError, Event, FnAgent, Graph, Message, Reply, RunContext, RunError, RunStatus,
    Thread, Workflow, graph::Condition,
};

mod common;
use common::{content, guard};

/// A node whose answer depends only on its thread, so a resumed run
/// answers exactly as the uninterrupted one did.
fn node(name: String) -> FnAgent {
    let n = name.clone();
    FnAgent::sync(name, move |t: &Thread| {
        let digest: usize = t.messages().iter().map(|m| m.text_content().len()).sum();
        Ok(format!("{n} saw {} ({digest})", t.len()))
    })
}

#[derive(Debug, Clone)]
struct Shape {
    nodes: usize,
    extra: Vec<(usize, usize)>,
    back: Option<(usize, usize, usize)>,
}

fn shapes() -> impl Strategy<Value = Shape> {
    (2usize..6).prop_flat_map(|n| {
        let extra = proptest::collection::vec((0..n, 0..n), 0..4);
        let back = proptest::option::of((0..n, 0..n, 2usize..5));
        (Just(n), extra, back).prop_map(|(nodes, extra, back)| Shape {
            nodes,
            extra: extra.into_iter().filter(|(a, b)| a < b).collect(),
            back: back.filter(|(a, b, _)| b < a),
        })
    })
}

/// A chain backbone (so every node is reachable) with extra forward edges
/// (fan-out, fan-in) and at most one loop, whose node's forward edges take
/// the loop's complement (so no node mixes conditional and unconditional).
fn build(shape: &Shape, store: Option<Arc<dyn CheckpointStore>>) -> Workflow {
    let name = |i: usize| format!("n{i}");
    let mut g = Graph::builder();
    for i in 0..shape.nodes {
        g = g.add_agent(node(name(i)));
    }
    let mut edges: Vec<(usize, usize)> = (1..shape.nodes).map(|i| (i - 1, i)).collect();
    for e in &shape.extra {
        if !edges.contains(e) {
            edges.push(*e);
        }
    }
    let looping = shape.back;
    for (a, b) in edges {
        match looping {
            Some((from, _, rounds)) if a == from => {
                g = g.add_transition(name(a), name(b), !loop_condition(rounds));
            }
            _ => g = g.add_edge(name(a), name(b)),
        }
    }
    if let Some((from, to, rounds)) = looping {
        g = g.add_loop(name(from), name(to), loop_condition(rounds));
    }
    let mut w = Workflow::builder()
        .name("prop")
        .graph(g.start(name(0)).build().unwrap());
    if let Some(s) = store {
        w = w.checkpoint_store(s);
    }
    w.build().unwrap()
}

/// True while the deciding node's answer says it saw fewer than
/// `rounds * 2` messages: a loop that ends after a few rounds.
fn loop_condition(rounds: usize) -> Condition {
    Condition::func(format!("fewer than {rounds} rounds"), move |turn| {
        turn.last().is_some_and(|m| {
            let text = m.text_content();
            let seen: usize = text
                .split(" saw ")
                .nth(1)
                .and_then(|s| s.split(' ').next())
                .and_then(|n| n.parse().ok())
                .unwrap_or(usize::MAX);
            seen < rounds * 2
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, .. ProptestConfig::default() })]

    #[test]
    fn resuming_from_any_superstep_gives_the_uninterrupted_result(shape in shapes()) {
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        rt.block_on(async {
            let store = Arc::new(MemoryStore::new());
            let whole = guard(build(&shape, Some(store.clone())).run_task("task", &RunContext::new().with_run_id("whole")))
                .await
                .unwrap();
            let checkpoints = store.list("whole").await.unwrap();
            prop_assert!(!checkpoints.is_empty());
            for cp in checkpoints {
                // A fresh workflow value, as another process would build it.
                let again = guard(build(&shape, None).run_from_checkpoint(
                    store.as_ref(),
                    "whole",
                    Some(cp.id),
                    &RunContext::new(),
                ))
                .await
                .unwrap();
                prop_assert_eq!(content(&again.thread), content(&whole.thread), "from superstep {}", cp.superstep);
                prop_assert_eq!(again.final_text(), whole.final_text());
                prop_assert_eq!(&again.status, &whole.status);
            }
            Ok(())
        })?;
    }
}

/// A store that serves one checkpoint as it is, damage included.
struct Served(troupe_runtime::store::Checkpoint);

#[troupe_runtime::async_trait]
impl CheckpointStore for Served {
    async fn save(
        &self,
        _: &troupe_runtime::store::Checkpoint,
    ) -> Result<(), troupe_runtime::store::StoreError> {
        Ok(())
    }
    async fn load(
        &self,
        _: &str,
        _: &troupe_runtime::store::CheckpointId,
    ) -> Result<Option<troupe_runtime::store::Checkpoint>, troupe_runtime::store::StoreError> {
        Ok(Some(self.0.clone()))
    }
    async fn latest(
        &self,
        _: &str,
    ) -> Result<Option<troupe_runtime::store::Checkpoint>, troupe_runtime::store::StoreError> {
        Ok(Some(self.0.clone()))
    }
    async fn list(
        &self,
        _: &str,
    ) -> Result<Vec<troupe_runtime::store::CheckpointMeta>, troupe_runtime::store::StoreError> {
        Ok(vec![self.0.meta()])
    }
    async fn delete(
        &self,
        _: &str,
        _: &troupe_runtime::store::CheckpointId,
    ) -> Result<bool, troupe_runtime::store::StoreError> {
        Ok(false)
    }
    async fn prune(&self, _: &str, _: usize) -> Result<usize, troupe_runtime::store::StoreError> {
        Ok(0)
    }
    async fn runs(&self) -> Result<Vec<String>, troupe_runtime::store::StoreError> {
        Ok(vec![self.0.run_id.clone()])
    }
}

fn chain(store: Arc<dyn CheckpointStore>, names: &[&str]) -> Workflow {
    let mut g = Graph::builder();
    for n in names {
        g = g.add_agent(node(n.to_string()));
    }
    for pair in names.windows(2) {
        g = g.add_edge(pair[0], pair[1]);
    }
    Workflow::builder()
        .name("chain")
        .graph(g.build().unwrap())
        .checkpoint_store(store)
        .build()
        .unwrap()
}

#[tokio::test]
async fn refusals_name_their_reason() {
    let store = Arc::new(MemoryStore::new());
    let wf = chain(store.clone(), &["a", "b", "c"]);
    let ctx = RunContext::new().with_run_id("r1");
    guard(wf.run_task("go", &ctx)).await.unwrap();

    // Another topology.
    let other = chain(store.clone(), &["a", "b", "x"]);
    let err = other.resume("r1", &RunContext::new()).await.unwrap_err();
    assert!(
        matches!(
            err,
            RunError::Checkpoint(CheckpointError::OtherTopology { .. })
        ),
        "{err}"
    );
    assert!(
        err.to_string().contains("another workflow topology"),
        "{err}"
    );

    // A damaged payload and an unknown format version (stores refuse to
    // save such records, so the damage is done on the way out).
    let latest = store.latest("r1").await.unwrap().unwrap();
    let mut flipped = latest.clone();
    let last = flipped.payload.len() - 1;
    flipped.payload[last] ^= 0xff;
    let err = wf
        .run_from_checkpoint(&Served(flipped), "r1", None, &RunContext::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("is corrupt"), "{err}");
    let mut newer = latest.clone();
    newer.format_version = 99;
    let err = wf
        .run_from_checkpoint(&Served(newer), "r1", None, &RunContext::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("format version 99"), "{err}");
    let mut garbage = latest;
    garbage.payload = vec![7; 5];
    garbage.checksum = troupe_runtime::store::checksum(&garbage.payload);
    let err = wf
        .run_from_checkpoint(&Served(garbage), "r1", None, &RunContext::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("is corrupt: cannot decode"),
        "{err}"
    );

    // Nothing to resume.
    let err = wf.resume("nope", &RunContext::new()).await.unwrap_err();
    assert_eq!(err.to_string(), "no checkpoint at all for run 'nope'");
}

#[tokio::test]
async fn a_checkpoint_is_saved_after_every_superstep() {
    let store = Arc::new(MemoryStore::new());
    let wf = chain(store.clone(), &["a", "b", "c", "d"]);
    let (ctx, mut events) = RunContext::stream();
    let r = guard(wf.run_task("go", &ctx.with_run_id("steps")))
        .await
        .unwrap();
    let supersteps: Vec<u64> = store
        .list("steps")
        .await
        .unwrap()
        .iter()
        .map(|c| c.superstep)
        .collect();
    // After supersteps 1–3 (the 4th completes the run) and the final one.
    assert_eq!(supersteps, [1, 2, 3, 4]);
    let saved = events
        .drain_ready()
        .into_iter()
        .filter(|e| matches!(&e.event, Event::CheckpointSaved { .. }))
        .count();
    assert_eq!(saved, 4);
    assert_eq!(r.checkpoint, Some(store.list("steps").await.unwrap()[3].id));
}

/// The asking agent: first asks the user, then answers with what it got.
fn asker() -> FnAgent {
    FnAgent::sync("clerk", |t: &Thread| {
        match t
            .messages()
            .iter()
            .rev()
            .find(|m| m.metadata.contains_key("troupe.request"))
        {
            Some(answer) => Ok(Reply::text(format!("booked for {}", answer.text_content()))),
            None => Ok(Reply::ask("For which date?")),
        }
    })
}

fn hitl(store: Arc<dyn CheckpointStore>) -> Workflow {
    let g = Graph::builder()
        .add_agent(node("intake".into()))
        .add_agent(asker())
        .add_agent(FnAgent::sync("confirm", |t: &Thread| {
            Ok(format!("confirmed: {}", t.last().unwrap().text_content()))
        }))
        .add_edge("intake", "clerk")
        .add_edge("clerk", "confirm")
        .build()
        .unwrap();
    Workflow::builder()
        .name("booking")
        .graph(g)
        .checkpoint_store(store)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_question_to_the_user_waits_and_resumes_with_the_answer() {
    let store = Arc::new(MemoryStore::new());
    let r = guard(hitl(store.clone()).run_task("a table", &RunContext::new().with_run_id("b1")))
        .await
        .unwrap();
    let RunStatus::WaitingForInput(requests) = &r.status else {
        panic!("{:?}", r.status)
    };
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].prompt, "For which date?");
    let id = requests[0].id.clone();

    let err = hitl(store.clone())
        .respond(store.as_ref(), "b1", "wrong-id", "x", &RunContext::new())
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains(&id),
        "names the pending one: {err}"
    );

    let done =
        guard(hitl(store.clone()).respond(store.as_ref(), "b1", &id, "Friday", &RunContext::new()))
            .await
            .unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(done.final_text(), "confirmed: booked for Friday");

    // Without a store, from the returned thread.
    let wf = hitl(Arc::new(MemoryStore::new()));
    let r = guard(wf.run_task("a table", &RunContext::new()))
        .await
        .unwrap();
    let pending = Workflow::pending_requests(&r.thread);
    let done = guard(wf.respond_in_thread(r.thread, &pending[0].id, "Monday", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(done.final_text(), "confirmed: booked for Monday");
}

// ---- Across processes: the test binary runs itself as the child. ----

const CHILD: &str = "TROUPE_CHECKPOINT_CHILD";
const DIR: &str = "TROUPE_CHECKPOINT_DIR";

fn long_chain(store: Arc<dyn CheckpointStore>) -> Workflow {
    let names: Vec<String> = (0..20).map(|i| format!("s{i:02}")).collect();
    let mut g = Graph::builder();
    for n in &names {
        let me = n.clone();
        g = g.add_agent(FnAgent::new(n.clone(), move |t: Arc<Thread>, _| {
            let me = me.clone();
            async move {
                tokio::time::sleep(Duration::from_millis(40)).await;
                Ok::<_, troupe_runtime::AgentError>(format!(
                    "{me} after {}",
                    t.last().unwrap().text_content()
                ))
            }
        }));
    }
    for pair in names.windows(2) {
        g = g.add_edge(pair[0].clone(), pair[1].clone());
    }
    Workflow::builder()
        .name("long")
        .graph(g.build().unwrap())
        .checkpoint_store(store)
        .build()
        .unwrap()
}

/// Not a test of its own: the body of the child processes below.
#[tokio::test]
async fn child_process_body() {
    let (Ok(role), Ok(dir)) = (std::env::var(CHILD), std::env::var(DIR)) else {
        return;
    };
    let store: Arc<dyn CheckpointStore> = Arc::new(FileStore::open(&dir).unwrap());
    match role.as_str() {
        "long" => {
            let _ = long_chain(store)
                .run_task("start", &RunContext::new().with_run_id("crash"))
                .await;
        }
        "ask" => {
            let r = hitl(store)
                .run_task("a table", &RunContext::new().with_run_id("two"))
                .await
                .unwrap();
            let RunStatus::WaitingForInput(requests) = r.status else {
                panic!()
            };
            println!("REQUEST={}", requests[0].id);
        }
        "answer" => {
            let id = std::env::var("TROUPE_REQUEST").unwrap();
            let r = hitl(store.clone())
                .respond(store.as_ref(), "two", &id, "Sunday", &RunContext::new())
                .await
                .unwrap();
            println!("FINAL={}", r.final_text());
        }
        _ => {}
    }
}

fn child(role: &str, dir: &std::path::Path) -> std::process::Command {
    let mut c = std::process::Command::new(std::env::current_exe().unwrap());
    c.args([
        "--exact",
        "child_process_body",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD, role)
    .env(DIR, dir);
    c
}

#[tokio::test]
async fn a_killed_run_resumes_from_its_last_checkpoint_with_nothing_lost() {
    let dir = tempfile::tempdir().unwrap();
    let mut proc = child("long", dir.path()).spawn().unwrap();
    let store = Arc::new(FileStore::open(dir.path()).unwrap());
    // Let it get some supersteps in, then kill it without warning.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let n = store.list("crash").await.map(|l| l.len()).unwrap_or(0);
        if n >= 5 || std::time::Instant::now() > deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    proc.kill().unwrap(); // SIGKILL
    let _ = proc.wait();
    let before = store.latest("crash").await.unwrap().unwrap();
    assert!(
        before.superstep >= 5 && before.superstep < 20,
        "killed mid-run at {}",
        before.superstep
    );

    let r = guard(long_chain(store.clone()).resume("crash", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(r.status, RunStatus::Completed);
    let texts: Vec<String> = r
        .thread
        .messages()
        .iter()
        .map(|m| m.text_content().into_owned())
        .collect();
    assert_eq!(
        texts.len(),
        21,
        "the task and one message per step: {texts:?}"
    );
    for (i, t) in texts.iter().skip(1).enumerate() {
        assert!(
            t.starts_with(&format!("s{i:02} after ")),
            "step {i} once, in order: {t}"
        );
    }
    assert_eq!(r.final_text().matches(" after ").count(), 20);
}

#[tokio::test]
async fn a_question_is_answered_from_another_process() {
    let dir = tempfile::tempdir().unwrap();
    let out = child("ask", dir.path()).output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let id = stdout
        .lines()
        .find_map(|l| l.split_once("REQUEST=").map(|(_, id)| id.trim()))
        .unwrap_or_else(|| panic!("no request in {stdout}"))
        .to_string();
    let out = child("answer", dir.path())
        .env("TROUPE_REQUEST", &id)
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("FINAL=confirmed: booked for Sunday"),
        "{stdout}"
    );
    assert!(out.status.success());
}

#[test]
fn message_round_trip_through_the_public_codec() {
    let m = Message::user("x");
    let back: Message =
        troupe_runtime::codec::decode(&troupe_runtime::codec::encode(&m).unwrap()).unwrap();
    assert_eq!(back, m);
}

fn pipeline(store: Arc<dyn CheckpointStore>, b_sleeps: Duration) -> Workflow {
    Workflow::builder()
        .name("pipe")
        .participant(node("a".into()))
        .participant(FnAgent::new("b", move |t: Arc<Thread>, _| async move {
            tokio::time::sleep(b_sleeps).await;
            Ok::<_, troupe_runtime::AgentError>(format!(
                "b after {}",
                t.last().unwrap().text_content()
            ))
        }))
        .participant(node("c".into()))
        .router(
            troupe_runtime::Router::builder()
                .add_route("user", "a")
                .add_route("a", "b")
                .add_route("b", "c")
                .output("c"),
        )
        .checkpoint_store(store)
        .checkpoint_every(1)
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_cancelled_router_only_run_resumes_the_turn_it_cut_short() {
    let store: Arc<dyn CheckpointStore> = Arc::new(MemoryStore::new());
    let (ctx, mut events) = RunContext::stream();
    let ctx = ctx.with_run_id("cut");
    let canceller = ctx.clone();
    tokio::spawn(async move {
        while let Some(e) = events.next().await {
            if matches!(&e.event, Event::AgentStarted { path, .. } if path.ends_with("/b")) {
                canceller.cancel();
            }
        }
    });
    let r = guard(pipeline(store.clone(), Duration::from_secs(30)).run_task("go", &ctx))
        .await
        .unwrap();
    assert_eq!(r.status, RunStatus::Cancelled);
    assert!(
        store.list("cut").await.unwrap().len() >= 2,
        "every delivery and the end"
    );

    let done = guard(pipeline(store.clone(), Duration::ZERO).resume("cut", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    let sources: Vec<String> = done
        .thread
        .messages()
        .iter()
        .map(|m| m.source.to_string())
        .collect();
    assert_eq!(sources, ["user", "a", "b", "c"], "b ran again, once");
}

#[tokio::test]
async fn an_answer_reaches_an_agent_whose_inbox_takes_no_user_messages() {
    // Router-only: the clerk accepts messages from intake only, yet the
    // answer to its own question must reach it.
    let wf = Workflow::builder()
        .name("desk")
        .participant(node("intake".into()))
        .participant(asker())
        .router(
            troupe_runtime::Router::builder()
                .add_route("user", "intake")
                .add_route("intake", "clerk")
                .output("clerk"),
        )
        .build()
        .unwrap();
    let r = guard(wf.run_task("a table", &RunContext::new()))
        .await
        .unwrap();
    let pending = Workflow::pending_requests(&r.thread);
    assert_eq!(pending.len(), 1);
    let done = guard(wf.respond_in_thread(r.thread, &pending[0].id, "Tuesday", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(done.final_text(), "booked for Tuesday");
}
