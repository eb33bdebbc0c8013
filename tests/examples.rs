//! Runs the preset examples as the user would and checks the line each one
//! exists to print.
//!
//! `cargo test` builds the examples before it runs tests, so their binaries
//! are started directly; `cargo run` (with a generous timeout for a cold
//! build) is the fallback when a binary is missing. The chatbot is run twice over the
//! same database to check that a restarted bot continues the conversation.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Long enough for `cargo` to build an example from scratch on a slow
/// machine; a run itself takes well under a second.
const TIMEOUT: Duration = Duration::from_secs(600);

/// The example's binary, which `cargo test` built beside this test's own
/// (`target/<profile>/examples/<name>`). Running it directly keeps the test
/// off cargo's build lock and its feature resolution, which may differ from
/// the workspace build and trigger a rebuild mid-test.
fn example_binary(name: &str) -> Option<std::path::PathBuf> {
    let exe = std::env::current_exe().ok()?;
    let profile_dir = exe.parent()?.parent()?;
    let bin = profile_dir.join("examples").join(name);
    bin.exists().then_some(bin)
}

/// Runs the example `name` with `args`, `stdin` piped in: its built binary
/// if there is one, else `cargo run -q --example <name> -- <args>`.
fn run_example(name: &str, args: &[&str], stdin: &str) -> Output {
    let mut command = match example_binary(name) {
        Some(bin) => Command::new(bin),
        None => {
            let mut c = Command::new(env!("CARGO"));
            c.args(["run", "-q", "--example", name, "--"]);
            c
        }
    };
    let mut child = command
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        // An endpoint in the environment would switch some examples to a
        // real model; these checks are for the offline story.
        .env_remove("OPENAI_BASE_URL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot start cargo for {name}: {e}"));
    // Closing stdin (dropping it) is the end of input the chatbot waits for.
    let mut input = child.stdin.take().expect("stdin is piped");
    input
        .write_all(stdin.as_bytes())
        .expect("write the example's input");
    drop(input);

    // Output is read on threads, so a chatty child never blocks on a full
    // pipe while the timeout is being watched.
    let mut out = child.stdout.take().expect("stdout is piped");
    let mut err = child.stderr.take().expect("stderr is piped");
    let out = std::thread::spawn(move || {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut out, &mut buf).map(|_| buf)
    });
    let err = std::thread::spawn(move || {
        let mut buf = Vec::new();
        std::io::Read::read_to_end(&mut err, &mut buf).map(|_| buf)
    });
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait for the example") {
            break status;
        }
        if started.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("example {name} did not finish within {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Output {
        status,
        stdout: out.join().unwrap().unwrap_or_default(),
        stderr: err.join().unwrap().unwrap_or_default(),
    }
}

/// Runs an example, requires success, and returns its stdout.
fn stdout_of(name: &str, args: &[&str], stdin: &str) -> String {
    let output = run_example(name, args, stdin);
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success(),
        "example {name} failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    stdout
}

#[track_caller]
fn assert_line(stdout: &str, line_start: &str) {
    assert!(
        stdout.lines().any(|l| l.starts_with(line_start)),
        "no line starting with {line_start:?} in:\n{stdout}"
    );
}

#[test]
fn sequential_edits_the_researched_draft() {
    let out = stdout_of("sequential", &[], "");
    assert_line(&out, "final response: Aria 2 is here. 40 hours of battery");
    assert_line(&out, "status: completed");
    // Events were printed as they happened: the researcher's tool calls.
    assert!(out.contains("search_release_notes"), "{out}");
}

#[test]
fn map_reduce_recommends_one_city() {
    let out = stdout_of("map_reduce", &[], "");
    for worker in [
        "offsite/map/scout#1",
        "offsite/map/scout#2",
        "offsite/map/scout#3",
    ] {
        assert!(out.contains(worker), "{worker} not in:\n{out}");
    }
    assert_line(&out, "final response: Recommendation: Valencia.");
    assert_line(&out, "status: completed");
}

