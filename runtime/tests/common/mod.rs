//! Helpers the checkpoint tests share.

// Test helpers may fail loudly.
#![allow(clippy::expect_used, dead_code)]

use std::time::Duration;

use troupe_runtime::Thread;

/// `f`, failing the test if it takes a minute (a hung run).
pub async fn guard<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("the run hung")
}

/// A thread's content without ids or times, children included.
pub fn content(t: &Thread) -> Vec<String> {
    let mut out: Vec<String> = t
        .messages()
        .iter()
        .map(|m| format!("{}: {}", m.source, m.text_content()))
        .collect();
    for (name, child) in t.children() {
        out.extend(content(child).into_iter().map(|l| format!("{name}/ {l}")));
    }
    out
}
