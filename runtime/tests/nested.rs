//! Nested workflows under a run with a store: their progress is in the
//! outer checkpoints (every one resumes, in a fresh workflow value, to the
//! uninterrupted result, the nested run carrying on where it was and its
//! stop counters with it), and questions asked inside them reach the top,
//! each answered on its own, from another process.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashSet;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use troupe_runtime::store::{CheckpointStore, FileStore, MemoryStore, SqliteStore};
use troupe_runtime::{
    Event, FnAgent, Graph, Reply, Router, RunContext, RunResult, RunStatus, StopCondition, Thread,
    Workflow, graph::Scheduler,
};

mod common;
use common::{content, guard};

/// Fails if a message id appears twice in one thread, at any depth.
fn assert_ids_unique(t: &Thread, at: &str) {
    let mut seen = HashSet::new();
    for m in t.messages() {
        assert!(seen.insert(m.id), "message {} twice in {at}", m.id);
    }
    for (name, child) in t.children() {
        assert_ids_unique(child, &format!("{at}/{name}"));
    }
}

/// Counts the turns of the agents made with it (shared by one workflow
/// value's agents).
#[derive(Clone, Default)]
struct Calls(Arc<AtomicUsize>);

impl Calls {
    fn get(&self) -> usize {
        self.0.load(Ordering::SeqCst)
    }
}

/// A node whose answer depends only on its thread, so a resumed run
/// answers exactly as the uninterrupted one did.
fn node(name: &str, calls: &Calls) -> FnAgent {
    let (n, calls) = (name.to_string(), calls.clone());
    FnAgent::sync(name, move |t: &Thread| {
        calls.0.fetch_add(1, Ordering::SeqCst);
        let digest: usize = t.messages().iter().map(|m| m.text_content().len()).sum();
        Ok(format!("{n} saw {} ({digest})", t.len()))
    })
}

/// A chain of graph nodes: one superstep each (or one turn after the
/// other, in dataflow).
fn chain(name: &str, nodes: &[&str], scheduler: Scheduler, calls: &Calls) -> Graph {
    let mut g = Graph::builder().scheduler(scheduler);
    for n in nodes {
        g = g.add_agent(node(&format!("{name}.{n}"), calls));
    }
    for pair in nodes.windows(2) {
        g = g.add_edge(format!("{name}.{}", pair[0]), format!("{name}.{}", pair[1]));
    }
    g.build().unwrap()
}

/// A router-only team: `a` and `b` speak in turn, from the user's message,
/// until `max_turns`.
fn team(name: &str, max_turns: u64, calls: &Calls) -> Workflow {
    let (a, b) = (format!("{name}.a"), format!("{name}.b"));
    Workflow::builder()
        .name(name)
        .participant(node(&a, calls))
        .participant(node(&b, calls))
        .router(
            Router::builder()
                .add_route("user", a.clone())
                .add_route(a.clone(), b.clone())
                .add_route(b, a),
        )
        .stop_condition(StopCondition::max_turns(max_turns))
        .build()
        .unwrap()
}

/// An outer graph `intake -> inner -> wrap` (without `intake` when the
/// inner workflow takes the user's message), with `inner` a workflow.
fn outer(
    inner: Workflow,
    intake: bool,
    store: Option<Arc<dyn CheckpointStore>>,
    calls: &Calls,
) -> Workflow {
    let mut g = Graph::builder()
        .add_agent(inner)
        .add_agent(node("wrap", calls))
        .add_edge("inner", "wrap");
    if intake {
        g = g
            .add_agent(node("intake", calls))
            .add_edge("intake", "inner");
    }
    let g = g.build().unwrap();
    let mut w = Workflow::builder().name("outer").graph(g);
    if let Some(s) = store {
        w = w.checkpoint_store(s);
    }
    w.build().unwrap()
}

/// An inner graph of four supersteps.
fn with_inner_graph(store: Option<Arc<dyn CheckpointStore>>, calls: &Calls) -> Workflow {
    let inner = Workflow::builder()
        .name("inner")
        .graph(chain(
            "inner",
            &["s1", "s2", "s3", "s4"],
            Scheduler::Supersteps,
            calls,
        ))
        .build()
        .unwrap();
    outer(inner, true, store, calls)
}

