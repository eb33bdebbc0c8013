//! A turn's start is in the event log before anything the turn emits,
//! whichever task polls it: every reader of the log (a streamed chat
//! completion, AG-UI, A2A) takes an agent's words as those of the turn it
//! last saw start, and a word logged before its turn's start was once sent
//! twice ("gamma\n\ngamma").

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::{Arc, Mutex};
use std::time::Duration;

use troupe_runtime::event::Event;
use troupe_runtime::sink::EventSink;
use troupe_runtime::{FnAgent, Graph, RunContext, Thread, Workflow};

/// An agent that streams its name as soon as it is polled, then answers.
fn streaming(name: String) -> FnAgent {
    FnAgent::new(name.clone(), move |_: Arc<Thread>, ctx: RunContext| {
        ctx.emit(Event::TextDelta {
            path: ctx.path().clone(),
            text: name.clone(),
        });
        let answer = name.clone();
        async move { Ok(answer) }
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_turns_start_is_logged_before_its_words_on_actors_and_inline() {
    // A source alone (polled inline by its run), then eight branches that
    // start together on a multi-threaded runtime (sent to their actors,
    // which may poll them before the run's task goes on).
    let mut graph = Graph::builder()
        .start("source")
        .add_agent(streaming("source".into()));
    for b in 0..8 {
        graph = graph
            .add_agent(streaming(format!("b{b}")))
            .add_edge("source", format!("b{b}"));
    }
    let wf = Workflow::builder()
        .name("fan")
        .graph(graph.build().unwrap())
        .build()
        .unwrap();
    for run in 0..10 {
        let log = Arc::new(Mutex::new(Vec::new()));
        let sink = {
            let log = log.clone();
            EventSink::callback(move |record| {
                let entry = match &record.event {
                    Event::AgentStarted { path, .. } => {
                        // A slow writer (a log serialising its lines):
                        // an actor polling the turn meanwhile must not
                        // get its words in first.
                        std::thread::sleep(Duration::from_millis(2));
                        Some((path.to_string(), "start"))
                    }
                    Event::TextDelta { path, .. } => Some((path.to_string(), "words")),
                    _ => None,
                };
                if let Some(entry) = entry {
                    log.lock().unwrap().push(entry);
                }
            })
        };
        let ctx = RunContext::with_sink(sink);
        let result = tokio::time::timeout(Duration::from_secs(20), wf.run_task("go", &ctx))
            .await
            .expect("the run hung")
            .unwrap();
        assert_eq!(result.turns, 9);
        let log = log.lock().unwrap();
        for (i, (path, what)) in log.iter().enumerate() {
            if *what == "words" {
                assert!(
                    log[..i].iter().any(|(p, w)| p == path && *w == "start"),
                    "run {run}: {path}'s words came before its turn's start: {log:?}"
                );
            }
        }
    }
}
