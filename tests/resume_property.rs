//! Property: for random YAML teams — every preset kind, graph and steps
//! workflows, nested — running to checkpoint k and resuming with a config
//! built afresh (as another process would) ends exactly as the
//! uninterrupted run: the same final thread, final response, template
//! values and stats (every model call counted once, none made twice), with
//! no message id twice. A planner's plan is written once per run: a
//! resumed run never asks the planner again.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::fmt::Write as _;
use std::path::Path;

mod common;

use proptest::prelude::*;
use troupe::config::{BuildOptions, Config};
use troupe::{RunContext, RunResult, Thread};

/// A tiny deterministic generator (the case's seed decides everything).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

#[derive(Debug, Clone, Copy)]
enum Kind {
    RoundRobin,
    Selector,
    Swarm,
    Sequential,
    MapReduce,
    Graph,
    Steps,
    Nested,
    Parallel,
    TwoDeep,
    Planner,
    /// `examples/configs/reasoner.yaml` as it is (the seed is unused).
    Reasoner,
}

/// An agent `name` replying `replies` texts `name-0`, `name-1`, …
fn agent(out: &mut String, name: &str, replies: u64, instructions: &str) {
    let script: Vec<String> = (0..replies)
        .map(|j| format!("\"{name} says {j}\""))
        .collect();
    writeln!(
        out,
        "  {name}:\n    model: m\n    instructions: \"{instructions}\"\n    script: [{}]",
        script.join(", ")
    )
    .unwrap();
}

