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
