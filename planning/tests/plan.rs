//! Planning: the text parser (the seed's examples and every error with its
//! line), action groups, result passing, stop flags, the planning agent,
//! and a property test of execution order.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use proptest::prelude::*;
use troupe_agents::{ScriptedModel, ScriptedReply};
use troupe_planning::{
    ActionGroups, CompileOptions, Plan, PlanError, PlanFormat, PlanGraph, PlanSpec, PlanStep,
    PlanningAgent, ResultContent, ResultPassing, ResultScope, STEP_KEY, StepResult, StopFlag,
    Summarizer,
};
use troupe_presets::Sequential;
use troupe_runtime::{
    Agent, AgentError, Content, Event, FnAgent, Message, Reply, RunContext, RunStatus, Thread,
    graph::Isolation, graph::Scheduler,
};

async fn guard<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("the run hung")
}

fn last_text(t: &Thread) -> String {
    t.last()
        .map(|m| m.text_content().into_owned())
        .unwrap_or_default()
}

/// An agent that answers "result of <its request>".
fn worker() -> Arc<dyn Agent> {
    Arc::new(FnAgent::sync("worker", |t: &Thread| {
        Ok(format!("result of {}", last_text(t)))
    }))
}

fn step(id: &str, agent: &Arc<dyn Agent>) -> PlanStep {
    PlanStep::shared(id, agent.clone(), id.to_lowercase())
}

/// The text each step's agent was shown, recorded by step request.
type Seen = Arc<Mutex<Vec<(String, Vec<String>)>>>;

fn recorder() -> (Arc<dyn Agent>, Seen) {
    let seen: Seen = Arc::default();
    let log = seen.clone();
    let agent = Arc::new(FnAgent::sync("recorder", move |t: &Thread| {
        let request = last_text(t);
        let texts = t
            .messages()
            .iter()
            .map(|m| m.text_content().into_owned())
            .collect();
        log.lock().unwrap().push((request.clone(), texts));
        Ok(format!("result of {request}"))
    }));
    (agent, seen)
}

fn seen_by(seen: &Seen, request: &str) -> Vec<String> {
    seen.lock()
        .unwrap()
        .iter()
        .find(|(r, _)| r == request)
        .map(|(_, t)| t.clone())
        .unwrap_or_else(|| panic!("'{request}' did not run"))
}

fn edges(g: &PlanGraph) -> Vec<(String, String)> {
    let mut e: Vec<_> = g
        .edges()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    e.sort();
    e
}

fn pairs(list: &[(&str, &str)]) -> Vec<(String, String)> {
    list.iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect()
}

// ---------------------------------------------------------------- parser

#[test]
fn the_seeds_problem_graph_parses_into_two_start_nodes() {
    let text = "
    SUGGEST_RECIPE_STARBUCKS -> ORDER_STARBUCKS
    ORDER_MCDONALDS
  ";
    let g = PlanGraph::parse(text).unwrap();
    assert_eq!(
        g.ids(),
        [
            "SUGGEST_RECIPE_STARBUCKS",
            "ORDER_STARBUCKS",
            "ORDER_MCDONALDS"
        ]
    );
    assert_eq!(g.starts(), ["SUGGEST_RECIPE_STARBUCKS", "ORDER_MCDONALDS"]);
    assert_eq!(
        edges(&g),
        pairs(&[("SUGGEST_RECIPE_STARBUCKS", "ORDER_STARBUCKS")])
    );
    assert_eq!(g.line_of("ORDER_MCDONALDS"), Some(3));
    assert_eq!(
        g.predecessors("ORDER_STARBUCKS"),
        ["SUGGEST_RECIPE_STARBUCKS"]
    );
}

#[test]
fn alternatives_expand_as_a_cartesian_product() {
    // A -> B, C -> D is A→B→D and A→C→D.
    let g = PlanGraph::parse("A -> B, C -> D").unwrap();
    assert_eq!(g.ids(), ["A", "B", "C", "D"]);
    assert_eq!(
        edges(&g),
        pairs(&[("A", "B"), ("A", "C"), ("B", "D"), ("C", "D")])
    );
    assert_eq!(g.starts(), ["A"]);
    // Two positions of two: four edges, every combination.
    let g = PlanGraph::parse("A, B -> C, D").unwrap();
    assert_eq!(
        edges(&g),
        pairs(&[("A", "C"), ("A", "D"), ("B", "C"), ("B", "D")])
    );
    assert_eq!(g.starts(), ["A", "B"]);
}