/// Where the runs checkpoint.
enum Backend<'a> {
    /// A SQLite file.
    Sqlite(&'a Path),
    /// A PostgreSQL database (shared by the tests: run ids keep them apart).
    Postgres(&'a str),
}

fn config(kind: Kind, seed: u64, store: &Backend<'_>) -> String {
    if matches!(kind, Kind::Reasoner) {
        let example = concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/examples/configs/reasoner.yaml"
        );
        let mut y = std::fs::read_to_string(example).unwrap();
        match store {
            Backend::Sqlite(path) => {
                writeln!(
                    y,
                    "checkpoint:\n  store: sqlite\n  path: {}",
                    path.display()
                )
            }
            Backend::Postgres(url) => {
                writeln!(y, "checkpoint:\n  store: postgres\n  url: \"{url}\"")
            }
        }
        .unwrap();
        return y;
    }
    let mut rng = Rng(seed | 1);
    let n = 2 + rng.below(3); // 2..=4 agents
    let turns = 3 + rng.below(4); // 3..=6 turns
    let names: Vec<String> = (0..n).map(|i| format!("a{i}")).collect();
    let mut y = String::new();
    writeln!(
        y,
        "version: 1\nname: prop\nmodels:\n  m:\n    provider: scripted"
    )
    .unwrap();
    if matches!(kind, Kind::Planner) {
        // A chain of the agents, the last two side by side when there are
        // more than two.
        let steps: Vec<String> = names
            .iter()
            .enumerate()
            .map(|(i, a)| format!("S{i} [{a}]: step {i}"))
            .collect();
        let ids: Vec<String> = (0..n).map(|i| format!("S{i}")).collect();
        let graph = if n > 2 {
            let (last, head) = ids.split_last().unwrap();
            let (before, head) = head.split_last().unwrap();
            let mut chain: Vec<String> = head.to_vec();
            chain.push(format!("{before}, {last}"));
            chain.join(" -> ")
        } else {
            ids.join(" -> ")
        };
        writeln!(
            y,
            "  planning:\n    provider: scripted\n    replies: [\"STEPS:\\n{}\\nGRAPH:\\n{graph}\"]",
            steps.join("\\n")
        )
        .unwrap();
    }
    if matches!(kind, Kind::Selector) {
        let picks: Vec<String> = (0..turns)
            .map(|_| names[rng.below(n) as usize].clone())
            .collect();
        writeln!(
            y,
            "  picker:\n    provider: scripted\n    replies: [{}]",
            picks.join(", ")
        )
        .unwrap();
    }
    writeln!(y, "agents:").unwrap();
    match kind {
        Kind::Swarm => {
            for (i, a) in names.iter().enumerate() {
                let next = names.get(i + 1);
                match next {
                    Some(next) => writeln!(
                        y,
                        "  {a}:\n    model: m\n    handoffs: [{next}]\n    script:\n      - handoff: {{to: {next}, reason: \"over to {next}\"}}"
                    )
                    .unwrap(),
                    None => agent(&mut y, a, turns, "finish"),
                }
            }
        }
        Kind::MapReduce => {
            let k = 1 + rng.below(3);
            let items: Vec<String> = (0..k).map(|i| format!("\\\"part {i}\\\"")).collect();
            writeln!(
                y,
                "  mapper:\n    model: m\n    script: [\"[{}]\"]",
                items.join(", ")
            )
            .unwrap();
            agent(&mut y, "worker", 1, "work");
            agent(&mut y, "reducer", 1, "reduce");
        }
        Kind::Steps
        | Kind::Nested
        | Kind::Graph
        | Kind::Sequential
        | Kind::Parallel
        | Kind::TwoDeep => {
            for (i, a) in names.iter().enumerate() {
                let instr = if i > 0 && !matches!(kind, Kind::Sequential) {
                    format!("Go on from: {{{{ $steps.{}.output }}}}", names[i - 1])
                } else {
                    "start".to_string()
                };
                agent(&mut y, a, 3, &instr);
            }
        }
        Kind::RoundRobin | Kind::Selector => {
            for a in &names {
                agent(&mut y, a, turns, "talk");
            }
        }
        Kind::Planner => {
            for a in &names {
                agent(&mut y, a, 1, "do your step");
            }
        }
        Kind::Reasoner => unreachable!("read from its example"),
    }
    if matches!(kind, Kind::TwoDeep) {
        // A team inside a graph inside the main steps.
        writeln!(
            y,
            "workflows:\n  team:\n    round_robin:\n      participants: [{}]\n    max_turns: {turns}\n  middle:\n    graph:\n      nodes: [team, {}]\n      transitions:\n        - {{from: team, to: {}}}",
            names.join(", "),
            names[0],
            names[0]
        )
        .unwrap();
    }
    if matches!(kind, Kind::Nested) {
        writeln!(
            y,
            "workflows:\n  inner:\n    round_robin:\n      participants: [{}]\n    max_turns: {turns}",
            names.join(", ")
        )
        .unwrap();
    }
    match store {
        Backend::Sqlite(path) => writeln!(
            y,
            "checkpoint:\n  store: sqlite\n  path: {}",
            path.display()
        ),
        Backend::Postgres(url) => writeln!(y, "checkpoint:\n  store: postgres\n  url: \"{url}\""),
    }
    .unwrap();
    writeln!(y, "workflow:").unwrap();
    match kind {
        Kind::RoundRobin => writeln!(
            y,
            "  round_robin:\n    participants: [{}]\n  max_turns: {turns}",
            names.join(", ")
        )
        .unwrap(),
        Kind::Selector => writeln!(
            y,
            "  selector:\n    participants: [{}]\n    model: picker\n    allow_repeated_speaker: true\n  max_turns: {turns}",
            names.join(", ")
        )
        .unwrap(),
        Kind::Swarm => writeln!(
            y,
            "  swarm:\n    participants: [{}]\n  max_turns: {}",
            names.join(", "),
            n + 1
        )
        .unwrap(),
        Kind::Sequential => writeln!(
            y,
            "  sequential:\n    participants: [{}]",
            names.join(", ")
        )
        .unwrap(),
        Kind::MapReduce => writeln!(
            y,
            "  map_reduce:\n    mapper: mapper\n    worker: worker\n    reducer: reducer"
        )
        .unwrap(),
        Kind::Graph => {
            // A chain with a loop back from the last to the first, taken
            // while the last has not said its second reply.
            let last = &names[names.len() - 1];
            writeln!(y, "  graph:\n    nodes: [{}]\n    transitions:", names.join(", ")).unwrap();
            for w in names.windows(2) {
                writeln!(y, "      - {{from: {}, to: {}}}", w[0], w[1]).unwrap();
            }
            writeln!(
                y,
                "      - {{from: {last}, to: {}, when: {{contains: \"says 0\"}}, loop: true, max_iterations: 2}}",
                names[0]
            )
            .unwrap();
        }
        Kind::Steps => {
            writeln!(y, "  steps:").unwrap();
            for a in &names {
                writeln!(y, "    - agent: {a}").unwrap();
            }
        }
        Kind::Parallel => {
            // A block of all but the last agent at once, then the last
            // reads what the block produced.
            let (last, block) = names.split_last().unwrap();
            writeln!(y, "  steps:\n    - id: block\n      steps:").unwrap();
            for a in block {
                writeln!(y, "        - agent: {a}").unwrap();
            }
            writeln!(y, "    - agent: {last}").unwrap();
        }
        Kind::TwoDeep => {
            writeln!(y, "  steps:\n    - workflow: middle").unwrap();
            for a in &names {
                writeln!(y, "    - agent: {a}\n      id: after_{a}").unwrap();
            }
        }
        Kind::Planner => writeln!(
            y,
            "  plan:\n    planner:\n      model: planning\n      agents: [{}]",
            names.join(", ")
        )
        .unwrap(),
        Kind::Nested => {
            writeln!(y, "  steps:\n    - workflow: inner").unwrap();
            for a in &names {
                writeln!(y, "    - agent: {a}\n      id: after_{a}").unwrap();
            }
        }
        Kind::Reasoner => unreachable!("read from its example"),
    }
    y
}

