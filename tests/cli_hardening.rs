//! Issue 22 through the `troupe` binary: what a hostile or careless input
//! does to `validate`, `run` and `chat` — a chain of nested configs past
//! the limit, bytes that are not UTF-8, thousands of problems, integers of
//! any width, template indexes past a parallel block, a run id no store
//! takes, a cluster port that never answers, and a stdout that is closed
//! or full.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]

mod common;
use common::{text, wait, write};

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// `troupe args` in the repository root, offline.
fn troupe(args: &[&str]) -> Command {
    common::troupe(&root(), args)
}

fn run(args: &[&str]) -> Output {
    wait(
        troupe(args).spawn().expect("start troupe"),
        Duration::from_secs(30),
    )
}

/// The exit code and stderr of `troupe args`.
fn outcome(args: &[&str]) -> (Option<i32>, String) {
    let out = run(args);
    (out.status.code(), text(&out.stderr))
}

fn path(p: &Path) -> &str {
    p.to_str().expect("a UTF-8 path")
}

const HEAD: &str = "version: 1\nmodels:\n  m: {provider: scripted, replies: [ok]}\n";

#[test]
fn a_chain_past_the_nesting_limit_names_the_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    // c0 nests c1, … c16: 17 files, one more than the limit.
    for i in 0..17 {
        let body = if i < 16 {
            format!(
                "{HEAD}agents:\n  a: {{model: m}}\nworkflows:\n  inner: {{file: c{}.yaml}}\nworkflow:\n  sequential: {{participants: [inner]}}\n",
                i + 1
            )
        } else {
            format!("{HEAD}agents:\n  a: {{model: m}}\n")
        };
        write(dir.path(), &format!("c{i}.yaml"), &body);
    }
    let first = dir.path().join("c0.yaml");
    for args in [
        vec!["validate", path(&first)],
        vec!["run", path(&first), "x"],
    ] {
        let (code, err) = outcome(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.contains("c15.yaml:7:17: field `workflows.inner.file`: `c16.yaml` would be file 17 of a chain of nested configs, past the limit of 16"),
            "{args:?}: {err}"
        );
        assert!(!err.contains("nests itself"), "{args:?}: {err}");
    }
    // 16 files are fine.
    write(
        dir.path(),
        "c15.yaml",
        &format!("{HEAD}agents:\n  a: {{model: m}}\n"),
    );
    let (code, err) = outcome(&["validate", path(&first)]);
    assert_eq!(code, Some(0), "{err}");
    // A real loop still says so.
    write(
        dir.path(),
        "c15.yaml",
        &format!(
            "{HEAD}agents:\n  a: {{model: m}}\nworkflows:\n  inner: {{file: c0.yaml}}\nworkflow:\n  sequential: {{participants: [inner]}}\n"
        ),
    );
    let (code, err) = outcome(&["validate", path(&first)]);
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("`c0.yaml` nests itself"), "{err}");
}

#[test]
fn text_that_is_not_utf8_is_located_at_its_first_bad_byte() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("latin1.yaml");
    std::fs::write(
        &bad,
        b"version: 1\nmodels:\n  m: {provider: scripted, replies: [caf\xe9]}\n",
    )
    .expect("write");
    let nests = write(
        dir.path(),
        "nests.yaml",
        &format!(
            "{HEAD}agents:\n  a: {{model: m}}\nworkflows:\n  x: {{file: latin1.yaml}}\nworkflow:\n  sequential: {{participants: [x]}}\n"
        ),
    );
    for (args, says) in [
        (
            vec!["validate", path(&bad)],
            "latin1.yaml:3:40: not UTF-8 text: byte 0xE9",
        ),
        (
            vec!["run", path(&bad), "x"],
            "latin1.yaml:3:40: not UTF-8 text: byte 0xE9",
        ),
        (
            vec!["validate", path(&nests)],
            "latin1.yaml:3:40: not UTF-8 text: byte 0xE9",
        ),
    ] {
        let (code, err) = outcome(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
    }
}