#[test]
fn paths_that_share_a_prefix_share_its_nodes() {
    let g = PlanGraph::parse("A -> B -> C\nA -> B -> D\nX -> Y").unwrap();
    // One node per id, however many lines name it.
    assert_eq!(g.ids(), ["A", "B", "C", "D", "X", "Y"]);
    assert_eq!(
        edges(&g),
        pairs(&[("A", "B"), ("B", "C"), ("B", "D"), ("X", "Y")])
    );
    assert_eq!(g.starts(), ["A", "X"]);
    // The text form parses back into the same graph.
    assert_eq!(edges(&PlanGraph::parse(&g.to_string()).unwrap()), edges(&g));
}

fn parse_err(text: &str) -> PlanError {
    PlanGraph::parse(text).unwrap_err()
}

#[test]
fn every_error_names_its_line() {
    // Blank lines are skipped but counted.
    let e = parse_err("A -> B\n\nB -> -> C");
    assert!(
        matches!(
            e,
            PlanError::EmptyStep {
                line: 3,
                position: 2
            }
        ),
        "{e:?}"
    );
    assert_eq!(e.line(), Some(3));
    assert_eq!(
        e.to_string(),
        "line 3: position 2 of the path has an empty step id"
    );

    let e = parse_err("A ->");
    assert!(
        matches!(
            e,
            PlanError::EmptyStep {
                line: 1,
                position: 2
            }
        ),
        "{e:?}"
    );
    let e = parse_err("A -> B,\n");
    assert!(
        matches!(
            e,
            PlanError::EmptyStep {
                line: 1,
                position: 2
            }
        ),
        "{e:?}"
    );

    let e = parse_err("A -> B\nA -> B");
    assert_eq!(
        e.to_string(),
        "line 2: the edge A -> B was already given on line 1, and the line adds no new edge"
    );
    let e = parse_err("A -> B -> C\nX\nB -> C");
    assert!(
        matches!(&e, PlanError::DuplicateEdge { line: 3, from, to, first_line: 1 } if from == "B" && to == "C"),
        "{e:?}"
    );
    let e = parse_err("A -> B\nB");
    assert_eq!(
        e.to_string(),
        "line 2: step 'B' is already in the plan (line 1)"
    );

    let e = parse_err("A -> B\nB -> C\nC -> A");
    assert!(
        matches!(&e, PlanError::Cycle { line: 3, cycle } if cycle == &["C", "A", "B", "C"]),
        "{e:?}"
    );
    assert_eq!(
        e.to_string(),
        "line 3: C -> A -> B -> C is a cycle; a plan must not loop"
    );
    let e = parse_err("A -> A");
    assert_eq!(
        e.to_string(),
        "line 1: A -> A is a cycle; a plan must not loop"
    );

    let e = parse_err("A, A -> B");
    assert_eq!(e.to_string(), "line 1: 'A' is listed twice in position 1");
    let e = parse_err("A -> ORDER COFFEE");
    assert_eq!(e.line(), Some(1));
    assert!(matches!(e, PlanError::InvalidId { .. }), "{e:?}");
    let e = parse_err("user -> A");
    assert!(matches!(e, PlanError::ReservedId { line: 1, .. }), "{e:?}");
    assert!(matches!(parse_err("\n  \n"), PlanError::Empty));

    let w = worker();
    let e = Plan::from_text("A -> B\n\nB -> C", [step("A", &w), step("B", &w)]).unwrap_err();
    assert_eq!(e.to_string(), "line 3: unknown step 'C' (known: A, B)");
    assert_eq!(e.line(), Some(3));
}

// ------------------------------------------------------- text plans run