async fn build(yaml: &str, dir: &Path) -> troupe::config::Built {
    let config =
        Config::parse(yaml, dir.join("prop.yaml")).unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    let options = BuildOptions {
        offline: true,
        ..BuildOptions::default()
    };
    config
        .build(&options)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{yaml}"))
}

/// What must match: each message's source and text, in order, in the
/// thread and in every child thread (each participant's view, nested
/// runs' threads), by path.
fn transcript(thread: &Thread) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    walk(thread, "", &mut out);
    out
}

fn walk(thread: &Thread, path: &str, out: &mut Vec<(String, String, String)>) {
    for m in thread.messages() {
        out.push((
            path.to_string(),
            m.source.to_string(),
            m.text_content().into_owned(),
        ));
    }
    for (name, child) in thread.children() {
        walk(child, &format!("{path}/{name}"), out);
    }
}

/// No message id appears twice in the thread's own messages.
fn no_id_twice(thread: &Thread) {
    let mut seen = std::collections::HashSet::new();
    for m in thread.messages() {
        assert!(seen.insert(m.id), "message {} appears twice", m.id);
    }
}

/// What a run's end is compared by: its status, final response, turns,
/// template values and what it spent, agent by agent.
fn outcome(
    r: &RunResult,
) -> (
    String,
    String,
    u64,
    Vec<(String, String)>,
    troupe::stats::RunStats,
) {
    let state = r.state();
    (
        r.status.to_string(),
        r.final_text(),
        r.turns,
        state.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        r.stats.clone(),
    )
}

/// The model calls the planner made, as a run's stats count them.
fn planner_calls(r: &RunResult) -> u64 {
    calls_of(r, "planner")
}

/// The model calls agent `name` made at its own path (not its copies').
fn calls_of(r: &RunResult, name: &str) -> u64 {
    r.stats
        .agents
        .iter()
        .filter(|(path, _)| path.ends_with(&format!("/{name}")) || path.as_str() == name)
        .map(|(_, s)| s.model_calls)
        .sum()
}

async fn check(kind: Kind, seed: u64, postgres: Option<&str>) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("runs.db");
    let store = match postgres {
        Some(url) => Backend::Postgres(url),
        None => Backend::Sqlite(&file),
    };
    // Unique in a database the tests share.
    let whole_id = format!(
        "whole-{kind:?}-{seed:x}-{}-{}",
        std::process::id(),
        dir.path().file_name().unwrap().to_string_lossy()
    );
    let whole_id = whole_id.as_str();
    let yaml = config(kind, seed, &store);
    let first = build(&yaml, dir.path()).await;
    let ctx = RunContext::new().with_run_id(whole_id);
    let whole = first
        .workflow
        .run_task("go", &ctx)
        .await
        .unwrap_or_else(|e| panic!("{e}\n{yaml}"));
    no_id_twice(&whole.thread);
    if matches!(kind, Kind::Planner) {
        assert_eq!(planner_calls(&whole), 1, "{:?}\n{yaml}", whole.stats);
    }
    if matches!(kind, Kind::Reasoner) {
        // Three reasoner turns of the agent itself, nine in all.
        assert_eq!(calls_of(&whole, "thinker"), 3, "{:?}", whole.stats);
        assert_eq!(
            whole.final_text(),
            "Oat milk: oats and water, foams well, a little sugar."
        );
    }
    let checkpoints = first
        .store
        .as_ref()
        .unwrap()
        .checkpoints
        .list(whole_id)
        .await
        .unwrap();
    // A checkpoint per superstep or turn, not one at the end.
    assert!(
        checkpoints.len() >= 2,
        "{kind:?}: {} checkpoints\n{yaml}",
        checkpoints.len()
    );
    if !matches!(kind, Kind::MapReduce | Kind::Swarm) {
        assert!(
            !whole.state().is_empty()
                || !matches!(
                    kind,
                    Kind::Steps | Kind::Nested | Kind::Graph | Kind::Parallel | Kind::TwoDeep
                ),
            "{kind:?}: no template values\n{yaml}"
        );
    }
    first.close().await;
    for (k, cp) in checkpoints.iter().enumerate() {
        // Another process: the config built afresh, nothing shared.
        let again = build(&yaml, dir.path()).await;
        let store = again.store.as_ref().unwrap().checkpoints.clone();
        let ctx = RunContext::new().with_run_id(format!("resumed-{k}-{whole_id}"));
        let resumed = again
            .workflow
            .run_from_checkpoint(store.as_ref(), whole_id, Some(cp.id), &ctx)
            .await
            .unwrap_or_else(|e| panic!("{kind:?} checkpoint {k}: {e}\n{yaml}"));
        assert_eq!(
            transcript(&resumed.thread),
            transcript(&whole.thread),
            "{kind:?} from checkpoint {k} of {}\n{yaml}",
            checkpoints.len()
        );
        assert_eq!(
            outcome(&resumed),
            outcome(&whole),
            "{kind:?} from checkpoint {k}\n{yaml}"
        );
        no_id_twice(&resumed.thread);
        if matches!(kind, Kind::Reasoner) {
            // No reasoner turn asked again: its calls are counted from the
            // checkpoint, and another would make more.
            assert_eq!(calls_of(&resumed, "thinker"), 3, "from checkpoint {k}");
            assert_eq!(
                resumed.stats.total.model_calls, whole.stats.total.model_calls,
                "from checkpoint {k}"
            );
        }
        if matches!(kind, Kind::Planner) {
            // Every checkpoint holds the plan: the planner is not asked
            // again (its one call is counted from the checkpoint; another
            // would make two).
            assert_eq!(
                planner_calls(&resumed),
                1,
                "{kind:?} from checkpoint {k}\n{yaml}"
            );
        }
        again.close().await;
    }
}