#[test]
fn round_robin_stops_on_approve() {
    let out = stdout_of("round_robin", &[], "");
    assert_line(&out, "final response: Clear, calm and actionable. APPROVE");
    assert_line(
        &out,
        "approved draft: Your payment didn't go through: your bank declined the card ending in 4242.",
    );
    assert_line(&out, "status: stopped (text_mention(\"APPROVE\")");
}

#[test]
fn selector_reads_a_verbose_choice() {
    let out = stdout_of("selector", &[], "");
    assert!(out.contains("selects db_expert"), "{out}");
    assert_line(&out, "selector model calls: 3");
    assert_line(&out, "final response: Status update — Resolved");
}

#[test]
fn magentic_replans_after_two_stalls_and_answers() {
    let out = stdout_of("magentic", &[], "");
    assert!(out.contains("📋 magentic/manager task ledger:"), "{out}");
    assert!(out.contains("(replanned: reset 1/2)"), "{out}");
    assert_line(
        &out,
        "task ledgers: 2 (a plan and a replan), progress ledgers: 6",
    );
    assert_line(&out, "final response: Rust 1.0 shipped on 15 May 2015.");
    assert_line(&out, "status: completed");
}

#[test]
fn swarm_resumes_with_the_agent_that_asked_the_user() {
    let out = stdout_of("swarm", &[], "");
    assert_line(&out, "speakers this run: triage → billing → refunds");
    assert_line(&out, "speakers this run: refunds");
    assert_line(
        &out,
        "final response (handoff to user): Done: 12.00 EUR is on its way back to your card",
    );
}

#[test]
fn nested_teams_research_twice_then_approve() {
    let out = stdout_of("nested_teams", &[], "");
    assert!(out.contains("briefing/research/map/analyst#3"), "{out}");
    assert_line(&out, "research rounds: 2");
    assert_line(
        &out,
        "final response: Noise covered, with a concrete planning rule. APPROVE",
    );
}

#[test]
fn chatbot_continues_the_conversation_after_a_restart() {
    let dir = tempfile::tempdir().expect("a temp dir");
    let db = dir.path().join("chat.sqlite3");
    let db = db.to_str().expect("a UTF-8 temp path");
    let args = ["--db", db, "--conversation", "test-run"];

    let first = stdout_of(
        "chatbot",
        &args,
        "When are you open?\nIs ticket 4411 ready?\n",
    );
    assert_line(&first, "conversation 'test-run' in");
    assert_line(&first, "bot> We're open Tuesday to Saturday");
    assert_line(
        &first,
        "bot> Ticket 4411 (city bike, new chain and brake pads) is ready for pick-up",
    );
    assert!(
        first.contains("(That's your 2nd message in this conversation.)"),
        "{first}"
    );

    // A new process over the same database: the bot has seen two turns
    // already and remembers them. `/quit` ends the chat before the rest.
    let second = stdout_of(
        "chatbot",
        &args,
        "What did I ask before?\n/quit\nnot read\n",
    );
    assert_line(&second, "conversation 'test-run' in");
    assert!(second.contains("(4 earlier messages)"), "{second}");
    assert_line(
        &second,
        "bot> Before this you asked: \"When are you open?\", \"Is ticket 4411 ready?\".",
    );
    assert!(
        second.contains("(That's your 3rd message in this conversation.)"),
        "{second}"
    );
    assert!(
        !second.contains("not read"),
        "input after /quit was read:\n{second}"
    );
    assert!(Path::new(db).exists());
}

#[test]
fn chatbot_without_a_database_shares_no_conversation_between_runs() {
    // No `--db`: each run has a database of its own, gone at exit, so a
    // second run (or a second user) starts afresh.
    for _ in 0..2 {
        let out = stdout_of("chatbot", &[], "When are you open?\n");
        assert!(out.contains("(0 earlier messages)"), "{out}");
        assert!(
            out.contains("for this run only: `--db PATH` keeps it"),
            "{out}"
        );
        assert!(
            out.contains("(That's your 1st message in this conversation.)"),
            "{out}"
        );
    }
}