#[test]
fn past_512_problems_the_listing_says_how_many_more() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut body = format!("{HEAD}agents:\n");
    for i in 0..600 {
        body.push_str(&format!("  a{i}: {{model: m, temperature: hot}}\n"));
    }
    let many = write(dir.path(), "many.yaml", &body);
    let (code, err) = outcome(&["validate", path(&many)]);
    assert_eq!(code, Some(2), "{err}");
    // 600 bad temperatures and no workflow: 601, of which 512 are listed.
    assert_eq!(
        err.matches("wrong type: found the string \"hot\"").count(),
        511,
        "{err}"
    );
    assert!(
        err.contains(
            "many.yaml:516:33: 89 more problem(s) from here on not listed (only the first 512 are)"
        ),
        "{err}"
    );
    assert!(err.contains("more than 512 problems found"), "{err}");
}

#[test]
fn integers_of_any_width_are_quoted_as_written() {
    let dir = tempfile::tempdir().expect("tempdir");
    for digits in [26, 43] {
        let n = "9".repeat(digits);
        let cfg = write(
            dir.path(),
            "wide.yaml",
            &format!(
                "{HEAD}agents:\n  a: {{model: m}}\nworkflow:\n  max_turns: {n}\n  sequential: {{participants: [a]}}\n"
            ),
        );
        let (code, err) = outcome(&["validate", path(&cfg)]);
        assert_eq!(code, Some(2), "{err}");
        assert!(
            err.contains(&format!(
                "wide.yaml:7:14: field `workflow.max_turns`: the number {n} is out of range"
            )),
            "{err}"
        );
    }
    // A float field takes a wide integer as the number it is: the error is
    // the temperature's range, and the lone agent still stands for the
    // workflow.
    let cfg = write(
        dir.path(),
        "hot.yaml",
        &format!(
            "{HEAD}agents:\n  a: {{model: m, temperature: {}}}\n",
            "9".repeat(30)
        ),
    );
    let (code, err) = outcome(&["validate", path(&cfg)]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("hot.yaml:5:30: field `agents.a.temperature`: temperature"),
        "{err}"
    );
    assert!(!err.contains("no `workflow`"), "{err}");
    assert!(err.contains("1 problem(s) found"), "{err}");
}

#[test]
fn a_template_index_past_a_parallel_block_is_located() {
    let dir = tempfile::tempdir().expect("tempdir");
    let body = |index: usize| {
        format!(
            "version: 1\nmodels:\n  m: {{provider: scripted, replies: [ok]}}\nagents:\n  a: {{model: m}}\n  b: {{model: m}}\n  d: {{model: m}}\n  c:\n    model: m\n    instructions: \"Compare {{{{ $steps.both.outputs[{index}].output }}}}\"\nworkflow:\n  steps:\n    - id: both\n      type: parallel\n      steps: [{{agent: a}}, {{agent: b}}]\n    - agent: c\n    - condition: \"{{{{ $steps.both.outputs[{index}].output }}}} == 'ok'\"\n      true: [{{agent: d}}]\n"
        )
    };
    let cfg = write(dir.path(), "past.yaml", &body(2));
    for args in [vec!["validate", path(&cfg)], vec!["run", path(&cfg), "x"]] {
        let (code, err) = outcome(&args);
        assert_eq!(code, Some(2), "{args:?}: {err}");
        assert!(
            err.contains("past.yaml:10:19: field `agents.c.instructions`: `$steps.both.outputs[2].output`: index [2] is past the end of parallel block `both`, which has 2 step(s) (expected an index from 0 to 1, or `.outputs.<id>`)"),
            "{args:?}: {err}"
        );
        assert!(
            err.contains("past.yaml:17:18: field `workflow.steps[2].condition`: `$steps.both.outputs[2].output`: index [2]"),
            "{args:?}: {err}"
        );
    }
    let cfg = write(dir.path(), "last.yaml", &body(1));
    let (code, err) = outcome(&["validate", path(&cfg)]);
    assert_eq!(code, Some(0), "{err}");
}

