//! [`EventWriter`]: a sink's I/O on a thread of its own, fed by a bounded
//! queue, so that a slow or blocked consumer never stalls a run.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::{mpsc, oneshot};

use crate::event::{Event, EventRecord};

/// The slow half of a sink: what the writer thread does with each event.
///
/// Implemented by [`JsonLines`](super::JsonLines) and
/// [`ConsoleLines`](super::ConsoleLines); implement it for any other output
/// (a socket, a log service) and hand it to [`EventWriter::new`]. Write
/// errors are ignored by the writer: events are best effort, and a full
/// disk must not fail a run.
pub trait EventOutput: Send + 'static {
    /// Writes one event. It may block: only the writer thread waits.
    fn write(&mut self, event: &EventRecord) -> std::io::Result<()>;

    /// Pushes out what [`write`](EventOutput::write) buffered. Called each
    /// time the writer has caught up with the queue, on
    /// [`EventWriter::flush`], and when the writer ends.
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Events lost since the last one the queue accepted.
#[derive(Default)]
struct Gap {
    count: u64,
    /// The first event lost: its run, number and path.
    first: Option<(Arc<str>, u64, Arc<str>)>,
}

impl Gap {
    /// The notice to write where the gap is, if there is one.
    /// It carries the run and number of the first event lost.
    fn notice(&self) -> Option<EventRecord> {
        let (run_id, seq, path) = self.first.clone()?;
        (self.count > 0).then(|| {
            EventRecord::new(
                run_id,
                seq,
                Event::EventsDropped {
                    path,
                    count: self.count,
                },
            )
        })
    }
}

/// One slot of the queue: a notice of lost events to write first, the
/// event, and whoever waits for the writer to get this far.
struct Item {
    notice: Option<EventRecord>,
    event: Option<EventRecord>,
    done: Option<oneshot::Sender<()>>,
}

struct Shared {
    tx: mpsc::Sender<Item>,
    /// Locked for every send, so that the queue's order is the order of
    /// the sends and a gap's notice lands exactly where the gap is.
    gap: Mutex<Gap>,
    dropped: AtomicU64,
    capacity: usize,
}

fn lock(gap: &Mutex<Gap>) -> MutexGuard<'_, Gap> {
    // A counter stays meaningful even if a sender panicked holding it.
    gap.lock().unwrap_or_else(|p| p.into_inner())
}

impl Drop for Shared {
    fn drop(&mut self) {
        // Lost events at the very end: say so, if there is room.
        let gap = self.gap.get_mut().unwrap_or_else(|p| p.into_inner());
        let notice = gap.notice();
        if notice.is_some() {
            let _ = self.tx.try_send(Item {
                notice,
                event: None,
                done: None,
            });
        }
    }
}

/// Runs an [`EventOutput`] on a thread of its own, fed by a bounded queue.
///
/// **When the queue is full** — the output is slower than the run, or
/// blocked (a pipe nobody reads) — an event is dropped and counted, never
/// waited for: a run is never stalled by its events, and the queue never
/// holds more than its capacity ([`DEFAULT_CAPACITY`](Self::DEFAULT_CAPACITY)
/// events unless told otherwise). Once the queue accepts events again, the
/// writer first writes an [`Event::EventsDropped`] saying how many were lost
/// (and the path of the first), exactly where they are missing; a gap at
/// the very end is reported by [`flush`](Self::flush), or when the last
/// clone of the writer is dropped. [`dropped`](Self::dropped) counts every
/// event lost so far.
///
/// Events reach the output in the order they were sent. The thread ends
/// when the last clone is dropped, after writing what is queued; a program
/// about to exit awaits [`flush`](Self::flush) so that nothing queued is
/// lost.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use std::sync::{Arc, Mutex};
/// use troupe_runtime::{Event, sink::EventOutput, event::EventRecord, sink::EventWriter};
///
/// struct Collect(Arc<Mutex<Vec<String>>>);
/// impl EventOutput for Collect {
///     fn write(&mut self, event: &EventRecord) -> std::io::Result<()> {
///         self.0.lock().unwrap().push(event.path().to_string());
///         Ok(())
///     }
/// }
///
/// let seen = Arc::new(Mutex::new(Vec::new()));
/// let writer = EventWriter::with_capacity(Collect(seen.clone()), 16);
/// writer.send(&Event::Warning { path: "team/a".into(), text: "hi".into() }.into());
/// writer.flush().await; // everything sent before is written
/// assert_eq!(*seen.lock().unwrap(), ["team/a"]);
/// assert_eq!(writer.dropped(), 0);
/// # }
/// ```
#[derive(Clone)]
pub struct EventWriter {
    shared: Arc<Shared>,
}

