//! examples/a2a as its README runs it: `troupe serve` serves the reviewer
//! team, and the desk team, run with `troupe run`, delegates its review to
//! it over A2A (streaming included).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::Path;
use std::time::Duration;

use common::serve::Server;
use common::{jsonl, result_line, text, troupe, wait};

#[test]
fn the_desk_delegates_its_review_to_the_served_reviewer() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let s = Server::start(root, &["examples/a2a/reviewer.yaml"], &[]);
    let child = troupe(
        root,
        &[
            "run",
            "--offline",
            "--events",
            "jsonl",
            "examples/a2a/desk.yaml",
            "a two-line poem about actors",
        ],
    )
    .env("REVIEWER_URL", s.url("/a2a/reviewer"))
    .spawn()
    .unwrap();
    let out = wait(child, Duration::from_secs(30));
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let events = jsonl(&out);
    let review =
        "The second line tells instead of shows: give the actor a mailbox and let it wait.";
    // The remote's answer streamed in as the reviewer's deltas…
    let streamed: String = events
        .iter()
        .filter(|e| e["type"] == "text_delta" && e["path"] == "desk/reviewer")
        .map(|e| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(streamed, review);
    // …and is the reviewer's message, which the editor went on from.
    let produced = events
        .iter()
        .find(|e| e["type"] == "message_produced" && e["path"] == "desk/reviewer")
        .unwrap();
    assert_eq!(produced["message"]["content"]["Text"], review, "{produced}");
    assert_eq!(
        result_line(&out)["final_response"],
        "Each actor keeps its own small room,\nits mailbox full, it waits its turn."
    );
    // The served side ran it as a run of its own.
    let runs = common::serve::json_of(common::serve::client().get(s.url("/runs")).send().unwrap());
    assert_eq!(runs[0]["team"], "reviewer", "{runs}");
    assert_eq!(runs[0]["status"], "completed", "{runs}");
}