#[test]
fn an_invalid_run_id_is_a_usage_error_before_the_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(
        dir.path(),
        "durable.yaml",
        &format!(
            "{HEAD}agents:\n  a: {{model: m}}\ncheckpoint: {{store: sqlite, path: runs.db}}\n"
        ),
    );
    for (id, why) in [
        ("a/b", "it contains a path separator"),
        ("", "it is empty"),
        (".hidden", "it starts with '.'"),
    ] {
        let out = run(&["run", path(&cfg), "x", "--run-id", id]);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{id:?}: {err}");
        assert!(
            err.contains("troupe run: --run-id: invalid run id"),
            "{id:?}: {err}"
        );
        assert!(err.contains(why), "{id:?}: {err}");
        assert!(!err.contains("checkpoint not saved"), "{id:?}: {err}");
        assert!(out.stdout.is_empty(), "{id:?}: the run ran");
    }
    assert!(!dir.path().join("runs.db").exists(), "nothing was stored");
    let out = run(&["run", path(&cfg), "x", "--run-id", "fine-1"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
}

#[test]
fn a_closed_cluster_port_fails_after_the_wait_it_states() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(
        dir.path(),
        "remote.yaml",
        &format!("{HEAD}agents:\n  a: {{model: m, node: b}}\n"),
    );
    // A port nobody listens on.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("a free port")
        .port();
    let addr = format!("127.0.0.1:{port}");
    let started = Instant::now();
    let out = wait(
        troupe(&[
            "run",
            path(&cfg),
            "x",
            "--connect",
            &addr,
            "--connect-wait",
            "1.5",
        ])
        .env("TROUPE_COOKIE", "test-cookie")
        .spawn()
        .expect("start troupe"),
        Duration::from_secs(30),
    );
    let took = started.elapsed();
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains(&format!("cannot connect to the node at {addr}")),
        "{err}"
    );
    assert!(err.contains("kept trying for 1.5s"), "{err}");
    assert!(
        took >= Duration::from_millis(1400) && took < Duration::from_secs(5),
        "took {took:?}: {err}"
    );
    let (code, err) = outcome(&[
        "run",
        path(&cfg),
        "x",
        "--connect",
        &addr,
        "--connect-wait",
        "-1",
    ]);
    assert_eq!(code, Some(2), "{err}");
}

/// `troupe args`, its stdout a pipe whose reader takes `keep` bytes and
/// closes it (`troupe … | head -c keep`).
fn into_short_pipe(args: &[&str], stdin: &str, keep: usize) -> Output {
    let mut child = troupe(args)
        .stdin(Stdio::piped())
        .spawn()
        .expect("start troupe");
    if let Some(mut input) = child.stdin.take() {
        use std::io::Write;
        let _ = input.write_all(stdin.as_bytes());
    }
    let mut stdout = child.stdout.take().expect("stdout");
    let mut head = vec![0; keep];
    let _ = stdout.read_exact(&mut head);
    drop(stdout);
    wait(child, Duration::from_secs(30))
}

/// `troupe args` with stdout on a full disk.
fn into_full_disk(args: &[&str], stdin: &str) -> Output {
    let full = std::fs::OpenOptions::new()
        .write(true)
        .open("/dev/full")
        .expect("open /dev/full");
    let mut child = troupe(args)
        .stdin(Stdio::piped())
        .stdout(full)
        .spawn()
        .expect("start troupe");
    if let Some(mut input) = child.stdin.take() {
        use std::io::Write;
        let _ = input.write_all(stdin.as_bytes());
    }
    wait(child, Duration::from_secs(30))
}

#[test]
fn a_closed_or_full_stdout_ends_every_command_without_a_panic() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Long enough output that the reader is gone before it ends.
    let mut replies = String::new();
    for i in 0..50 {
        replies.push_str(&format!("\"reply {i} {}\", ", "x".repeat(2000)));
    }
    let cfg = write(
        dir.path(),
        "talk.yaml",
        &format!(
            "version: 1\nmodels:\n  m: {{provider: scripted, replies: [{replies}]}}\nagents:\n  a: {{model: m}}\n"
        ),
    );
    let cfg = path(&cfg);
    let talk = "hi\n".repeat(50);
    let commands: [(&[&str], &str); 6] = [
        (&["schema"], ""),
        (&["schema", "--events"], ""),
        (&["graph", "examples/configs/qa_loop.yaml"], ""),
        (&["validate", "examples/configs/qa_loop.yaml"], ""),
        (&["chat", cfg], &talk),
        (&["chat", "--events", "jsonl", cfg], &talk),
    ];
    for (args, stdin) in commands {
        // `| head -c 10`: a quiet failure.
        let out = into_short_pipe(args, stdin, 10);
        let err = text(&out.stderr);
        // Short outputs may fit in the pipe before its reader goes.
        if args == ["schema"] || args[0] == "chat" {
            assert_eq!(out.status.code(), Some(1), "{args:?} | head: {err}");
        }
        assert!(!err.contains("panicked"), "{args:?} | head: {err}");
        assert!(!err.contains("cannot write"), "{args:?} | head: {err}");
        // `> /dev/full`: a failure that says so.
        let out = into_full_disk(args, stdin);
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{args:?} > /dev/full: {err}");
        assert!(
            err.contains("troupe: cannot write to stdout: No space left on device"),
            "{args:?} > /dev/full: {err}"
        );
        assert_eq!(
            err.matches("cannot write to stdout").count(),
            1,
            "{args:?}: {err}"
        );
        assert!(!err.contains("panicked"), "{args:?} > /dev/full: {err}");
    }
}

