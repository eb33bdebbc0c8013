//! Tool processes never outlive `troupe`, however it ends: a stdio MCP
//! server that starts children of its own — one in its process group, one
//! that left it (`setsid`) — leaves no process behind within 2 s after
//! `kill -9` of `troupe`, after `SIGHUP`, and after Ctrl-C (SIGINT) while
//! the server is still starting. Linux: the helpers that do it
//! (`troupe_agents::tool::mcp_reaper`) are Linux-only.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]
#![cfg(target_os = "linux")]

mod common;
use common::{lines, troupe_under, until, wait};

use std::path::{Path, PathBuf};
use std::process::Child;
use std::time::{Duration, Instant};

/// The stdio MCP server the configs start (python3, no SDK).
fn server_script() -> String {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/mcp_server.py")
        .to_string_lossy()
        .into_owned()
}

/// A config whose agent `a` (a model that thinks for a minute) has the
/// MCP server `sh -c SCRIPT`: the wrapper writes its pid and its two
/// children's to `pids`, waits `startup` seconds, then becomes the server.
fn config(dir: &Path, startup: u32) -> PathBuf {
    let pids = dir.join("pids");
    // `$$$$` is `$$` once the config's `$$` escapes are read.
    let script = format!(
        "sleep 1000 2>/dev/null & a=$$!; setsid sleep 1000 2>/dev/null & b=$$!; echo $$$$ $$a $$b > {}.tmp; mv {}.tmp {}; sleep {startup}; exec python3 {}",
        pids.display(),
        pids.display(),
        pids.display(),
        server_script()
    );
    let body = format!(
        "version: 1\nmodels:\n  slow: {{provider: scripted, delay: 60s, replies: [never]}}\nagents:\n  a:\n    model: slow\n    tools:\n      - mcp: {{name: forks, command: sh, args: [-c, '{script}'], timeout: 60s}}\nworkflow:\n  sequential:\n    participants: [a]\n"
    );
    let file = dir.join("forks.yaml");
    std::fs::write(&file, body).expect("write config");
    file
}

/// `troupe run --events jsonl FILE go`, running.
fn start(dir: &Path, file: &Path) -> Child {
    let args = [
        "run",
        "--events",
        "jsonl",
        file.to_str().expect("utf-8"),
        "go",
    ];
    // Started under `nohup` (or anything ignoring SIGHUP), this test would
    // hand troupe the same disposition — an ignored signal stays ignored
    // across exec — and a SIGHUP would rightly do nothing. The tests are
    // about troupe as a terminal starts it: coreutils' `env` puts SIGHUP
    // back to its default, then execs troupe (same pid).
    let wrapper: &[&str] = if hup_ignored() {
        eprintln!(
            "cli_mcp_orphans: this test process ignores SIGHUP (nohup?); troupe is started \
             through `env --default-signal=HUP`"
        );
        &["env", "--default-signal=HUP"]
    } else {
        &[]
    };
    troupe_under(dir, wrapper, &args)
        .spawn()
        .expect("start troupe")
}

/// Whether this process ignores SIGHUP (bit 0 of `SigIgn` in its status).
fn hup_ignored() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("SigIgn:"))
                .and_then(|mask| u64::from_str_radix(mask.trim(), 16).ok())
        })
        .is_some_and(|mask| mask & 1 == 1)
}

/// Whether `pid` is a live process (a zombie is not).
fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        stat.rsplit_once(')')
            .is_some_and(|(_, rest)| !rest.trim_start().starts_with(['Z', 'X']))
    })
}

/// The parent of `pid`.
fn parent(pid: u32) -> u32 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("a live process");
    let (_, rest) = stat.rsplit_once(')').expect("a stat line");
    rest.split_whitespace()
        .nth(1)
        .and_then(|p| p.parse().ok())
        .expect("a parent pid")
}

/// Waits until the wrapper wrote its pids: the server's whole tree (the
/// wrapper, its two children, and the two helpers above it), once each
/// is up.
fn tree(dir: &Path) -> Vec<u32> {
    let file = dir.join("pids");
    let deadline = Instant::now() + Duration::from_secs(30);
    let text = loop {
        if let Ok(t) = std::fs::read_to_string(&file) {
            break t;
        }
        assert!(Instant::now() < deadline, "the server never started");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut pids: Vec<u32> = text
        .split_whitespace()
        .map(|p| p.parse().expect("a pid"))
        .collect();
    assert_eq!(pids.len(), 3, "{text}");
    let reaper = parent(pids[0]);
    let guard = parent(reaper);
    pids.extend([reaper, guard]);
    for &p in &pids {
        assert!(alive(p), "{p} of {pids:?} is not running");
    }
    pids
}

/// Asserts that every process of `pids` is gone within 2 s.
fn gone_within_2s(pids: &[u32], how: &str) {
    let deadline = Instant::now() + Duration::from_secs(2);
    loop {
        let left: Vec<u32> = pids.iter().copied().filter(|p| alive(*p)).collect();
        if left.is_empty() {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "after {how}, processes {left:?} of the server's tree {pids:?} are still running"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn signal(child: &Child, sig: &str) {
    let ok = std::process::Command::new("kill")
        .args([&format!("-{sig}"), &child.id().to_string()])
        .status()
        .expect("kill")
        .success();
    assert!(ok);
}

/// Ends `troupe` with `sig` once its agent is thinking (the server is up).
fn ended_while_running(sig: &str) {
    let dir = tempfile::tempdir().expect("tempdir");
    let file = config(dir.path(), 0);
    let mut child = start(dir.path(), &file);
    let stdout = lines(child.stdout.take().expect("stdout"));
    until(&stdout, &["\"agent_started\""]);
    let pids = tree(dir.path());
    assert!(!pids.contains(&child.id()));
    signal(&child, sig);
    gone_within_2s(&pids, &format!("SIG{sig} of troupe"));
    let _ = child.kill();
    let _ = child.wait();
}

#[test]
fn kill_9_of_troupe_leaves_no_process_of_the_server() {
    ended_while_running("KILL");
}

#[test]
fn sighup_of_troupe_leaves_no_process_of_the_server() {
    ended_while_running("HUP");
}

#[test]
fn ctrl_c_while_the_server_starts_leaves_no_process_of_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    // The server takes 30 s to start (its startup allows 60 s).
    let file = config(dir.path(), 30);
    let child = start(dir.path(), &file);
    let pids = tree(dir.path());
    signal(&child, "INT");
    gone_within_2s(&pids, "Ctrl-C during the server's startup");
    let out = wait(child, Duration::from_secs(10));
    assert_ne!(out.status.code(), Some(0));
}
