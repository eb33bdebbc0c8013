//! Event sinks that do I/O run on a writer thread: a blocked consumer never
//! stalls a run, what the queue cannot hold is dropped, counted and
//! reported where it is missing, and in the normal case every event
//! arrives, in order.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, mpsc};
use std::time::Duration;

use troupe_runtime::{
    Event, FnAgent, Graph, Router, RunContext, StopCondition, Thread, Workflow, event::EventRecord,
    graph::Condition, sink::EventOutput, sink::EventSink, sink::EventWriter, sink::JsonLines,
};

async fn guard<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), f)
        .await
        .expect("the run hung")
}

/// Two agents answering each other with 4 KiB each, for `messages` messages.
fn rally(messages: u64) -> Workflow {
    let big = |name: &'static str| {
        FnAgent::sync(name, move |t: &Thread| {
            Ok(format!("{name} #{}: {}", t.len(), "x".repeat(4096)))
        })
    };
    Workflow::builder()
        .name("rally")
        .participant(big("ping"))
        .participant(big("pong"))
        .router(
            Router::builder()
                .add_route("user", "ping")
                .add_route("ping", "pong")
                .add_route("pong", "ping"),
        )
        .stop_condition(StopCondition::max_messages(messages))
        .build()
        .unwrap()
}

fn counting(count: &Arc<AtomicU64>) -> EventSink {
    let count = count.clone();
    EventSink::callback(move |_| {
        count.fetch_add(1, Ordering::SeqCst);
    })
}

// Several workers: with the old synchronous sink, the run actor's blocked
// write would have held one, and the guard would still fire on another.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_finishes_while_its_json_lines_go_into_a_pipe_nobody_reads() {
    let (reader, writer) = std::io::pipe().unwrap();
    // Nobody reads, so the writer blocks in a write — from its first one,
    // whatever the pipe's size and however fast the run goes, so the end
    // of the run finds the queue full every time. The writer is blocked
    // before the run starts (one event of its own, written once the
    // writer thread runs): on a loaded machine a writer thread that first
    // ran late in the run would free a slot then, and the run's last
    // event would take it.
    let gate = Arc::new((Mutex::new(false), Condvar::new()));
    let (entered, blocked) = mpsc::channel();
    let unread = Unread {
        inner: writer,
        gate: gate.clone(),
        entered: Some(entered),
    };
    let json = EventWriter::with_capacity(JsonLines::new(unread), 16);
    json.send(&event("before"));
    blocked.recv().unwrap();
    let emitted = Arc::new(AtomicU64::new(0));
    let sink = EventSink::Many(vec![EventSink::Writer(json.clone()), counting(&emitted)]);

    // Hundreds of events of 4 KiB: far more than the pipe's buffer and
    // the queue hold together.
    let result = guard(rally(200).run_task("serve", &RunContext::with_sink(sink))).await;
    assert!(result.unwrap().final_text().starts_with("p"));
    assert!(
        json.dropped() > 0,
        "the pipe filled up, so events were dropped"
    );

    // Somebody reads at last: the writer catches up. Every event is either
    // written or counted in a notice where it is missing (the last one
    // comes with the flush: the end of the run found the pipe full).
    let total = emitted.load(Ordering::SeqCst) + 1;
    *gate.0.lock().unwrap() = true;
    gate.1.notify_all();
    let reading = std::thread::spawn(move || {
        let (mut lines, mut accounted) = (Vec::new(), 0);
        for line in BufReader::new(reader).lines() {
            let value: serde_json::Value = serde_json::from_str(&line.unwrap()).unwrap();
            accounted += value["count"].as_u64().unwrap_or(1);
            lines.push(value);
            if accounted >= total {
                return lines;
            }
        }
        panic!("the pipe closed before every event was accounted for")
    });
    guard(json.flush()).await;
    let lines = reading.join().unwrap();
    let notices: Vec<u64> = lines
        .iter()
        .filter(|l| l["type"] == "events_dropped")
        .map(|l| l["count"].as_u64().unwrap())
        .collect();
    assert_eq!(notices.iter().sum::<u64>(), json.dropped());
    assert_eq!(
        lines.len() as u64 - notices.len() as u64 + json.dropped(),
        total
    );
    assert_eq!(lines[0]["path"], "before");
    assert_eq!(lines[1]["type"], "run_started");
    assert_eq!(lines.last().unwrap()["type"], "events_dropped");
}

/// A pipe's write end whose reader has not started: every write waits
/// until the gate opens, as one into a full pipe waits for a reader.
struct Unread<W> {
    inner: W,
    gate: Arc<(Mutex<bool>, Condvar)>,
    /// Told when the first write begins (then waits at the gate).
    entered: Option<mpsc::Sender<()>>,
}

impl<W: Write> Write for Unread<W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        if let Some(entered) = self.entered.take() {
            let _ = entered.send(());
        }
        let (open, opened) = &*self.gate;
        let mut open = open.lock().unwrap();
        while !*open {
            open = opened.wait(open).unwrap();
        }
        drop(open);
        self.inner.write(bytes)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// A `Write` into shared memory.