/// The same inner chain, in dataflow.
fn with_inner_dataflow(store: Option<Arc<dyn CheckpointStore>>, calls: &Calls) -> Workflow {
    let inner = Workflow::builder()
        .name("inner")
        .graph(chain(
            "inner",
            &["s1", "s2", "s3", "s4"],
            Scheduler::Dataflow,
            calls,
        ))
        .build()
        .unwrap();
    outer(inner, true, store, calls)
}

/// An inner router-only team of six turns.
fn with_inner_team(store: Option<Arc<dyn CheckpointStore>>, calls: &Calls) -> Workflow {
    outer(team("inner", 6, calls), false, store, calls)
}

/// Two levels: `inner` is a graph `deep -> m2`, `deep` a team of four
/// turns.
fn two_deep(store: Option<Arc<dyn CheckpointStore>>, calls: &Calls) -> Workflow {
    let g = Graph::builder()
        .add_agent(team("deep", 4, calls))
        .add_agent(node("inner.m2", calls))
        .add_edge("deep", "inner.m2")
        .build()
        .unwrap();
    let inner = Workflow::builder().name("inner").graph(g).build().unwrap();
    outer(inner, false, store, calls)
}

/// Runs the workflow `build` makes whole with a store, then, for every
/// checkpoint it saved, resumes a fresh value of it (as another process
/// would, half of them with a store of their own) and checks it gives the
/// same thread, response, status and turns. Returns the agent turns each
/// resume took.
async fn every_checkpoint_resumes_alike(
    build: fn(Option<Arc<dyn CheckpointStore>>, &Calls) -> Workflow,
    store: Arc<dyn CheckpointStore>,
) -> (RunResult, Vec<usize>) {
    let calls = Calls::default();
    let ctx = RunContext::new().with_run_id("whole");
    let whole = guard(build(Some(store.clone()), &calls).run_task("task", &ctx))
        .await
        .unwrap();
    let whole_calls = calls.get();
    assert_ids_unique(&whole.thread, "the whole run");
    let checkpoints = store.list("whole").await.unwrap();
    let mut resumed_calls = Vec::new();
    for (k, cp) in checkpoints.iter().enumerate() {
        let calls = Calls::default();
        let own: Option<Arc<dyn CheckpointStore>> =
            (k % 2 == 1).then(|| Arc::new(MemoryStore::new()) as Arc<dyn CheckpointStore>);
        let again = guard(build(own, &calls).run_from_checkpoint(
            store.as_ref(),
            "whole",
            Some(cp.id),
            &RunContext::new().with_run_id(format!("again{k}")),
        ))
        .await
        .unwrap();
        let at = format!(
            "checkpoint {k} of {} (superstep {})",
            checkpoints.len(),
            cp.superstep
        );
        assert_eq!(content(&again.thread), content(&whole.thread), "from {at}");
        assert_ids_unique(&again.thread, &at);
        assert_eq!(again.final_text(), whole.final_text(), "from {at}");
        assert_eq!(again.status, whole.status, "from {at}");
        assert_eq!(again.turns, whole.turns, "from {at}");
        assert!(calls.get() <= whole_calls, "from {at}");
        resumed_calls.push(calls.get());
    }
    (whole, resumed_calls)
}

