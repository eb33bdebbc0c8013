//! Each preset's behaviour, its stop conditions, and presets nested in
//! presets.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use troupe_agents::{ScriptedModel, ScriptedReply};
use troupe_presets::{MapReduce, RoundRobinGroupChat, SelectorGroupChat, Sequential, Swarm};
use troupe_runtime::{
    AgentError, Event, FnAgent, Message, RunContext, RunStatus, StopCondition, Thread, Workflow,
};

async fn guard<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("the run hung")
}

fn speaker(name: &'static str) -> FnAgent {
    FnAgent::sync(name, move |t: &Thread| Ok(format!("{name} #{}", t.len())))
}

fn sources(messages: &[Arc<Message>]) -> Vec<String> {
    messages.iter().map(|m| m.source.to_string()).collect()
}

fn round_robin(stop: StopCondition) -> Workflow {
    RoundRobinGroupChat::builder()
        .name("rr")
        .participant(speaker("a"))
        .participant(speaker("b"))
        .participant(speaker("c"))
        .stop_condition(stop)
        .build()
        .unwrap()
}

#[tokio::test]
async fn round_robin_keeps_its_order_across_resumes() {
    let team = round_robin(StopCondition::max_messages(3));
    let r = guard(team.run_task("go", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(sources(&r.messages), ["a", "b"]);
    let mut thread = r.thread;
    thread.push(Message::user("more"));
    let r = guard(team.run(thread, &RunContext::new())).await.unwrap();
    assert_eq!(
        sources(&r.messages),
        ["c", "a"],
        "continues with the next speaker"
    );
    // Everyone saw everything: a's thread has the task, b, user, c and its own.
    let a = r.thread.child("a").unwrap();
    assert_eq!(sources(a.messages()), ["user", "a", "b", "user", "c", "a"]);
}

#[tokio::test]
async fn text_mention_max_messages_and_timeout_stop_a_round_robin() {
    let r =
        guard(round_robin(StopCondition::text_mention("b #")).run_task("go", &RunContext::new()))
            .await
            .unwrap();
    assert_eq!(sources(&r.messages), ["a", "b"]);
    let r = guard(round_robin(StopCondition::max_messages(6)).run_task("go", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(r.thread.len(), 6);

    let slow = RoundRobinGroupChat::builder()
        .participant(FnAgent::new("slow", |_, _| async {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Ok::<_, AgentError>("late")
        }))
        .stop_condition(StopCondition::timeout(Duration::from_millis(50)))
        .build()
        .unwrap();
    let r = guard(slow.run_task("go", &RunContext::new()))
        .await
        .unwrap();
    assert!(matches!(r.status, RunStatus::Stopped(ref s) if s.condition.starts_with("timeout")));
}

#[tokio::test]
async fn round_robin_without_any_stop_is_refused() {
    let err = RoundRobinGroupChat::builder()
        .participant(speaker("a"))
        .participant(speaker("b"))
        .build()
        .unwrap_err();
    assert!(err.to_string().contains("stop condition"), "{err}");
}

fn selector_team(model: Arc<ScriptedModel>, allow_repeat: bool) -> Workflow {
    SelectorGroupChat::builder()
        .name("sel")
        .participant(speaker("planner").with_description("plans the work"))
        .participant(speaker("coder").with_description("writes code"))
        .participant(speaker("tester").with_description("tests code"))
        .model(model)
        .allow_repeated_speaker(allow_repeat)
        .stop_condition(StopCondition::max_messages(4))
        .build()
        .unwrap()
}

#[tokio::test]
async fn the_selector_model_picks_never_repeats_and_recovers_from_bad_answers() {
    let model = Arc::new(ScriptedModel::new([
        ScriptedReply::text("planner"),
        // Verbose, but names one candidate.
        ScriptedReply::text("I believe the coder should now implement the plan."),
        // Invalid: names nobody; the model is told so and answers again.
        ScriptedReply::text("the intern"),
        ScriptedReply::text("tester"),
    ]));
    let (ctx, mut events) = RunContext::stream();
    let r = guard(selector_team(model.clone(), false).run_task("ship it", &ctx))
        .await
        .unwrap();
    assert_eq!(sources(&r.messages), ["planner", "coder", "tester"]);
    // The retry carried the model's bad answer and a correction.
    let requests = model.requests();
    assert_eq!(requests.len(), 4);
    let retry = &requests[3].messages;
    assert!(
        retry
            .last()
            .unwrap()
            .text()
            .contains("names no valid candidate"),
        "{retry:?}"
    );
    // The prompt offered only candidates: after coder, the coder is not one.
    let third_prompt = requests[2].messages[0].text();
    assert!(third_prompt.contains("[planner, tester]"), "{third_prompt}");
    assert!(third_prompt.contains("planner: plans the work"));
    assert!(
        third_prompt.contains("coder: coder #"),
        "history is in the prompt"
    );
    let selected: Vec<_> = events
        .drain_ready()
        .into_iter()
        .filter_map(|e| match e.event {
            Event::Selected { next, .. } => Some(next.join(",")),
            _ => None,
        })
        .collect();
    assert_eq!(selected, ["planner", "coder", "tester"]);
}

#[tokio::test]
async fn the_selector_falls_back_after_max_attempts() {
    let model = Arc::new(ScriptedModel::from_fn(|_| {
        Ok(ScriptedReply::text("no idea"))
    }));
    let team = SelectorGroupChat::builder()
        .participant(speaker("x"))
        .participant(speaker("y"))
        .model(model.clone())
        .max_selector_attempts(2)
        .max_turns(1)
        .build()
        .unwrap();
    let r = guard(team.run_task("go", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(
        sources(&r.messages),
        ["x"],
        "no previous speaker: the first candidate"
    );
    assert_eq!(model.requests().len(), 2);
}

#[tokio::test]
async fn a_selector_function_overrides_the_model() {
    let model = Arc::new(ScriptedModel::from_fn(|_| {
        Ok(ScriptedReply::text("tester"))
    }));
    let team = SelectorGroupChat::builder()
        .participant(speaker("planner"))
        .participant(speaker("coder"))
        .participant(speaker("tester"))
        .model(model.clone())
        // The function decides after the planner; otherwise the model does.
        .selector_fn(|input| (input.previous == Some("planner")).then(|| "coder".to_string()))
        .candidate_fn(|input| {
            if input.previous.is_none() {
                vec!["planner".into()]
            } else {
                input.participants.to_vec()
            }
        })
        .stop_condition(StopCondition::max_messages(4))
        .build()
        .unwrap();
    let r = guard(team.run_task("go", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(sources(&r.messages), ["planner", "coder", "tester"]);
    assert_eq!(
        model.requests().len(),
        1,
        "only the third choice went to the model"
    );
}

fn hands_to(name: &'static str, target: &'static str) -> FnAgent {
    FnAgent::sync(name, move |t: &Thread| {
        Ok(Message::handoff(
            "",
            target,
            format!("{name} saw {}", t.len()),
        ))
    })
    .with_handoffs([target])
}

#[tokio::test]
async fn a_swarm_hands_off_to_the_user_and_resumes_where_it_left() {
    let c_calls = Arc::new(AtomicUsize::new(0));
    let c2 = c_calls.clone();
    let c = FnAgent::sync("c", move |t: &Thread| {
        if c2.fetch_add(1, Ordering::SeqCst) == 0 {
            Ok(Message::handoff("", "user", "which size?"))
        } else {
            Ok(Message::text(
                "",
                format!("done: {}", t.last().unwrap().text_content()),
            ))
        }
    })
    .with_handoffs(["user"]);
    let swarm = Swarm::builder()
        .name("swarm")
        .participant(hands_to("a", "b"))
        .participant(hands_to("b", "c"))
        .participant(c)
        .stop_condition(StopCondition::handoff("user") | StopCondition::text_mention("done"))
        .build()
        .unwrap();
    let r = guard(swarm.run_task("order a shirt", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(sources(&r.messages), ["a", "b", "c"]);
    assert_eq!(
        r.final_response.as_ref().unwrap().handoff_target(),
        Some("user")
    );
    let mut thread = r.thread;
    thread.push(Message::user("large"));
    let r = guard(swarm.run(thread, &RunContext::new())).await.unwrap();
    assert_eq!(
        sources(&r.messages),
        ["c"],
        "resumes with the agent that handed off"
    );
    assert_eq!(r.final_text(), "done: large");
}

#[test]
fn a_swarm_whose_first_agent_cannot_hand_off_is_refused() {
    let err = Swarm::builder()
        .participant(speaker("mute"))
        .participant(hands_to("b", "mute"))
        .build()
        .unwrap_err();
    assert!(
        err.to_string().contains("'mute' declares no handoffs"),
        "{err}"
    );
}

#[tokio::test(start_paused = true)]
async fn map_reduce_runs_fifty_isolated_workers_in_parallel() {
    let threads_seen = Arc::new(Mutex::new(Vec::new()));
    let seen = threads_seen.clone();
    let worker = FnAgent::new("worker", move |t: Arc<Thread>, _| {
        let seen = seen.clone();
        async move {
            seen.lock().unwrap().push(t.len());
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok::<_, AgentError>(format!("done {}", t.last().unwrap().text_content()))
        }
    });
    let reduced = Arc::new(Mutex::new(0usize));
    let r2 = reduced.clone();
    let team = MapReduce::builder()
        .name("mr")
        .mapper(FnAgent::sync("mapper", |_: &Thread| {
            Ok(
                serde_json::to_string(&(1..=50).map(|i| format!("part {i}")).collect::<Vec<_>>())
                    .unwrap(),
            )
        }))
        .worker(worker)
        .reducer(FnAgent::sync("reducer", move |t: &Thread| {
            *r2.lock().unwrap() = t.len();
            Ok(format!("{} results", t.len()))
        }))
        .build()
        .unwrap();
    let started = tokio::time::Instant::now();
    let r = guard(team.run_task("split this", &RunContext::new()))
        .await
        .unwrap();
    let elapsed = started.elapsed();
    assert!(
        elapsed < Duration::from_millis(200),
        "parallel, not 50 × 100 ms: {elapsed:?}"
    );
    assert_eq!(r.final_text(), "50 results");
    assert_eq!(*reduced.lock().unwrap(), 50);
    // Isolated: each worker saw only its own sub-task.
    assert_eq!(*threads_seen.lock().unwrap(), vec![1; 50]);
    let reducer_thread = r.thread.child("reducer").unwrap();
    assert_eq!(reducer_thread.messages()[49].metadata["subtask"], "part 50");
}

#[tokio::test(start_paused = true)]
async fn map_reduce_honours_its_concurrency_limit() {
    let team = MapReduce::builder()
        .split(|_| (0..10).map(|i| i.to_string()).collect())
        .worker(FnAgent::new("w", |_, _| async {
            tokio::time::sleep(Duration::from_millis(100)).await;
            Ok::<_, AgentError>("ok")
        }))
        .reducer(FnAgent::sync("r", |t: &Thread| Ok(t.len().to_string())))
        .max_concurrency(5)
        .build()
        .unwrap();
    let started = tokio::time::Instant::now();
    let r = guard(team.run_task("go", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(r.final_text(), "10");
    let elapsed = started.elapsed();
    assert!(
        elapsed >= Duration::from_millis(200) && elapsed < Duration::from_millis(300),
        "{elapsed:?}"
    );
}

#[tokio::test]
async fn sequential_steps_see_the_task_and_prior_outputs() {
    let team = Sequential::builder()
        .participant(speaker("one"))
        .participant(speaker("two"))
        .participant(FnAgent::sync("three", |t: &Thread| {
            Ok(sources(t.messages()).join(","))
        }))
        .build()
        .unwrap();
    let r = guard(team.run_task("go", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(r.final_text(), "user,one,two");
}

#[tokio::test]
async fn every_preset_nests_in_another() {
    let inner_rr = round_robin(StopCondition::max_messages(3));
    let swarm = Swarm::builder()
        .name("swarm")
        .participant(hands_to("s1", "user"))
        .build()
        .unwrap();
    let mr = MapReduce::builder()
        .name("mr")
        .split(|_| vec!["x".into(), "y".into()])
        .worker(speaker("w"))
        .reducer(FnAgent::sync("sum", |t: &Thread| {
            Ok(format!("{} parts", t.len()))
        }))
        .build()
        .unwrap();
    let selector = SelectorGroupChat::builder()
        .name("sel")
        .participant(speaker("p"))
        .selector_fn(|_| Some("p".into()))
        .max_turns(1)
        .build()
        .unwrap();
    // A sequence of four teams, itself nested in a round robin.
    let seq = Sequential::builder()
        .name("seq")
        .participant(inner_rr)
        .participant(swarm)
        .participant(mr)
        .participant(selector)
        .build()
        .unwrap();
    let outer = RoundRobinGroupChat::builder()
        .name("outer")
        .participant(seq)
        .max_turns(1)
        .build()
        .unwrap();
    let (ctx, mut events) = RunContext::stream();
    let r = guard(outer.run_task("go", &ctx)).await.unwrap();
    assert_eq!(&*r.final_response.unwrap().source, "seq");
    let paths: Vec<String> = events
        .drain_ready()
        .into_iter()
        .filter_map(|e| match e.event {
            Event::AgentStarted { path, .. } => Some(path.to_string()),
            _ => None,
        })
        .collect();
    for expected in [
        "outer/seq/rr/a",
        "outer/seq/swarm/s1",
        "outer/seq/mr/map/w#2",
        "outer/seq/sel/selector",
        "outer/seq/sel/p",
    ] {
        assert!(
            paths.iter().any(|p| p == expected),
            "{expected} not in {paths:?}"
        );
    }
}

#[tokio::test]
async fn a_preset_checkpoints_every_turn_and_resumes() {
    use troupe_runtime::store::{CheckpointStore, MemoryStore};
    let store = Arc::new(MemoryStore::new());
    let team = || {
        RoundRobinGroupChat::builder()
            .name("rr")
            .participant(speaker("a"))
            .participant(speaker("b"))
            .participant(speaker("c"))
            .stop_condition(StopCondition::max_messages(7))
            .checkpoint_store(store.clone())
            .build()
            .unwrap()
    };
    let whole = guard(team().run_task("go", &RunContext::new().with_run_id("t1")))
        .await
        .unwrap();
    let checkpoints = store.list("t1").await.unwrap();
    assert!(
        checkpoints.len() >= 6,
        "one per turn: {}",
        checkpoints.len()
    );
    // From the third turn's checkpoint, a fresh team value ends where the
    // uninterrupted run did.
    let again = guard(team().run_from_checkpoint(
        store.as_ref(),
        "t1",
        Some(checkpoints[2].id),
        &RunContext::new().with_run_id("t2"),
    ))
    .await
    .unwrap();
    assert_eq!(
        sources(again.thread.messages()),
        sources(whole.thread.messages())
    );
    assert_eq!(again.final_text(), whole.final_text());
}

#[tokio::test]
async fn map_reduce_runs_again_with_as_many_or_other_numbers_of_sub_tasks() {
    // The split says how many parts: the task text is the count.
    let team = MapReduce::builder()
        .name("mr")
        .split(|t: &Thread| {
            let n: usize = t.last().unwrap().text_content().parse().unwrap();
            (1..=n).map(|i| format!("part {i}")).collect()
        })
        .worker(FnAgent::sync("worker", |t: &Thread| {
            Ok(format!("did {}", t.last().unwrap().text_content()))
        }))
        .reducer(FnAgent::sync("reducer", |t: &Thread| {
            let parts: Vec<String> = t
                .messages()
                .iter()
                .filter(|m| m.metadata.contains_key("worker"))
                .map(|m| m.text_content().into_owned())
                .collect();
            Ok(parts.join(", "))
        }))
        .build()
        .unwrap();
    // The second run reuses the first's inner workflow and worker actors;
    // the third needs another shape; the fourth goes back.
    for n in [3, 3, 2, 3] {
        let r = guard(team.run_task(n.to_string(), &RunContext::new()))
            .await
            .unwrap();
        let expected: Vec<String> = (1..=n).map(|i| format!("did part {i}")).collect();
        assert_eq!(r.final_text(), expected.join(", "), "with {n} parts");
    }
}
