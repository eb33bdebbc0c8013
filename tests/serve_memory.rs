//! Serve's records of finished runs are bounded by bytes: after 1,000
//! large chats (256 KiB each) its resident memory stays under the bound
//! the README documents (64 MiB of records) plus the process's own, where
//! keeping every record would take about a gigabyte.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use common::serve::{Server, client, json_of};
use common::write;
use serde_json::json;

const ECHO: &str = "version: 1
name: echo
models:
  m: {provider: scripted, when_exhausted: repeat_last}
agents:
  clerk: {model: m, script: [\"noted\"]}
";

/// The server's resident memory, in bytes (Linux).
fn rss(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

#[test]
#[cfg(target_os = "linux")]
fn a_thousand_large_chats_stay_under_the_documented_bound() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "echo.yaml", ECHO);
    let s = Server::start(dir.path(), &["echo.yaml"], &[]);
    let c = client();
    let start = rss(s.child.id());
    let big = "x".repeat(256 << 10);
    for _ in 0..1000 {
        let r = c
            .post(s.url("/v1/chat/completions"))
            .json(&json!({"messages": [{"role": "user", "content": big}]}))
            .send()
            .unwrap();
        assert_eq!(r.status(), 200);
    }
    let end = rss(s.child.id());
    let kept = json_of(c.get(s.url("/runs")).send().unwrap());
    let kept = kept.as_array().unwrap().len();
    eprintln!("RSS {start} -> {end} bytes; {kept} runs kept");
    assert!(kept < 1000, "every run was kept ({kept})");
    // 64 MiB of records, the process's own memory, and room for the
    // allocator's caches: far from the ~1 GiB every record would take.
    assert!(end < start + (128 << 20), "RSS {start} -> {end} bytes");
}

/// The server's environment, as the kernel holds it (Linux).
fn environ(pid: u32) -> Vec<String> {
    let raw = std::fs::read(format!("/proc/{pid}/environ")).unwrap();
    raw.split(|b| *b == 0)
        .map(|v| String::from_utf8_lossy(v).into_owned())
        .collect()
}

#[test]
#[cfg(target_os = "linux")]
fn the_server_gives_freed_memory_back_at_once_unless_told_otherwise() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "echo.yaml", ECHO);
    // The process the test started, exec'd once more with mimalloc's
    // purge delay at 0: same pid, serving.
    let s = Server::start(dir.path(), &["echo.yaml"], &[]);
    let env = environ(s.child.id());
    assert!(env.iter().any(|v| v == "MIMALLOC_PURGE_DELAY=0"), "{env:?}");
    let r = client()
        .post(s.url("/v1/chat/completions"))
        .json(&json!({"messages": [{"role": "user", "content": "hi"}]}))
        .send()
        .unwrap();
    assert_eq!(r.status(), 200);
    // A delay the environment sets is the one it runs with.
    let s = Server::start(
        dir.path(),
        &["echo.yaml"],
        &[("MIMALLOC_PURGE_DELAY", "25")],
    );
    let env = environ(s.child.id());
    assert!(
        env.iter().any(|v| v == "MIMALLOC_PURGE_DELAY=25")
            && !env.iter().any(|v| v == "MIMALLOC_PURGE_DELAY=0"),
        "{env:?}"
    );
}