/// Whether some resume ran part, but not all, of the agent turns `lo..hi`
/// could take: a checkpoint was saved while the nested run was under way,
/// and the resume carried on inside it rather than redoing it or skipping
/// past it.
fn some_resume_took_between(resumed: &[usize], lo: usize, hi: usize) -> bool {
    resumed.iter().any(|&n| n > lo && n < hi)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nested_graph_checkpoints_every_superstep_and_each_checkpoint_resumes_alike() {
    let store = Arc::new(MemoryStore::new());
    let (whole, resumed) = every_checkpoint_resumes_alike(with_inner_graph, store).await;
    assert_eq!(whole.status, RunStatus::Completed);
    let inner = whole.thread.child("inner").unwrap();
    let sources: Vec<&str> = inner.messages().iter().map(|m| &*m.source).collect();
    assert_eq!(
        sources,
        [
            "intake", "inner.s1", "inner.s2", "inner.s3", "inner.s4", "inner"
        ]
    );
    // Resumed after inner.s2 (say), only inner.s3, inner.s4 and wrap run:
    // fewer than the 5 turns from the start of the nested run, more than
    // the 1 after it.
    assert!(some_resume_took_between(&resumed, 1, 5), "{resumed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nested_dataflow_graph_checkpoints_every_turn_and_each_checkpoint_resumes_alike() {
    let store = Arc::new(MemoryStore::new());
    let (whole, resumed) = every_checkpoint_resumes_alike(with_inner_dataflow, store).await;
    assert_eq!(whole.status, RunStatus::Completed);
    assert!(some_resume_took_between(&resumed, 1, 5), "{resumed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nested_team_checkpoints_every_turn_and_resumes_without_resetting_its_turns() {
    let store = Arc::new(MemoryStore::new());
    let (whole, resumed) = every_checkpoint_resumes_alike(with_inner_team, store).await;
    let inner = whole.thread.child("inner").unwrap();
    let spoken = inner
        .messages()
        .iter()
        .filter(|m| m.source.starts_with("inner."))
        .count();
    assert_eq!(spoken, 6, "the team's six turns, however it was resumed");
    // The team and wrap take 7 turns; resumed mid-team, fewer — had the
    // team's counters been reset it would take 6 turns again and the
    // threads above would differ.
    assert!(some_resume_took_between(&resumed, 1, 7), "{resumed:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn progress_two_levels_down_reaches_the_store_and_resumes_alike() {
    let dir = tempfile::tempdir().unwrap();
    let store: Arc<dyn CheckpointStore> = Arc::new(FileStore::open(dir.path()).unwrap());
    let (whole, resumed) = every_checkpoint_resumes_alike(two_deep, store).await;
    let deep = whole
        .thread
        .child("inner")
        .and_then(|t| t.child("deep"))
        .unwrap();
    let spoken = deep
        .messages()
        .iter()
        .filter(|m| m.source.starts_with("deep."))
        .count();
    assert_eq!(spoken, 4);
    // deep's 4 turns, inner.m2 and wrap: resumed inside deep, fewer.
    assert!(some_resume_took_between(&resumed, 2, 6), "{resumed:?}");
}

/// `with_inner_team`, its `b` taking 30 s on its second turn if `slow`.
fn slow_team(slow: bool, store: Arc<dyn CheckpointStore>, calls: &Calls) -> Workflow {
    let quick = Arc::new(node("inner.b", calls));
    let b = FnAgent::new("inner.b", move |t: Arc<Thread>, ctx: RunContext| {
        let quick = quick.clone();
        async move {
            let second = t.messages().iter().any(|m| &*m.source == "inner.b");
            if slow && second {
                tokio::time::sleep(Duration::from_secs(30)).await;
            }
            troupe_runtime::Agent::run(&quick, t, ctx).await
        }
    });
    let team = Workflow::builder()
        .name("inner")
        .participant(node("inner.a", calls))
        .participant(b)
        .router(
            Router::builder()
                .add_route("user", "inner.a")
                .add_route("inner.a", "inner.b")
                .add_route("inner.b", "inner.a"),
        )
        .stop_condition(StopCondition::max_turns(6))
        .build()
        .unwrap();
    outer(team, false, Some(store), calls)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_cancelled_during_a_nested_team_keeps_the_teams_turns_and_resumes_from_them() {
    let reference =
        guard(with_inner_team(None, &Calls::default()).run_task("task", &RunContext::new()))
            .await
            .unwrap();

    let store: Arc<dyn CheckpointStore> = Arc::new(MemoryStore::new());
    let (ctx, mut events) = RunContext::stream();
    let ctx = ctx.with_run_id("cut");
    let canceller = ctx.clone();
    tokio::spawn(async move {
        let mut started = 0;
        while let Some(e) = events.next().await {
            if matches!(&e.event, Event::AgentStarted { path, .. } if path.starts_with("outer/inner/"))
            {
                started += 1;
                if started == 4 {
                    canceller.cancel(); // during the team's fourth turn
                }
            }
        }
    });
    let cut = guard(slow_team(true, store.clone(), &Calls::default()).run_task("task", &ctx))
        .await
        .unwrap();
    assert_eq!(cut.status, RunStatus::Cancelled);
    let kept = cut.thread.child("inner").unwrap();
    let spoken = |t: &Thread| {
        t.messages()
            .iter()
            .filter(|m| m.source.starts_with("inner."))
            .count()
    };
    assert_eq!(spoken(kept), 3, "the three turns before the cut");

    let calls = Calls::default();
    let done = guard(slow_team(false, store.clone(), &calls).resume("cut", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(content(&done.thread), content(&reference.thread));
    assert_eq!(done.final_text(), reference.final_text());
    assert_eq!(done.turns, reference.turns);
    assert_eq!(calls.get(), 4, "the team's last three turns and wrap");
}

/// An agent that asks the caller for its part and, answered, says what it
/// got.
fn asker(name: &str) -> FnAgent {
    let n = name.to_string();
    FnAgent::sync(name, move |t: &Thread| {
        match t
            .messages()
            .iter()
            .find(|m| m.metadata.contains_key("troupe.request"))
        {
            Some(answer) => Ok(Reply::text(format!("{n} got {}", answer.text_content()))),
            None => Ok(Reply::ask(format!("{n}: which?"))),
        }
    })
}

/// `intro -> desk -> out`, `desk` a graph fanning out to two askers; with
/// `deep`, `intro -> floor -> out`, `floor` a workflow of `desk` alone.
fn help_desk(store: Option<Arc<dyn CheckpointStore>>, deep: bool) -> Workflow {
    let calls = Calls::default();
    let desk = Graph::builder()
        .add_agent(node("split", &calls))
        .add_agent(asker("left"))
        .add_agent(asker("right"))
        .add_edge("split", "left")
        .add_edge("split", "right")
        .build()
        .unwrap();
    let desk = Workflow::builder()
        .name("desk")
        .graph(desk)
        .build()
        .unwrap();
    let (middle, name) = if deep {
        let floor = Graph::builder().add_agent(desk).build().unwrap();
        let floor = Workflow::builder()
            .name("floor")
            .graph(floor)
            .build()
            .unwrap();
        (floor, "floor")
    } else {
        (desk, "desk")
    };
    let g = Graph::builder()
        .add_agent(node("intro", &calls))
        .add_agent(middle)
        .add_agent(node("out", &calls))
        .add_edge("intro", name)
        .add_edge(name, "out")
        .build()
        .unwrap();
    let mut w = Workflow::builder().name("help").graph(g);
    if let Some(store) = store {
        w = w.checkpoint_store(store);
    }
    w.build().unwrap()
}

fn waiting(r: &RunResult) -> Vec<(String, String)> {
    match &r.status {
        RunStatus::WaitingForInput(requests) => requests
            .iter()
            .map(|q| (q.id.clone(), q.prompt.clone()))
            .collect(),
        other => panic!("expected to wait for input, got {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_questions_two_levels_down_are_answered_one_at_a_time_from_other_processes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    // Each step opens the store and builds the workflow afresh, as
    // another process would.
    let open = || Arc::new(SqliteStore::open(&path).unwrap()) as Arc<dyn CheckpointStore>;
    let (ctx, mut events) = RunContext::stream();
    let first = guard(help_desk(Some(open()), true).run_task("help", &ctx.with_run_id("desk-run")))
        .await
        .unwrap();
    let asked = waiting(&first);
    assert_eq!(asked.len(), 2, "{asked:?}");
    let (left, right) = (&asked[0].0, &asked[1].0);
    assert_ne!(left, right);
    // Each id names the way down to the agent that asked.
    assert!(left.starts_with("floor/desk/left-"), "{left}");
    assert!(right.starts_with("floor/desk/right-"), "{right}");
    assert_eq!(asked[0].1, "left: which?");
    let top_level_events: Vec<String> = events
        .drain_ready()
        .into_iter()
        .filter_map(|e| match e.event {
            Event::InputRequested { path, request, .. } if &*path == "help/floor" => Some(request),
            _ => None,
        })
        .collect();
    assert_eq!(top_level_events, [left.clone(), right.clone()]);
    assert_eq!(
        Workflow::pending_requests(&first.thread).len(),
        2,
        "the thread lists them too"
    );

    let store = open();
    let after_right = guard(help_desk(Some(store.clone()), true).respond(
        store.as_ref(),
        "desk-run",
        right,
        "the blue one",
        &RunContext::new(),
    ))
    .await
    .unwrap();
    assert_eq!(
        waiting(&after_right),
        [(left.clone(), "left: which?".to_string())],
        "the other question is still open, under the same id"
    );

    let store = open();
    let done = guard(help_desk(Some(store.clone()), true).respond(
        store.as_ref(),
        "desk-run",
        left,
        "the red one",
        &RunContext::new(),
    ))
    .await
    .unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert!(Workflow::pending_requests(&done.thread).is_empty());
    let desk = done
        .thread
        .child("floor")
        .and_then(|t| t.child("desk"))
        .unwrap();
    let said = |agent: &str| content(desk.child(agent).unwrap());
    let left_saw = said("left");
    let right_saw = said("right");
    assert!(
        left_saw.contains(&"user: the red one".to_string()),
        "{left_saw:?}"
    );
    assert!(left_saw.contains(&"left: left got the red one".to_string()));
    assert!(!left_saw.iter().any(|l| l.contains("blue")), "{left_saw:?}");
    assert!(right_saw.contains(&"right: right got the blue one".to_string()));
    assert!(
        !right_saw.iter().any(|l| l.contains("red")),
        "{right_saw:?}"
    );
    let top: Vec<&str> = done.thread.messages().iter().map(|m| &*m.source).collect();
    assert_eq!(top.last(), Some(&"out"), "{top:?}");
    assert_ids_unique(&done.thread, "the answered run");
    // A wrong id names the open ones; none are left.
    let err = help_desk(Some(store.clone()), true)
        .respond(
            store.as_ref(),
            "desk-run",
            left,
            "again",
            &RunContext::new(),
        )
        .await
        .unwrap_err();
    assert!(err.to_string().contains("none"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_questions_are_answered_in_the_returned_thread_without_a_store() {
    let wf = help_desk(None, false);
    let first = guard(wf.run_task("help", &RunContext::new()))
        .await
        .unwrap();
    let asked = waiting(&first);
    assert_eq!(asked.len(), 2);
    let next = guard(wf.respond_in_thread(first.thread, &asked[0].0, "one", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(waiting(&next), asked[1..]);
    let done = guard(wf.respond_in_thread(next.thread, &asked[1].0, "two", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    let desk = done.thread.child("desk").unwrap();
    let last = |agent: &str| {
        desk.child(agent)
            .unwrap()
            .last()
            .unwrap()
            .text_content()
            .into_owned()
    };
    assert_eq!(last("left"), "left got one");
    assert_eq!(last("right"), "right got two");
    // The answers are input, not output: each run lists only what it made.
    assert!(
        done.messages
            .iter()
            .all(|m| !m.metadata.contains_key("troupe.request"))
    );
}

/// A team member that speaks, then asks the caller on its second turn,
/// then says what it got.
fn second_turn_asker(name: &str) -> FnAgent {
    let n = name.to_string();
    FnAgent::sync(name, move |t: &Thread| {
        let answered = t
            .messages()
            .iter()
            .find(|m| m.metadata.contains_key("troupe.request"));
        let spoke = t.messages().iter().any(|m| *m.source == *n);
        Ok(match (answered, spoke) {
            (Some(a), _) => Reply::text(format!("{n} got {}", a.text_content())),
            (None, true) => Reply::ask("and then?"),
            (None, false) => Reply::text(format!("{n} starts")),
        })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_nested_team_answered_counts_on_from_its_turns_before_the_question() {
    let store: Arc<dyn CheckpointStore> = Arc::new(MemoryStore::new());
    let build = |store: Arc<dyn CheckpointStore>| {
        let calls = Calls::default();
        let team = Workflow::builder()
            .name("team")
            .participant(second_turn_asker("a"))
            .participant(node("b", &calls))
            .router(
                Router::builder()
                    .add_route("user", "a")
                    .add_route("a", "b")
                    .add_route("b", "a"),
            )
            .stop_condition(StopCondition::max_turns(4))
            .build()
            .unwrap();
        let g = Graph::builder()
            .add_agent(team)
            .add_agent(node("wrap", &calls))
            .add_edge("team", "wrap")
            .build()
            .unwrap();
        Workflow::builder()
            .name("top")
            .graph(g)
            .checkpoint_store(store)
            .build()
            .unwrap()
    };
    let first = guard(build(store.clone()).run_task("go", &RunContext::new().with_run_id("t")))
        .await
        .unwrap();
    let asked = waiting(&first);
    assert_eq!(asked.len(), 1);
    assert!(asked[0].0.starts_with("team/a-"), "{asked:?}");
    let done = guard(build(store.clone()).respond(
        store.as_ref(),
        "t",
        &asked[0].0,
        "more",
        &RunContext::new(),
    ))
    .await
    .unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    let team = done.thread.child("team").unwrap();
    let spoken: Vec<String> = team
        .messages()
        .iter()
        .filter(|m| *m.source == *"a" || *m.source == *"b")
        .map(|m| format!("{}: {}", m.source, m.text_content()))
        .collect();
    // a, b, (a asks), a, b: four turns in all, two before the question.
    assert_eq!(spoken.len(), 4, "{spoken:?}");
    assert_eq!(spoken[2], "a: a got more");
    assert!(done.final_text().starts_with("wrap saw"));
}
