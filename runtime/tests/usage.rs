//! What runs spend: turns, model calls, tool calls, tokens and cost per
//! agent and in total, on every result (a failed run's too), through
//! nested workflows with full-path keys, counted once, every attempt of a
//! retried turn included, kept across a resume, and budgets that stop a
//! run on it.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use troupe_runtime::store::{CheckpointStore, MemoryStore};
use troupe_runtime::{
    Agent, AgentError, Event, FnAgent, Graph, Message, Reply, RunContext, RunError, RunStatus,
    StopCondition, Thread, Workflow, event::FinalStatus, message::Usage,
};

mod common;
use common::guard;

const CALL: Usage = Usage {
    prompt_tokens: 10,
    completion_tokens: 5,
};

/// An agent that makes `calls` model calls (each 10 + 5 tokens, 0.01 USD)
/// and as many tool calls, then answers — or fails, with `fail`.
fn spender(name: &str, calls: u64, fail: bool) -> FnAgent {
    let name_owned = name.to_string();
    FnAgent::new(name, move |_t: Arc<Thread>, ctx: RunContext| {
        let name = name_owned.clone();
        async move {
            for _ in 0..calls {
                ctx.record_model_call(CALL, Some(0.01));
                ctx.record_tool_call();
            }
            if fail {
                Err(AgentError::model("the server went away"))
            } else {
                Ok(Reply::text(format!("{name} done")))
            }
        }
    })
}

fn chain(name: &str, agents: Vec<FnAgent>) -> Workflow {
    let names: Vec<String> = agents.iter().map(|a| a.name().to_string()).collect();
    let mut g = Graph::builder();
    for a in agents {
        g = g.add_agent(a);
    }
    for pair in names.windows(2) {
        g = g.add_edge(pair[0].clone(), pair[1].clone());
    }
    Workflow::builder()
        .name(name)
        .graph(g.build().unwrap())
        .build()
        .unwrap()
}

#[tokio::test]
async fn a_failed_run_reports_what_its_turns_spent_per_agent_and_in_total() {
    let wf = chain(
        "team",
        vec![spender("planner", 1, false), spender("writer", 2, true)],
    );
    let (ctx, mut events) = RunContext::stream();
    let err = guard(wf.run_task("go", &ctx)).await.unwrap_err();
    assert!(matches!(err, RunError::AgentFailed { .. }), "{err}");
    let stats = err.stats().expect("a failed run has stats");
    assert_eq!(stats.total.model_calls, 3);
    assert_eq!(stats.total.tool_calls, 3);
    assert_eq!(stats.total.input_tokens, 30);
    assert_eq!(stats.total.output_tokens, 15);
    assert_eq!(stats.total.turns, 2);
    assert!((stats.total.cost.unwrap() - 0.03).abs() < 1e-9);
    let writer = &stats.agents["team/writer"];
    assert_eq!(
        (writer.model_calls, writer.input_tokens, writer.turns),
        (2, 20, 1)
    );
    assert_eq!(stats.agents["team/planner"].model_calls, 1);

    let events: Vec<Event> = events.drain_ready().into_iter().map(|r| r.event).collect();
    let failed = events
        .iter()
        .find_map(|e| match e {
            Event::AgentFailed { path, attempt, .. } => Some((path.to_string(), *attempt)),
            _ => None,
        })
        .expect("an AgentFailed event");
    assert_eq!(failed, ("team/writer".to_string(), 1));
    let finished = events
        .iter()
        .find_map(|e| match e {
            Event::RunFinished { status, stats, .. } => Some((*status, (**stats).clone())),
            _ => None,
        })
        .unwrap();
    assert_eq!(finished.0, FinalStatus::Failed);
    assert_eq!(&finished.1, stats);
}

