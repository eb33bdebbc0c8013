//! Turn ceilings through the `troupe` binary: a router whose routes form
//! a cycle, over a scripted model that never stops answering, ends
//! `stopped` at the default ceiling with a reason naming it and how to
//! raise it, after `troupe run` printed the cycle warning; `max_turns`
//! raises (or lowers) it; `max_turns: unbounded` with nothing else to stop
//! the cycle is refused unless the router allows cycles.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]

mod common;
use common::{jsonl, result_line, run, text, write};

/// A router cycle `a → b → a` (a model that always answers) with
/// `extra` appended to the workflow section.
fn cycle(extra: &str) -> String {
    format!(
        "version: 1
models:
  m: {{provider: scripted, replies: [ping], when_exhausted: repeat_last}}
agents:
  a: {{model: m}}
  b: {{model: m}}
workflow:
  router:
    routes:
      - {{from: [user, b], to: a}}
      - {{from: a, to: b}}
    output: [b]
{extra}"
    )
}

/// The number of `agent_started` events (turns begun) of a `--events jsonl` run.
fn turns(out: &std::process::Output) -> usize {
    jsonl(out)
        .iter()
        .filter(|e| e["type"] == "agent_started")
        .count()
}

#[test]
fn a_router_cycle_stops_at_the_default_ceiling_after_its_warning() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "loop.yaml", &cycle(""));
    let out = run(dir.path(), &["run", "--events", "jsonl", "loop.yaml", "go"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    // The warning `validate` gives, printed once, before the first turn.
    let warning = "warning: field `workflow.router`: workflow `workflow`: routes among \"b\", \"a\" form a cycle";
    assert_eq!(err.matches(warning).count(), 1, "{err}");
    let result = result_line(&out);
    assert_eq!(result["status"], "stopped", "{result}");
    let reason = result["detail"].as_str().unwrap_or_default();
    assert!(
        reason.contains("turn_ceiling(100)")
            && reason.contains("turn ceiling of 100")
            && reason.contains("the default for a `router` workflow")
            && reason.contains("`max_turns: N` on `workflow`"),
        "{result}"
    );
    // The ceiling ends the run when its 100th turn ends; a turn already
    // under way beside it (a and b both hear the cascade) still ends.
    let done = result["stats"]["total"]["turns"]
        .as_u64()
        .unwrap_or_default();
    assert!((100..=101).contains(&done), "{done} turns: {result}");
    assert!((100..=101).contains(&turns(&out)));
    // Said before the run starts, where a person watches it.
    let out = run(dir.path(), &["run", "loop.yaml", "go"]);
    let (err, shown) = (text(&out.stderr), text(&out.stdout));
    let said = err.find(warning).expect("the warning");
    let noted = err.find("model `m` scripted").expect("the notes");
    assert!(said < noted, "{err}");
    assert!(
        shown.contains("■ stopped · 10")
            && shown.contains("stopped by turn_ceiling(100): ")
            && shown.contains("raise it with `max_turns: N` on `workflow`"),
        "{shown}"
    );
    // `validate` says the same warning.
    let out = run(dir.path(), &["validate", "loop.yaml"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(text(&out.stderr).contains(warning));
}

#[test]
fn max_turns_sets_the_ceiling_and_unbounded_needs_a_stop_or_an_allowance() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(dir.path(), "seven.yaml", &cycle("  max_turns: 7\n"));
    let out = run(
        dir.path(),
        &["run", "--events", "jsonl", "seven.yaml", "go"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(result_line(&out)["status"], "stopped");
    assert!((7..=8).contains(&turns(&out)), "{}", turns(&out));
    assert!(
        result_line(&out)["detail"]
            .as_str()
            .unwrap_or_default()
            .starts_with("max_turns(7)")
    );

    write(dir.path(), "open.yaml", &cycle("  max_turns: unbounded\n"));
    for args in [&["validate", "open.yaml"][..], &["run", "open.yaml", "go"]] {
        let cmd = args[0];
        let out = run(dir.path(), args);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {err}");
        assert!(
            err.contains("open.yaml:8:3: field `workflow.router`")
                && err.contains("nothing stops the run")
                && err.contains("`allow_cycles: true`"),
            "{cmd}: {err}"
        );
    }

    // A stop condition, or the allowance, lets it through.
    write(
        dir.path(),
        "stopped.yaml",
        &cycle("  max_turns: unbounded\n  stop: max_messages(5)\n"),
    );
    let out = run(
        dir.path(),
        &["run", "--events", "jsonl", "stopped.yaml", "go"],
    );
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    assert_eq!(result_line(&out)["status"], "stopped");
    let allowed = cycle("  max_turns: unbounded\n").replace(
        "    output: [b]\n",
        "    output: [b]\n    allow_cycles: true\n",
    );
    write(dir.path(), "allowed.yaml", &allowed);
    let out = run(dir.path(), &["validate", "allowed.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));

    write(dir.path(), "bad.yaml", &cycle("  max_turns: lots\n"));
    let out = run(dir.path(), &["validate", "bad.yaml"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("bad.yaml:13:14") && err.contains("`unbounded`"),
        "{err}"
    );
}

/// Routes `user→a, a→b` and `extra` (one route), outputs `outputs`.
fn three(extra: &str, outputs: &str) -> String {
    format!(
        "version: 1
models:
  m: {{provider: scripted, replies: [ok], when_exhausted: repeat_last}}
agents:
  a: {{model: m}}
  b: {{model: m}}
  c: {{model: m}}
workflow:
  router:
    routes:
      - {{from: user, to: a}}
      - {{from: a, to: b}}
      - {extra}
    output: [{outputs}]
"
    )
}

#[test]
fn an_agent_no_route_targets_hears_everyone_and_is_warned_of() {
    let dir = tempfile::tempdir().expect("tempdir");
    // `c` sends to `b` but no route targets it: it hears everyone, so
    // b and c cascade through the default.
    write(dir.path(), "one.yaml", &three("{from: c, to: b}", "b"));
    let out = run(dir.path(), &["validate", "one.yaml"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains("agent \"c\" is the target of no route, so it hears every sender"),
        "{err}"
    );
    assert!(
        err.contains("\"b\", \"c\" form a cycle through the router's default: \"c\", which no route targets, hears every sender"),
        "{err}"
    );
    let graph = run(dir.path(), &["graph", "one.yaml"]);
    let chart = text(&graph.stdout);
    assert!(chart.contains("-.->|\"hears everyone\"|"), "{chart}");

    // `c` is targeted, sends nowhere and is no output: refused in YAML
    // terms, and no cycle is made up.
    write(dir.path(), "two.yaml", &three("{from: a, to: c}", "b"));
    let out = run(dir.path(), &["validate", "two.yaml"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("adding `c` to the router's `output:`"),
        "{err}"
    );
    assert!(!err.contains("cycle") && !err.contains(".output("), "{err}");
    // With `c` an output: a fan-out, nothing to warn of.
    write(dir.path(), "three.yaml", &three("{from: a, to: c}", "b, c"));
    let out = run(dir.path(), &["validate", "--deny-warnings", "three.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let graph = text(&run(dir.path(), &["graph", "three.yaml"]).stdout);
    assert!(!graph.contains("hears everyone"), "{graph}");
}