#[derive(Clone, Default)]
struct Buffer(Arc<Mutex<Vec<u8>>>);

impl Write for Buffer {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn in_the_normal_case_every_event_arrives_in_order() {
    let buffer = Buffer::default();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let json = EventSink::json_lines(buffer.clone());
    let sink = EventSink::Many(vec![
        json.clone(),
        EventSink::callback(move |e| log.lock().unwrap().push(serde_json::to_string(e).unwrap())),
    ]);
    let step = |name: &'static str| FnAgent::sync(name, move |_: &Thread| Ok(name));
    let graph = Graph::builder()
        .add_agent(step("draft"))
        .add_agent(step("review"))
        .add_agent(step("publish"))
        .add_edge("draft", "review")
        .add_loop_with_limit("review", "draft", Condition::text_contains("no"), 3)
        .add_transition("review", "publish", Condition::text_contains("review"))
        .build()
        .unwrap();
    let wf = Workflow::builder()
        .name("desk")
        .graph(graph)
        .build()
        .unwrap();
    let ctx = RunContext::with_sink(sink);
    for task in ["one", "two"] {
        guard(wf.run_task(task, &ctx)).await.unwrap();
    }
    json.flush().await;

    let text = String::from_utf8(buffer.0.lock().unwrap().clone()).unwrap();
    let written: Vec<&str> = text.lines().collect();
    let sent = seen.lock().unwrap();
    assert!(sent.len() > 20, "two runs of three steps: {}", sent.len());
    assert_eq!(written, *sent);
    assert!(!text.contains("events_dropped"));
}

/// An output that blocks on its first event until told to go on, and
/// reports each line it writes.
struct Gate {
    started: mpsc::Sender<()>,
    go: Option<mpsc::Receiver<()>>,
    wrote: mpsc::Sender<String>,
}

impl EventOutput for Gate {
    fn write(&mut self, event: &EventRecord) -> std::io::Result<()> {
        if let Some(go) = self.go.take() {
            let _ = self.started.send(());
            let _ = go.recv();
        }
        let line = match &event.event {
            Event::EventsDropped { path, count } => format!("dropped {count} from {path}"),
            other => other.path().to_string(),
        };
        let _ = self.wrote.send(line);
        Ok(())
    }
}

/// A writer over a [`Gate`] already holding its first event, `e1`: the
/// handle to let it go on, and the lines it writes.
fn held_writer(capacity: usize) -> (EventWriter, mpsc::Sender<()>, mpsc::Receiver<String>) {
    let (started, started_rx) = mpsc::channel();
    let (go_tx, go) = mpsc::channel();
    let (wrote, lines) = mpsc::channel();
    let writer = EventWriter::with_capacity(
        Gate {
            started,
            go: Some(go),
            wrote,
        },
        capacity,
    );
    writer.send(&event("e1"));
    started_rx.recv().unwrap();
    (writer, go_tx, lines)
}

fn event(path: &str) -> EventRecord {
    Event::Warning {
        path: path.into(),
        text: String::new(),
    }
    .into()
}

#[test]
fn a_gap_at_the_end_is_reported_by_the_flush() {
    let (writer, go, lines) = held_writer(2);
    // The writer holds e1: the queue takes two more, then drops.
    for p in ["e2", "e3", "e4", "e5"] {
        writer.send(&event(p));
    }
    assert_eq!(writer.dropped(), 2);
    go.send(()).unwrap();
    futures::executor::block_on(writer.flush());
    writer.send(&event("e6"));
    futures::executor::block_on(writer.flush());
    let written: Vec<String> = lines.try_iter().collect();
    assert_eq!(written, ["e1", "e2", "e3", "dropped 2 from e4", "e6"]);
    assert_eq!(writer.dropped(), 2);
}

#[test]
fn a_gap_is_reported_before_the_next_event_that_fits() {
    let (writer, go, lines) = held_writer(1);
    writer.send(&event("e2"));
    writer.send(&event("e3"));
    assert_eq!(writer.dropped(), 1);
    go.send(()).unwrap();
    assert_eq!(lines.recv().unwrap(), "e1");
    // Once e2 is written the queue is empty: e4 fits, after the notice.
    assert_eq!(lines.recv().unwrap(), "e2");
    writer.send(&event("e4"));
    assert_eq!(lines.recv().unwrap(), "dropped 1 from e3");
    assert_eq!(lines.recv().unwrap(), "e4");
    assert_eq!(writer.dropped(), 1);
}

#[test]
fn a_gap_left_when_the_sink_goes_away_is_still_reported() {
    let (writer, go, lines) = held_writer(1);
    writer.send(&event("e2"));
    writer.send(&event("e3"));
    go.send(()).unwrap();
    assert_eq!(lines.recv().unwrap(), "e1");
    assert_eq!(lines.recv().unwrap(), "e2");
    drop(writer);
    // The writer ends with the last handle, writing the notice first.
    let rest: Vec<String> = lines.iter().collect();
    assert_eq!(rest, ["dropped 1 from e3"]);
}