#[tokio::test]
async fn an_agent_that_meters_and_puts_usage_on_its_message_is_counted_once() {
    let both = FnAgent::new("both", |_t: Arc<Thread>, ctx: RunContext| async move {
        ctx.record_model_call(CALL, None);
        Ok(Message::text("both", "hi").with_usage(CALL))
    });
    let only_message = FnAgent::sync("plain", |_t: &Thread| {
        Ok(Message::text("plain", "ho").with_usage(CALL))
    });
    let r = guard(chain("t", vec![both, only_message]).run_task("go", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(r.stats.total.input_tokens, 20);
    assert_eq!(r.usage.prompt_tokens, 20);
    assert_eq!(
        r.stats.total.model_calls, 1,
        "the plain agent did not meter"
    );
    assert_eq!(r.stats.agents["t/plain"].input_tokens, 10);
    assert_eq!(r.stats.total.cost, None, "nothing was priced");
    assert_eq!(r.turns, 2);
}

fn nested(inner_fails: bool) -> Workflow {
    let inner = chain(
        "inner",
        vec![
            spender("drafter", 1, false),
            spender("writer", 2, inner_fails),
        ],
    );
    let g = Graph::builder()
        .add_agent(spender("lead", 1, false))
        .add_agent(inner)
        .add_edge("lead", "inner")
        .build()
        .unwrap();
    Workflow::builder().name("outer").graph(g).build().unwrap()
}

#[tokio::test]
async fn a_nested_run_s_spend_reaches_the_top_by_full_path_even_when_it_fails() {
    let r = guard(nested(false).run_task("go", &RunContext::new()))
        .await
        .unwrap();
    let s = &r.stats;
    assert_eq!(s.total.model_calls, 4, "{s:?}");
    assert_eq!(s.total.input_tokens, 40, "counted once: {s:?}");
    assert_eq!(s.agents["outer/inner/writer"].model_calls, 2);
    assert_eq!(s.agents["outer/inner/drafter"].model_calls, 1);
    assert_eq!(s.agents["outer/lead"].model_calls, 1);
    // The nested workflow's own turn, and its agents' turns.
    assert_eq!(s.agents["outer/inner"].turns, 1);
    assert_eq!(s.agents["outer/inner/writer"].turns, 1);
    assert_eq!(r.usage.prompt_tokens, 40);

    let err = guard(nested(true).run_task("go", &RunContext::new()))
        .await
        .unwrap_err();
    let s = err.stats().unwrap();
    assert_eq!(s.total.model_calls, 4, "{s:?}");
    assert_eq!(s.agents["outer/inner/writer"].model_calls, 2);
    assert!((s.total.cost_usd() - 0.04).abs() < 1e-9);
}

#[tokio::test]
async fn budgets_end_the_run_cleanly_with_a_reason_naming_them() {
    let cases = [
        (
            StopCondition::max_model_calls(3),
            "budget: 4 model calls ≥ 3",
        ),
        (StopCondition::max_tool_calls(2), "budget: 2 tool calls ≥ 2"),
        (
            StopCondition::max_cost(0.03),
            "budget: cost 0.0400 USD ≥ 0.03",
        ),
        (
            StopCondition::token_budget(30),
            "budget: 30 tokens spent ≥ 30",
        ),
    ];
    for (budget, detail) in cases {
        let condition = budget.to_string();
        let g = Graph::builder()
            .add_agent(spender("a", 2, false))
            .add_agent(spender("b", 2, false))
            .add_agent(spender("c", 2, false))
            .add_edge("a", "b")
            .add_edge("b", "c")
            .build()
            .unwrap();
        let store: Arc<dyn CheckpointStore> = Arc::new(MemoryStore::new());
        let wf = Workflow::builder()
            .name("team")
            .graph(g)
            .stop_condition(budget)
            .checkpoint_store(store.clone())
            .build()
            .unwrap();
        let r = guard(wf.run_task("go", &RunContext::new().with_run_id("b")))
            .await
            .unwrap();
        let RunStatus::Stopped(reason) = &r.status else {
            panic!("{condition}: {:?}", r.status)
        };
        assert_eq!(reason.condition, condition);
        assert_eq!(reason.detail, detail, "{condition}");
        assert!(!r.stats.agents.contains_key("team/c"), "{condition}");
        assert!(r.checkpoint.is_some(), "a stop saves a checkpoint");
    }
}

/// Asks the user first, then answers; spends one model call a turn.
fn asker() -> FnAgent {
    FnAgent::new("clerk", |t: Arc<Thread>, ctx: RunContext| async move {
        ctx.record_model_call(CALL, Some(0.5));
        let answered = t
            .messages()
            .iter()
            .any(|m| m.metadata.contains_key("troupe.request"));
        Ok(if answered {
            Reply::text("booked")
        } else {
            Reply::ask("For which date?")
        })
    })
}

#[tokio::test]
async fn a_resumed_run_counts_on_from_its_checkpoint() {
    let store: Arc<dyn CheckpointStore> = Arc::new(MemoryStore::new());
    let wf = || {
        let g = Graph::builder()
            .add_agent(spender("intake", 1, false))
            .add_agent(asker())
            .add_edge("intake", "clerk")
            .build()
            .unwrap();
        Workflow::builder()
            .name("booking")
            .graph(g)
            .checkpoint_store(store.clone())
            .build()
            .unwrap()
    };
    let r = guard(wf().run_task("a table", &RunContext::new().with_run_id("r1")))
        .await
        .unwrap();
    let RunStatus::WaitingForInput(requests) = &r.status else {
        panic!("{:?}", r.status)
    };
    assert_eq!(r.stats.total.model_calls, 2);
    let id = requests[0].id.clone();
    let done = guard(wf().respond(store.as_ref(), "r1", &id, "Friday", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(done.status, RunStatus::Completed);
    assert_eq!(done.stats.total.model_calls, 3, "{:?}", done.stats);
    assert_eq!(done.stats.agents["booking/clerk"].model_calls, 2);
    assert_eq!(done.stats.agents["booking/clerk"].turns, 2);
    assert!((done.stats.total.cost_usd() - 1.01).abs() < 1e-9);
}

#[tokio::test]
async fn a_retried_turn_counts_the_spend_of_every_attempt() {
    use std::sync::atomic::{AtomicU32, Ordering};
    use std::time::Duration;
    use troupe_runtime::RetryPolicy;

    let attempts = Arc::new(AtomicU32::new(0));
    let flaky = FnAgent::new("flaky", move |_t: Arc<Thread>, ctx: RunContext| {
        let attempts = attempts.clone();
        async move {
            ctx.record_model_call(CALL, None);
            if attempts.fetch_add(1, Ordering::SeqCst) < 2 {
                Err(AgentError::transient("rate limited"))
            } else {
                Ok(Reply::text("at last"))
            }
        }
    });
    let g = Graph::builder()
        .add_agent(flaky)
        .retry("flaky", RetryPolicy::fixed(3, Duration::from_millis(1)))
        .build()
        .unwrap();
    let wf = Workflow::builder().name("t").graph(g).build().unwrap();
    let (ctx, mut events) = RunContext::stream();
    let r = guard(wf.run_task("go", &ctx)).await.unwrap();
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!(r.turns, 1);
    let flaky = &r.stats.agents["t/flaky"];
    assert_eq!((flaky.model_calls, flaky.turns), (3, 3), "{flaky:?}");
    let failed: Vec<u32> = events
        .drain_ready()
        .into_iter()
        .filter_map(|e| match e.event {
            Event::AgentFailed { attempt, .. } => Some(attempt),
            _ => None,
        })
        .collect();
    assert_eq!(failed, [1, 2]);
}