impl fmt::Debug for EventWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("EventWriter")
            .field("capacity", &self.shared.capacity)
            .field("dropped", &self.dropped())
            .finish()
    }
}

impl EventWriter {
    /// The queue's capacity when none is given, in events: enough to ride
    /// out a burst (a terminal scrolling, a busy disk) without losing any.
    pub const DEFAULT_CAPACITY: usize = 8192;

    /// Starts a writer thread for `output` with the default capacity.
    pub fn new(output: impl EventOutput) -> Self {
        Self::with_capacity(output, Self::DEFAULT_CAPACITY)
    }

    /// Starts a writer thread for `output`, queueing at most `capacity`
    /// events (at least one).
    ///
    /// Should the operating system refuse a thread, every event sent is
    /// counted as dropped.
    pub fn with_capacity(output: impl EventOutput, capacity: usize) -> Self {
        let capacity = capacity.max(1);
        let (tx, rx) = mpsc::channel(capacity);
        // On failure the receiver is dropped with the closure: sends then
        // fail, and are counted.
        let _ = std::thread::Builder::new()
            .name("troupe-events".into())
            .spawn(move || write_all(rx, output));
        EventWriter {
            shared: Arc::new(Shared {
                tx,
                gap: Mutex::new(Gap::default()),
                dropped: AtomicU64::new(0),
                capacity,
            }),
        }
    }

    /// Queues `event` for the writer; never waits. If the queue is full the
    /// event is dropped and counted (see the type's documentation).
    pub fn send(&self, event: &EventRecord) {
        let mut gap = lock(&self.shared.gap);
        let item = Item {
            notice: gap.notice(),
            event: Some(event.clone()),
            done: None,
        };
        if self.shared.tx.try_send(item).is_ok() {
            *gap = Gap::default();
        } else {
            gap.count += 1;
            if gap.first.is_none() {
                gap.first = Some((event.run_id.clone(), event.seq, Arc::from(event.path())));
            }
            self.shared.dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Completes once everything sent before has been written and the
    /// output flushed, with a notice of any events lost at the end. Only
    /// the caller waits (for room in the queue, then for the writer); the
    /// run goes on. Returns at once if the writer thread is gone.
    pub async fn flush(&self) {
        let Ok(permit) = self.shared.tx.reserve().await else {
            return;
        };
        let (done, written) = oneshot::channel();
        {
            let mut gap = lock(&self.shared.gap);
            permit.send(Item {
                notice: gap.notice(),
                event: None,
                done: Some(done),
            });
            *gap = Gap::default();
        }
        // An error only means the writer thread is gone.
        let _ = written.await;
    }

    /// How many events were dropped so far because the queue was full.
    pub fn dropped(&self) -> u64 {
        self.shared.dropped.load(Ordering::Relaxed)
    }

    /// The queue's capacity, in events.
    pub fn capacity(&self) -> usize {
        self.shared.capacity
    }
}

/// The writer thread: writes items in order, flushing whenever it has
/// caught up, until every sender is gone.
fn write_all(mut rx: mpsc::Receiver<Item>, mut output: impl EventOutput) {
    while let Some(item) = rx.blocking_recv() {
        for event in item.notice.iter().chain(item.event.iter()) {
            let _ = output.write(event);
        }
        if item.done.is_some() || rx.is_empty() {
            let _ = output.flush();
        }
        if let Some(done) = item.done {
            let _ = done.send(());
        }
    }
    let _ = output.flush();
}
