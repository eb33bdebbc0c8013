//! Recorded wire-format fixtures (`tests/fixtures/<provider>/…`) replayed
//! by the fake server: JSON bodies with a status and headers, and SSE
//! bodies sent one event per write, as a real server flushes them.

use std::time::Duration;

use crate::fake_server::{Answer, Piece};

/// The text of fixture `provider/name` (found from troupe-agents' tests
/// and from other crates' alike: both sit beside `agents/`).
pub fn fixture(provider: &str, name: &str) -> String {
    let path = format!(
        "{}/../agents/tests/fixtures/{provider}/{name}",
        env!("CARGO_MANIFEST_DIR")
    );
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("cannot read {path}: {e}"))
}

/// A JSON fixture answered with `status` and these headers.
pub fn json(provider: &str, name: &str, status: u16, headers: &[(&'static str, &str)]) -> Answer {
    let mut all = vec![("content-type", "application/json".to_string())];
    all.extend(headers.iter().map(|(n, v)| (*n, v.to_string())));
    Answer::Whole {
        status,
        headers: all,
        body: fixture(provider, name),
    }
}

/// An SSE fixture, one event per write.
pub fn sse(provider: &str, name: &str) -> Answer {
    let text = fixture(provider, name);
    let pieces = text
        .split_inclusive("\n\n")
        .map(|event| Piece::Raw(event.to_string()))
        .collect();
    Answer::Stream {
        pieces,
        gap: Duration::from_millis(1),
    }
}