/// How many random teams of each kind a run of the tests tries
/// (`TROUPE_PROP_CASES`, default 6).
fn cases() -> u32 {
    std::env::var("TROUPE_PROP_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(6)
}

fn run_case(kind: Kind, seed: u64) {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(check(kind, seed, None));
}

/// How many random teams of each kind the PostgreSQL tests try
/// (`TROUPE_PROP_CASES_PG`, default 2).
fn pg_cases() -> u32 {
    std::env::var("TROUPE_PROP_CASES_PG")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2)
}

/// The same property on the PostgreSQL store (every kind, `pg_cases()`
/// seeds each), on the cluster `.ci/start-postgres.sh` starts.
#[test]
fn every_kind_resumes_from_any_checkpoint_on_postgres() {
    let Some(url) = common::prereq::postgres_url() else {
        return;
    };
    let kinds = [
        Kind::RoundRobin,
        Kind::Selector,
        Kind::Swarm,
        Kind::Sequential,
        Kind::MapReduce,
        Kind::Graph,
        Kind::Steps,
        Kind::Nested,
        Kind::Parallel,
        Kind::TwoDeep,
        Kind::Planner,
        Kind::Reasoner,
    ];
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let mut seed = Rng(0x5eed_cafe);
    for kind in kinds {
        for _ in 0..pg_cases() {
            let s = seed.below(u64::MAX);
            rt.block_on(check(kind, s, Some(&url)));
        }
    }
}

macro_rules! per_kind {
    ($($test:ident => $kind:expr),* $(,)?) => {
        proptest! {
            #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]
            $(
                #[test]
                fn $test(seed in any::<u64>()) {
                    run_case($kind, seed);
                }
            )*
        }
    };
}

/// The reasoner example killed at every checkpoint and resumed in a fresh
/// build: the same transcript, result and spend, no reasoner turn asked
/// twice.
#[test]
fn the_reasoner_example_resumes_from_any_checkpoint_without_asking_again() {
    run_case(Kind::Reasoner, 0);
}

per_kind! {
    a_round_robin_resumes_from_any_checkpoint_as_it_ran => Kind::RoundRobin,
    a_selector_team_resumes_from_any_checkpoint_as_it_ran => Kind::Selector,
    a_swarm_resumes_from_any_checkpoint_as_it_ran => Kind::Swarm,
    a_sequential_team_resumes_from_any_checkpoint_as_it_ran => Kind::Sequential,
    a_map_reduce_resumes_from_any_checkpoint_as_it_ran => Kind::MapReduce,
    a_graph_with_a_loop_resumes_from_any_checkpoint_as_it_ran => Kind::Graph,
    steps_with_templates_resume_from_any_checkpoint_as_they_ran => Kind::Steps,
    a_nested_team_resumes_from_any_checkpoint_as_it_ran => Kind::Nested,
    a_parallel_block_resumes_from_any_checkpoint_as_it_ran => Kind::Parallel,
    a_team_two_levels_down_resumes_from_any_checkpoint_as_it_ran => Kind::TwoDeep,
    a_planners_plan_resumes_from_any_checkpoint_without_asking_again => Kind::Planner,
}
