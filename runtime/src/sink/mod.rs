//! [`EventSink`]: where a run's events go. Sinks that do I/O hand their
//! events to an [`EventWriter`] thread, so the run never waits for them.

mod outputs;
mod writer;

pub use outputs::{ConsoleLines, JsonLines, json_line};
pub use writer::{EventOutput, EventWriter};

use std::fmt;
use std::path::Path;
use std::sync::Arc;

use tokio::sync::mpsc;

use crate::event::EventRecord;

/// Where events go.
///
/// Events are sent from inside the run's actors, so a sink must never make
/// them wait. Every sink that does I/O — [`console`](Self::console),
/// [`json_lines`](Self::json_lines), [`json_lines_file`](Self::json_lines_file),
/// [`background`](Self::background) — is an [`EventSink::Writer`]: its
/// events are queued for a thread of its own, and a slow or blocked
/// consumer (a terminal scrolling, a pipe nobody reads) never stalls a run.
///
/// **When the queue is full**, events are dropped and counted, never waited
/// for, and memory stays bounded: the queue holds at most
/// [`EventWriter::DEFAULT_CAPACITY`] events (8192; choose another with
/// [`EventWriter::with_capacity`]). As soon as the writer catches up, it
/// writes an [`Event::EventsDropped`](crate::Event::EventsDropped) where the events are missing, saying
/// how many (in JSON lines: `{…,"type":"events_dropped","path":…,"count":N}`).
/// So nothing is lost silently.
///
/// **Before a program exits**, await [`flush`](Self::flush): it returns once
/// every event sent so far is written and flushed (the `troupe` CLI does so
/// before printing the result). Writers also end on their own, writing what
/// is queued, when the last clone of their sink is dropped.
///
/// [`Callback`](Self::Callback) runs on the actor that emits the event:
/// keep it quick and never block in it (collect, count, forward to a
/// channel); give anything slower to [`background`](Self::background).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use troupe_runtime::{sink::EventSink, FnAgent, RunContext, Thread, Workflow};
///
/// let file = tempfile::NamedTempFile::new()?;
/// let sink = EventSink::json_lines_file(file.path())?;
/// let ctx = RunContext::with_sink(sink.clone());
/// let solo = Workflow::builder()
///     .participant(FnAgent::sync("echo", |_: &Thread| Ok("hi")))
///     .build()?;
/// solo.run_task("go", &ctx).await?;
/// sink.flush().await; // every event of the run is in the file now
/// let log = std::fs::read_to_string(file.path())?;
/// assert!(log.lines().last().unwrap_or_default().contains("\"type\":\"run_finished\""));
/// # Ok(()) }
/// ```
#[derive(Clone, Default)]
pub enum EventSink {
    /// Nowhere (events are not even built).
    #[default]
    None,
    /// Queued for a writer thread that does the I/O (see the type's
    /// documentation for what happens when it falls behind).
    Writer(EventWriter),
    /// Sent to an unbounded channel (see `RunContext::stream`): nothing is
    /// dropped, and the reader decides the pace.
    Channel(mpsc::UnboundedSender<EventRecord>),
    /// Handed to a function, on the actor that emits the event.
    Callback(Arc<dyn Fn(&EventRecord) + Send + Sync>),
    /// Sent to every sink listed.
    Many(Vec<EventSink>),
}

impl fmt::Debug for EventSink {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EventSink::None => f.write_str("None"),
            EventSink::Writer(w) => f.debug_tuple("Writer").field(w).finish(),
            EventSink::Channel(_) => f.write_str("Channel"),
            EventSink::Callback(_) => f.write_str("Callback"),
            EventSink::Many(v) => f.debug_list().entries(v).finish(),
        }
    }
}

impl EventSink {
    /// Prints events on stdout, one readable line each, from a writer
    /// thread.
    pub fn console() -> Self {
        EventSink::Writer(EventWriter::new(ConsoleLines))
    }

    /// Writes events as JSON lines into a file (created or truncated), from
    /// a writer thread.
    pub fn json_lines_file(path: impl AsRef<Path>) -> std::io::Result<Self> {
        let file = std::fs::File::create(path)?;
        Ok(Self::json_lines(std::io::BufWriter::new(file)))
    }

    /// Writes events as JSON lines into any writer, from a writer thread.
    pub fn json_lines(writer: impl std::io::Write + Send + 'static) -> Self {
        EventSink::Writer(EventWriter::new(JsonLines::new(writer)))
    }

    /// Hands each event to `f` on the actor that emits it (`f` must be
    /// quick; see [`background`](Self::background)).
    pub fn callback(f: impl Fn(&EventRecord) + Send + Sync + 'static) -> Self {
        EventSink::Callback(Arc::new(f))
    }

    /// Hands each event to `f` on a writer thread, in order: for functions
    /// that print, write or otherwise may block.
    pub fn background(f: impl FnMut(&EventRecord) + Send + 'static) -> Self {
        EventSink::Writer(EventWriter::new(outputs::FnOutput(f)))
    }

    /// Completes once every event sent so far through this sink's writers
    /// has been written and flushed (at once for sinks without a writer).
    pub async fn flush(&self) {
        for writer in self.writers() {
            writer.flush().await;
        }
    }

    /// The writers in this sink, however deeply `Many` nests them.
    fn writers(&self) -> Vec<&EventWriter> {
        let mut found = Vec::new();
        let mut todo = vec![self];
        while let Some(sink) = todo.pop() {
            match sink {
                EventSink::Writer(w) => found.push(w),
                EventSink::Many(sinks) => todo.extend(sinks.iter().rev()),
                EventSink::None | EventSink::Channel(_) | EventSink::Callback(_) => {}
            }
        }
        found
    }

    pub(crate) fn is_none(&self) -> bool {
        matches!(self, EventSink::None)
    }

    pub(crate) fn send(&self, event: &EventRecord) {
        match self {
            EventSink::None => {}
            EventSink::Writer(w) => w.send(event),
            // A closed receiver means nobody listens any more: not an error.
            EventSink::Channel(tx) => {
                let _ = tx.send(event.clone());
            }
            EventSink::Callback(f) => f(event),
            EventSink::Many(sinks) => sinks.iter().for_each(|s| s.send(event)),
        }
    }
}