#[test]
fn endless_input_on_stdin_is_refused_at_its_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = write(
        dir.path(),
        "one.yaml",
        &format!("{HEAD}agents:\n  a: {{model: m}}\n"),
    );
    for (args, code, says) in [
        (
            vec!["run", path(&cfg), "-"],
            2,
            "troupe run: cannot read the task from stdin: the input is longer than the 16777216-byte limit",
        ),
        (
            vec!["chat", path(&cfg)],
            1,
            "cannot read stdin: a line is longer than the 16777216-byte limit",
        ),
    ] {
        let zero = std::fs::File::open("/dev/zero").expect("open /dev/zero");
        let started = Instant::now();
        // A read without a cap would grow until killed after the timeout.
        let out = wait(
            troupe(&args).stdin(zero).spawn().expect("start troupe"),
            Duration::from_secs(20),
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(started.elapsed() < Duration::from_secs(10), "{args:?}");
    }
}

#[test]
fn run_refuses_a_device_or_fifo_as_validate_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let fifo = dir.path().join("pipe.yaml");
    let made = Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .expect("run mkfifo");
    assert!(made.success(), "mkfifo failed");
    let nests = write(
        dir.path(),
        "nests.yaml",
        &format!(
            "{HEAD}agents:\n  a: {{model: m}}\nworkflows:\n  x: {{file: pipe.yaml}}\n  z: {{file: /dev/zero}}\nworkflow:\n  steps: [{{workflow: x}}, {{workflow: z}}]\n"
        ),
    );
    for (args, says) in [
        (
            vec!["run", "/dev/zero", "x"],
            "not a regular file (a character device)",
        ),
        (
            vec!["run", path(&nests), "x"],
            "nests.yaml:7:13: field `workflows.x.file`: cannot read",
        ),
        (
            vec!["run", path(&nests), "x"],
            "nests.yaml:8:13: field `workflows.z.file`: cannot read `/dev/zero`: not a regular file (a character device)",
        ),
        (
            vec!["graph", path(&nests)],
            "nests.yaml:8:13: field `workflows.z.file`",
        ),
    ] {
        let started = Instant::now();
        let out = wait(
            troupe(&args).spawn().expect("start troupe"),
            Duration::from_secs(10),
        );
        let err = text(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(started.elapsed() < Duration::from_secs(5), "{args:?}");
    }
}

#[test]
fn a_models_context_window_bounds_what_a_long_chat_shows_it() {
    // Two agents trading long answers for 40 turns: with the default
    // window (128k tokens) the last call is shown the whole chat; with
    // `context_window: 300` only the newest messages that fit.
    let dir = tempfile::tempdir().expect("tempdir");
    let long = "word ".repeat(100);
    let config = |window: &str| {
        format!(
            "version: 1\nmodels:\n  m: {{provider: scripted, replies: [\"{long}\"], when_exhausted: cycle{window}}}\nagents:\n  a: {{model: m}}\n  b: {{model: m}}\nworkflow:\n  round_robin: {{participants: [a, b]}}\n  max_turns: 40\n"
        )
    };
    let whole = write(dir.path(), "whole.yaml", &config(""));
    let window = write(dir.path(), "window.yaml", &config(", context_window: 300"));
    let mut shown = Vec::new();
    for file in [&whole, &window] {
        let out = run(&["run", "--events", "jsonl", path(file), "go"]);
        assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
        shown.push(common::last_prompt_tokens(&out));
    }
    assert!(shown[0] > 2_000, "the whole chat: {} tokens", shown[0]);
    assert!(shown[1] <= 300, "within the window: {} tokens", shown[1]);

    // A window of 0 is refused where it is written.
    let zero = write(dir.path(), "zero.yaml", &config(", context_window: 0"));
    let (code, err) = outcome(&["validate", path(&zero)]);
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("zero.yaml:3:") && err.contains("models.m.context_window"),
        "{err}"
    );
}