#[tokio::test]
async fn a_text_plan_runs_as_a_workflow_and_steps_get_their_predecessors_as_attachments() {
    let (agent, seen) = recorder();
    let steps = [
        PlanStep::shared("SUGGEST", agent.clone(), "suggest a drink"),
        PlanStep::shared("ORDER_STARBUCKS", agent.clone(), "order the drink"),
        PlanStep::shared("ORDER_MCDONALDS", agent.clone(), "order lunch"),
    ];
    let plan = Plan::from_text("SUGGEST -> ORDER_STARBUCKS\nORDER_MCDONALDS", steps).unwrap();
    assert_eq!(
        plan.order(),
        ["SUGGEST", "ORDER_MCDONALDS", "ORDER_STARBUCKS"]
    );
    let wf = plan.compile().unwrap();
    let r = guard(wf.run_task("coffee and lunch", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(r.status, RunStatus::Completed);
    assert_eq!(r.turns, 3);
    // The task, the attachment of its predecessor, its request.
    assert_eq!(
        seen_by(&seen, "order the drink"),
        [
            "coffee and lunch",
            "<attachment id=\"SUGGEST\" description=\"suggest a drink\">\nresult of suggest a drink\n</attachment>",
            "order the drink"
        ]
    );
    assert_eq!(
        seen_by(&seen, "order lunch"),
        ["coffee and lunch", "order lunch"]
    );
}

/// A -> B -> C, recording what C sees under `passing` and `scope`.
async fn chain_seen_by_c(passing: ResultPassing, scope: ResultScope) -> Vec<String> {
    let (agent, seen) = recorder();
    let plan = Plan::from_text(
        "A -> B -> C",
        [step("A", &agent), step("B", &agent), step("C", &agent)],
    )
    .unwrap();
    let wf = plan
        .compile_with(&CompileOptions::new().passing(passing).scope(scope))
        .unwrap();
    guard(wf.run_task("task", &RunContext::new()))
        .await
        .unwrap();
    let c = seen.lock().unwrap().last().cloned().unwrap();
    c.1
}

#[tokio::test]
async fn each_passing_mode_shapes_what_a_step_sees() {
    assert_eq!(
        chain_seen_by_c(ResultPassing::Nothing, ResultScope::Predecessors).await,
        ["task", "c"]
    );
    assert_eq!(
        chain_seen_by_c(ResultPassing::Messages, ResultScope::Predecessors).await,
        ["task", "result of b", "c"]
    );
    let attached = chain_seen_by_c(ResultPassing::Attachments, ResultScope::Predecessors).await;
    assert_eq!(attached.len(), 3);
    assert!(
        attached[1].starts_with("<attachment id=\"B\""),
        "{attached:?}"
    );
    assert!(!attached[1].contains("id=\"A\""), "{attached:?}");
    // Pattern 2: every earlier result, in the order the steps ran.
    assert_eq!(
        chain_seen_by_c(ResultPassing::Messages, ResultScope::AllEarlier).await,
        ["task", "result of a", "result of b", "c"]
    );
    let custom = ResultPassing::custom(|input| {
        let ids: Vec<&str> = input.results.iter().map(|r| r.id.as_str()).collect();
        vec![Message::user(format!(
            "{} after {} with {} task message(s)",
            input.request,
            ids.join("+"),
            input.task.len()
        ))]
    });
    assert_eq!(
        chain_seen_by_c(custom, ResultScope::AllEarlier).await,
        ["c after A+B with 1 task message(s)"]
    );
}

// --------------------------------------------------------- action groups

fn seed_groups(agent: &Arc<dyn Agent>) -> ActionGroups {
    ActionGroups::new()
        .step(step("A1", agent))
        .group([step("B1", agent), step("B2", agent)])
        .step(step("C1", agent))
}

#[tokio::test]
async fn c1_sees_a1s_result_and_the_merged_results_of_b1_and_b2() {
    for scheduler in [Scheduler::Supersteps, Scheduler::Dataflow] {
        let agent = worker();
        let plan = seed_groups(&agent).build().unwrap();
        assert_eq!(plan.predecessors("C1"), ["B1+B2"]);
        let received: Arc<Mutex<Vec<StepResult>>> = Arc::default();
        let log = received.clone();
        let options = CompileOptions::new().scheduler(scheduler).step_passing(
            "C1",
            ResultPassing::custom(move |input| {
                *log.lock().unwrap() = input.results.clone();
                input.request_message().into_iter().collect()
            }),
        );
        let wf = plan.compile_with(&options).unwrap();
        let r = guard(wf.run_task("go", &RunContext::new())).await.unwrap();
        assert_eq!(r.final_text(), "result of c1");
        // [A1's result, [B1's, B2's]], as in the seed.
        let results = received.lock().unwrap().clone();
        assert_eq!(
            results,
            [
                StepResult::text("A1", "a1", "result of a1"),
                StepResult {
                    id: "B1+B2".into(),
                    description: "the results of B1, B2".into(),
                    content: ResultContent::Merged(vec![
                        StepResult::text("B1", "b1", "result of b1"),
                        StepResult::text("B2", "b2", "result of b2"),
                    ]),
                },
            ],
            "{scheduler:?}"
        );
    }
}

#[tokio::test]
async fn c1_gets_the_merged_group_as_nested_attachments() {
    let (agent, seen) = recorder();
    let wf = seed_groups(&agent).build().unwrap().compile().unwrap();
    guard(wf.run_task("go", &RunContext::new())).await.unwrap();
    let c1 = seen_by(&seen, "c1");
    assert_eq!(c1.len(), 3, "{c1:?}");
    let attachments = &c1[1];
    assert!(attachments.starts_with("<attachment id=\"A1\" description=\"a1\">\nresult of a1\n</attachment>\n<attachment id=\"B1+B2\" description=\"the results of B1, B2\">\n<attachment id=\"B1\""), "{attachments}");
    assert!(attachments.contains("result of b2"));
}

#[tokio::test]
async fn parallel_branches_run_together_isolated_from_each_other() {
    let (agent, seen) = recorder();
    let wf = seed_groups(&agent).build().unwrap().compile().unwrap();
    let (ctx, mut events) = RunContext::stream();
    guard(wf.run_task("go", &ctx)).await.unwrap();
    let supersteps: Vec<Vec<String>> = events
        .drain_ready()
        .into_iter()
        .filter_map(|e| match e.event {
            Event::SuperstepStarted { nodes, .. } => Some(nodes),
            _ => None,
        })
        .collect();
    assert_eq!(
        supersteps,
        [
            vec!["A1".to_string()],
            vec!["B1".into(), "B2".into()],
            vec!["B1+B2".into()],
            vec!["C1".into()]
        ]
    );
    // Inheriting (the default): a branch sees the earlier results, never
    // its sibling's.
    let b2 = seen_by(&seen, "b2");
    assert!(
        b2[1].contains("id=\"A1\"") && !b2[1].contains("B1"),
        "{b2:?}"
    );

    // Fresh: a branch sees only the task and its request.
    let (agent, seen) = recorder();
    let wf = seed_groups(&agent)
        .isolation(Isolation::Fresh)
        .build()
        .unwrap()
        .compile()
        .unwrap();
    guard(wf.run_task("go", &RunContext::new())).await.unwrap();
    assert_eq!(seen_by(&seen, "b1"), ["go", "b1"]);
}

#[tokio::test]
async fn a_summarizer_can_be_a_function_or_an_agent() {
    let agent = worker();
    let joined = Summarizer::func(|results| {
        results
            .iter()
            .map(|r| r.content_text())
            .collect::<Vec<_>>()
            .join(" & ")
    });
    let wf = seed_groups(&agent)
        .summarizer(joined)
        .build()
        .unwrap()
        .compile_with(&CompileOptions::new().passing(ResultPassing::Messages))
        .unwrap();
    let r = guard(wf.run_task("go", &RunContext::new())).await.unwrap();
    let merged = r.messages.iter().find(|m| &*m.source == "B1+B2").unwrap();
    assert_eq!(merged.text_content(), "result of b1 & result of b2");

    let (judge, seen) = recorder();
    let plan = ActionGroups::new()
        .group_with(
            [step("X", &agent), step("Y", &agent)],
            Summarizer::Agent(judge),
        )
        .build()
        .unwrap();
    let r = guard(plan.compile().unwrap().run_task("go", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(
        r.final_text(),
        "result of Combine the results of X, Y into one answer."
    );
    let judged = seen_by(&seen, "Combine the results of X, Y into one answer.");
    assert!(judged[1].contains("id=\"X\"") && judged[1].contains("id=\"Y\""));
}

#[test]
fn group_errors_are_clear() {
    let agent = worker();
    let e = ActionGroups::new()
        .step(step("A", &agent))
        .group([])
        .build()
        .unwrap_err();
    assert_eq!(e.to_string(), "action group 2 is empty");
    let e = Plan::from_groups([vec![step("A", &agent)], vec![step("A", &agent)]]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "two steps are named 'A': step ids must be unique"
    );
}

// ------------------------------------------------------------ stop flags

fn flagging(flag: &'static str) -> Arc<dyn Agent> {
    Arc::new(FnAgent::sync("flagging", move |t: &Thread| {
        let request = last_text(t);
        match (request.as_str(), flag) {
            ("b", "stop") => Ok(Reply::from(vec![
                Message::text("", "result of b"),
                StopFlag::stop_message("nothing left to do"),
            ])),
            ("b", _) => Err(StopFlag::abort_error("the shop is closed")),
            _ => Ok(Reply::text(format!("result of {request}"))),
        }
    }))
}

#[tokio::test]
async fn a_stop_flag_ends_the_plan_early_and_successfully() {
    for scheduler in [Scheduler::Supersteps, Scheduler::Dataflow] {
        let agent = flagging("stop");
        let plan = Plan::from_text(
            "A -> B -> C",
            [step("A", &agent), step("B", &agent), step("C", &agent)],
        )
        .unwrap();
        let wf = plan
            .compile_with(&CompileOptions::new().scheduler(scheduler))
            .unwrap();
        let r = guard(wf.run_task("go", &RunContext::new())).await.unwrap();
        assert!(matches!(r.status, RunStatus::Stopped(_)), "{:?}", r.status);
        assert!(!r.messages.iter().any(|m| &*m.source == "C"), "C never ran");
        assert_eq!(
            StopFlag::of_result(&r),
            Some(StopFlag::Stop {
                step: "B".into(),
                reason: "nothing left to do".into()
            })
        );
    }
}

#[tokio::test]
async fn an_abort_flag_fails_the_plan_with_its_reason() {
    let agent = flagging("abort");
    let plan = Plan::from_text(
        "A -> B -> C",
        [step("A", &agent), step("B", &agent), step("C", &agent)],
    )
    .unwrap();
    let e = guard(plan.compile().unwrap().run_task("go", &RunContext::new()))
        .await
        .unwrap_err();
    assert_eq!(
        StopFlag::of_error(&e),
        Some(StopFlag::Abort {
            step: "B".into(),
            reason: "the shop is closed".into()
        })
    );
    // The thread up to the failure is kept.
    assert!(
        e.thread()
            .unwrap()
            .messages()
            .iter()
            .any(|m| &*m.source == "A")
    );
}

// --------------------------------------------------------------- nesting

#[tokio::test]
async fn a_plan_nests_in_another_workflow_and_takes_its_input_from_any_sender() {
    let agent = worker();
    let plan = Plan::from_text("A -> B", [step("A", &agent), step("B", &agent)]).unwrap();
    let inner = plan
        .compile_with(&CompileOptions::new().name("errands"))
        .unwrap();
    let (recorder, seen) = recorder();
    let brief = FnAgent::sync("brief", |_: &Thread| Ok("the brief"));
    let recorded = PlanStep::shared("R", recorder, "r");
    let tail = Plan::from_text("R", [recorded])
        .unwrap()
        .compile_with(&CompileOptions::new().name("tail"))
        .unwrap();
    let outer = Sequential::builder()
        .participant(brief)
        .participant(inner)
        .participant(tail)
        .build()
        .unwrap();
    let (ctx, mut events) = RunContext::stream();
    let r = guard(outer.run_task("go", &ctx)).await.unwrap();
    assert_eq!(r.final_text(), "result of r");
    // The inner plan's steps ran under its path, after the brief.
    let paths: Vec<String> = events
        .drain_ready()
        .into_iter()
        .filter_map(|e| match e.event {
            Event::AgentStarted { path, .. } => Some(path.to_string()),
            _ => None,
        })
        .collect();
    assert!(
        paths.contains(&"sequential/errands/A".to_string()),
        "{paths:?}"
    );
    // The last plan saw the whole conversation as its task.
    let tail_seen = seen_by(&seen, "r");
    assert_eq!(tail_seen, ["go", "the brief", "result of b", "r"]);
}

// ------------------------------------------------------ planning agent

const FOUR_STEPS: &str = "Here is the plan.
STEPS:
FIND: find a recipe
BUY_MILK: buy milk
BUY_BEANS: buy coffee beans
BREW: brew the coffee
GRAPH:
FIND -> BUY_MILK, BUY_BEANS -> BREW";

#[tokio::test]
async fn a_planning_agent_decomposes_a_task_into_four_steps_two_in_parallel() {
    let model = Arc::new(ScriptedModel::new([ScriptedReply::text(FOUR_STEPS)]));
    let (agent, seen) = recorder();
    let planner = PlanningAgent::builder("planner")
        .model_arc(model.clone())
        .agent_arc(agent)
        .build()
        .unwrap();
    let (ctx, mut events) = RunContext::stream();
    let thread = Arc::new(Thread::from_messages([Message::user("make me a coffee")]));
    let reply = guard(planner.run(thread, ctx.child("planner")))
        .await
        .unwrap();

    let texts: Vec<String> = reply
        .messages()
        .iter()
        .map(|m| m.text_content().into_owned())
        .collect();
    // The plan first, as the model wrote it (re-rendered), then each result.
    assert_eq!(
        texts[0],
        "STEPS:\nFIND: find a recipe\nBUY_MILK: buy milk\nBUY_BEANS: buy coffee beans\nBREW: brew the coffee\nGRAPH:\nFIND -> BUY_MILK, BUY_BEANS -> BREW"
    );
    assert_eq!(
        texts[1..],
        [
            "result of find a recipe",
            "result of buy milk",
            "result of buy coffee beans",
            "result of brew the coffee"
        ]
    );
    let steps: Vec<&str> = reply.messages()[1..]
        .iter()
        .map(|m| m.metadata[STEP_KEY].as_str())
        .collect();
    assert_eq!(steps, ["FIND", "BUY_MILK", "BUY_BEANS", "BREW"]);
    assert!(reply.messages().last().unwrap().usage.is_some());

    // The plan is an event, reported before any step started.
    let events = events.drain_ready();
    let plan_at = events
        .iter()
        .position(|e| matches!(&e.event, Event::Plan { plan, .. } if plan == &texts[0]))
        .expect("a Plan event");
    let first_step = events
        .iter()
        .position(|e| matches!(&e.event, Event::AgentStarted { .. }))
        .expect("steps ran");
    assert!(plan_at < first_step);

    // The two purchases ran in the same superstep, under the planner's path.
    let supersteps: Vec<(String, Vec<String>)> = events
        .into_iter()
        .filter_map(|e| match e.event {
            Event::SuperstepStarted { path, nodes, .. } => Some((path.to_string(), nodes)),
            _ => None,
        })
        .collect();
    assert_eq!(supersteps.len(), 3);
    assert_eq!(supersteps[1].0, "planner/plan");
    assert_eq!(supersteps[1].1, ["BUY_MILK", "BUY_BEANS"]);
    // Brewing saw both purchases.
    let brew = seen_by(&seen, "brew the coffee");
    assert!(brew[1].contains("id=\"BUY_MILK\"") && brew[1].contains("id=\"BUY_BEANS\""));
    assert_eq!(model.requests().len(), 1);
}

#[tokio::test]
async fn an_unparseable_plan_is_retried_with_the_parse_error_as_feedback() {
    let model = Arc::new(ScriptedModel::new([
        ScriptedReply::text("I would first find a recipe, then buy things."),
        ScriptedReply::text(FOUR_STEPS.replace("FIND -> BUY_MILK", "FIND -> BUY_MILK -> FIND")),
        ScriptedReply::text(FOUR_STEPS),
    ]));
    let planner = PlanningAgent::builder("planner")
        .model_arc(model.clone())
        .agent_arc(worker())
        .build()
        .unwrap();
    let planned = planner
        .plan(&Thread::from_messages([Message::user("make me a coffee")]))
        .await
        .unwrap();
    assert_eq!(planned.attempts, 3);
    assert_eq!(planned.plan.ids().count(), 4);

    let requests = model.requests();
    assert_eq!(requests.len(), 3);
    let feedback = |i: usize| requests[i].messages.last().unwrap().text().to_string();
    assert_eq!(
        feedback(1),
        "Your plan cannot be used: the answer has no STEPS section: a line reading `STEPS:` must start it.\nWrite the whole plan again, in the same format."
    );
    // The model's own answer is shown before the feedback.
    assert_eq!(
        requests[1].messages[requests[1].messages.len() - 2].text(),
        "I would first find a recipe, then buy things."
    );
    assert!(
        feedback(2).contains("in the graph, line 1: BUY_MILK -> FIND -> BUY_MILK is a cycle"),
        "{}",
        feedback(2)
    );

    // Out of attempts: the turn fails, naming the last problem.
    let model = ScriptedModel::new([ScriptedReply::text("no"), ScriptedReply::text("still no")]);
    let planner = PlanningAgent::builder("planner")
        .model(model)
        .agent_arc(worker())
        .max_attempts(2)
        .build()
        .unwrap();
    let thread = Arc::new(Thread::from_messages([Message::user("coffee")]));
    let e = planner.run(thread, RunContext::new()).await.unwrap_err();
    assert!(
        e.to_string()
            .starts_with("planner: no usable plan after 2 attempt(s); the last problem: the answer has no STEPS section"),
        "{e}"
    );
}

#[tokio::test]
async fn a_json_plan_is_asked_with_a_schema_and_can_choose_agents() {
    let answer = serde_json::json!({
        "steps": [
            {"id": "SUGGEST", "request": "suggest a drink", "agent": "barista"},
            {"id": "ORDER", "request": "order it", "agent": "orderer"}
        ],
        "graph": ["SUGGEST -> ORDER"]
    });
    let model = Arc::new(ScriptedModel::new([
        ScriptedReply::text("{\"steps\": []}"),
        ScriptedReply::structured(answer),
    ]));
    let barista =
        FnAgent::sync("barista", |_: &Thread| Ok("a latte")).with_description("suggests drinks");
    let orderer = FnAgent::sync("orderer", |t: &Thread| {
        Ok(format!("ordered after {} messages", t.len()))
    });
    let planner = PlanningAgent::builder("planner")
        .model_arc(model.clone())
        .agent(barista)
        .agent(orderer)
        .format(PlanFormat::Json)
        .build()
        .unwrap();
    assert!(
        planner
            .system_prompt()
            .contains("- barista: suggests drinks")
    );
    let thread = Arc::new(Thread::from_messages([Message::user("coffee")]));
    let reply = guard(planner.run(thread, RunContext::new())).await.unwrap();
    let texts: Vec<String> = reply
        .messages()
        .iter()
        .map(|m| m.text_content().into_owned())
        .collect();
    assert_eq!(texts[1..], ["a latte", "ordered after 3 messages"]);
    assert!(texts[0].contains("SUGGEST [barista]: suggest a drink"));
    let requests = model.requests();
    assert!(requests[0].response_format.is_some());
    let feedback = requests[1].messages.last().unwrap().text();
    assert!(
        feedback.starts_with(
            "Your plan cannot be used: the answer is not a plan in the JSON format asked for"
        ),
        "{feedback}"
    );
}

#[test]
fn a_spec_names_unknown_agents_and_forgotten_steps() {
    let spec = PlanSpec::parse_text("STEPS:\nA [chef]: cook\nB: eat\nGRAPH:\nA").unwrap();
    let e = spec.to_plan(&[worker()]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "step 'B' is not in the graph: every step must appear in it"
    );
    let spec = PlanSpec::parse_text("STEPS:\n1. A [chef]: cook\n- B: eat\nGRAPH:\n").unwrap();
    assert_eq!(spec.graph_text(), "A -> B", "no graph: the steps in order");
    let e = spec.to_plan(&[worker()]).unwrap_err();
    assert_eq!(
        e.to_string(),
        "step 'A' names agent 'chef', which is not available (agents: worker)"
    );
    // Markdown headers, and a graph line on the header's own line.
    let spec = PlanSpec::parse_text("**Steps:**\nA: cook\nB: eat\nGraph: A -> B").unwrap();
    assert_eq!(spec.graph, ["A -> B"]);
    let e = PlanSpec::parse_text("STEPS:\nA cook\n").unwrap_err();
    assert_eq!(
        e.to_string(),
        "line 2 of the answer, `A cook`, is not a step: write `ID: request` (the ID without spaces)"
    );
}

// ------------------------------------------------------- property test

/// A random DAG over `n` steps: edges only go from lower to higher index.
fn dags() -> impl Strategy<Value = (usize, Vec<(usize, usize)>)> {
    (1usize..8).prop_flat_map(|n| {
        let pairs: Vec<(usize, usize)> = (0..n)
            .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
            .collect();
        let k = pairs.len();
        (Just(n), proptest::sample::subsequence(pairs, 0..=k))
    })
}

/// The DAG as a text plan: a line `p1, p2 -> b` per step with predecessors
/// (alternatives expand to one edge each), a line per isolated step, in a
/// shuffled order.
fn plan_text(n: usize, edges: &[(usize, usize)], order: &[usize]) -> String {
    let id = |i: usize| format!("S{i}");
    let mut lines = Vec::new();
    for b in 0..n {
        let preds: Vec<String> = edges.iter().filter(|e| e.1 == b).map(|e| id(e.0)).collect();
        if !preds.is_empty() {
            lines.push(format!("{} -> {}", preds.join(", "), id(b)));
        } else if !edges.iter().any(|e| e.0 == b) {
            lines.push(id(b));
        }
    }
    // `order` is a permutation of 0..8 and there are at most 7 lines, so
    // every line is taken once.
    let shuffled: Vec<String> = order
        .iter()
        .filter_map(|&i| lines.get(i).cloned())
        .collect();
    shuffled.join("\n")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn any_acyclic_text_plan_runs_in_an_order_that_respects_every_edge(
        (n, edges) in dags(),
        order in Just((0..8).collect::<Vec<usize>>()).prop_shuffle(),
    ) {
        let text = plan_text(n, &edges, &order);
        let log: Arc<Mutex<Vec<(String, bool)>>> = Arc::default();
        let l = log.clone();
        let agent: Arc<dyn Agent> = Arc::new(FnAgent::new("logger", move |t: Arc<Thread>, _| {
            let l = l.clone();
            async move {
                let id = last_text(&t);
                l.lock().unwrap().push((id.clone(), true));
                tokio::task::yield_now().await;
                l.lock().unwrap().push((id.clone(), false));
                Ok::<_, AgentError>(id)
            }
        }));
        let steps = (0..n).map(|i| PlanStep::shared(format!("S{i}"), agent.clone(), format!("S{i}")));
        let plan = Plan::from_text(&text, steps).unwrap();
        let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
        for scheduler in [Scheduler::Supersteps, Scheduler::Dataflow] {
            log.lock().unwrap().clear();
            let wf = plan.compile_with(&CompileOptions::new().scheduler(scheduler)).unwrap();
            let r = rt.block_on(guard(wf.run_task("go", &RunContext::new()))).unwrap();
            prop_assert_eq!(&r.status, &RunStatus::Completed);
            let log = log.lock().unwrap().clone();
            let at = |id: &str, start: bool| log.iter().position(|(i, s)| i == id && *s == start);
            for i in 0..n {
                let id = format!("S{i}");
                prop_assert_eq!(log.iter().filter(|(x, s)| *x == id && *s).count(), 1, "{} runs once", id);
                prop_assert!(at(&id, false).is_some(), "{} finishes", id);
            }
            for &(a, b) in &edges {
                let (a, b) = (format!("S{a}"), format!("S{b}"));
                prop_assert!(
                    at(&a, false) < at(&b, true),
                    "{:?}: {} ends before {} starts:\n{}\n{:?}", scheduler, a, b, text, log
                );
            }
        }
    }
}

#[test]
fn stop_messages_are_stop_content() {
    assert!(matches!(
        StopFlag::stop_message("x").content,
        Content::Stop(ref r) if r == "x"
    ));
}