#[test]
fn bench_presets_runs_at_small_sizes() {
    // The benchmark in debug mode at smoke-test sizes: it keeps compiling
    // and every workload still runs to completion with sane output.
    let out = stdout_of("bench_presets", &["--quick"], "");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines.len(), 9, "{out}");
    for line in lines {
        let v: serde_json::Value = serde_json::from_str(line).expect("a JSON line");
        for field in ["workload", "n", "wall_s", "per_item_us", "peak_rss_kib"] {
            assert!(v.get(field).is_some(), "{field} missing in {line}");
        }
    }
}

#[test]
fn bench_ckpt_and_conc_report_what_issue_18_compares() {
    // ckpt: every store, a few supersteps; each run checks its own thread
    // and the resumed one, so a lost checkpoint fails here.
    for store in ["memory", "file", "sqlite"] {
        let args = [
            "ckpt",
            "--store",
            store,
            "--n",
            "30",
            "--reps",
            "2",
            "--threads",
            "1",
        ];
        let out = stdout_of("bench", &args, "");
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON line");
        assert_eq!(
            (v["bench"].as_str(), v["store"].as_str()),
            (Some("ckpt"), Some(store)),
            "{out}"
        );
        assert_eq!(v["supersteps"], 30, "{out}");
        for field in [
            "bytes_written",
            "last_checkpoint_bytes",
            "thread_encoded_bytes",
        ] {
            assert!(v[field].as_u64().is_some_and(|b| b > 0), "{field} in {out}");
        }
        for field in [
            "overhead_per_superstep_us",
            "load_last_ms",
            "latest_ms",
            "peak_rss_mib",
        ] {
            assert!(
                v[field].as_f64().is_some_and(f64::is_finite),
                "{field} in {out}"
            );
        }
        // The ring's messages are the peers' ~35-character ones.
        assert!(
            v["avg_message_chars"].as_f64().is_some_and(|c| c > 25.0),
            "{out}"
        );
    }
    let bad = run_example("bench", &["ckpt", "--store", "tape", "--n", "5"], "");
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("store 'tape'"),
        "{bad:?}"
    );

    // conc: 20 runs of 4 messages at 5 ms a call; every run is checked.
    let args = [
        "conc",
        "--k",
        "20",
        "--m",
        "4",
        "--latency-ms",
        "5",
        "--threads",
        "1",
    ];
    let out = stdout_of("bench", &args, "");
    let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON line");
    assert_eq!(v["runs_ok"], 20, "{out}");
    assert_eq!(v["all_runs_exactly_m"], true, "{out}");
    assert!(
        (v["ideal_s"].as_f64().unwrap() - 0.015).abs() < 1e-9,
        "{out}"
    );
    // No run can end before its three model calls have waited.
    assert!(
        v["overhead_ratio"].as_f64().is_some_and(|r| r >= 1.0),
        "{out}"
    );
    assert!(v["kib_per_run"].as_f64().is_some(), "{out}");
}

#[test]
fn bench_runs_every_shared_workload_at_small_sizes() {
    // Each workload checks its own result (message counts, handoffs, the
    // gathered sum), so a preset that loses or repeats a message fails here.
    let runs: [&[&str]; 11] = [
        &["rr", "--n", "30"],
        &["sel", "--n", "30"],
        &["swarm", "--n", "30"],
        &["fan", "--k", "20"],
        &["rpc", "--n", "50"],
        &["pub", "--n", "50"],
        &["chain", "--runs", "3"],
        &["fanin", "--k", "20", "--runs", "2"],
        &["idle", "--k", "200"],
        &["idle_spawned", "--k", "200"],
        &["stream", "--n", "50"],
    ];
    for args in runs {
        let out = stdout_of("bench", &[args, &["--threads", "1"]].concat(), "");
        let v: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON line");
        assert_eq!(v["bench"], args[0], "{out}");
        assert_eq!(v["framework"], "troupe", "{out}");
        let figure = v["figure"].as_f64().expect("a figure");
        assert!(figure.is_finite() && figure > 0.0, "{out}");
        for field in ["unit", "wall_s", "peak_rss_mib"] {
            assert!(v.get(field).is_some(), "{field} missing in {out}");
        }
    }
    let bad = run_example("bench", &["nope"], "");
    assert!(!bad.status.success());
    assert!(
        String::from_utf8_lossy(&bad.stderr).contains("unknown workload 'nope'"),
        "{bad:?}"
    );
}
