//! [`RunContext`]: what every agent turn is given besides its thread — where
//! events go, cancellation, the deadline and the path of the caller.

use std::fmt;
use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::event::Event;
use crate::state::StateSnapshot;
// Re-exported for the modules that take sinks and contexts together.
pub(crate) use crate::sink::EventSink;

/// The receiving end of [`RunContext::stream`]: events as they happen.
#[derive(Debug)]
pub struct EventStream {
    rx: mpsc::UnboundedReceiver<Event>,
}

impl EventStream {
    pub(crate) fn from_receiver(rx: mpsc::UnboundedReceiver<Event>) -> Self {
        EventStream { rx }
    }

    /// The next event; `None` once every context that could send is gone.
    pub async fn next(&mut self) -> Option<Event> {
        self.rx.recv().await
    }

    /// Events already received, without waiting.
    pub fn drain_ready(&mut self) -> Vec<Event> {
        let mut out = Vec::new();
        while let Ok(e) = self.rx.try_recv() {
            out.push(e);
        }
        out
    }
}

impl futures::Stream for EventStream {
    type Item = Event;
    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<Event>> {
        self.rx.poll_recv(cx)
    }
}

struct Inner {
    sink: EventSink,
    cancel: CancellationToken,
    deadline: Option<Instant>,
    path: Arc<str>,
    run_id: Option<Arc<str>>,
    state: StateSnapshot,
}

/// What a run (and every agent turn in it) is given: the event sink,
/// a cancellation token, an optional deadline, and the path of the
/// workflow or agent it runs as. Cheap to clone.
///
/// ```
/// use troupe_runtime::RunContext;
///
/// let ctx = RunContext::new();
/// let child = ctx.child("writer");
/// ctx.cancel();
/// assert!(child.is_cancelled()); // cancelling a context cancels what it started
/// ```
#[derive(Clone)]
pub struct RunContext {
    inner: Arc<Inner>,
}

impl fmt::Debug for RunContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunContext")
            .field("path", &self.inner.path)
            .field("sink", &self.inner.sink)
            .field("cancelled", &self.inner.cancel.is_cancelled())
            .field("deadline", &self.inner.deadline)
            .finish()
    }
}

impl Default for RunContext {
    fn default() -> Self {
        Self::new()
    }
}

impl RunContext {
    /// A context whose events go nowhere.
    pub fn new() -> Self {
        Self::with_sink(EventSink::None)
    }

    /// A context that prints events on the console (from a writer thread:
    /// see [`EventSink`]).
    pub fn console() -> Self {
        Self::with_sink(EventSink::console())
    }

    /// A context that sends events to `sink`.
    pub fn with_sink(sink: EventSink) -> Self {
        RunContext {
            inner: Arc::new(Inner {
                sink,
                cancel: CancellationToken::new(),
                deadline: None,
                path: Arc::from(""),
                run_id: None,
                state: StateSnapshot::default(),
            }),
        }
    }

    /// A context streaming its events, and the stream to read them from.
    pub fn stream() -> (Self, EventStream) {
        let (tx, rx) = mpsc::unbounded_channel();
        (Self::with_sink(EventSink::Channel(tx)), EventStream { rx })
    }

    /// The same context with another cancellation token (for example one the
    /// caller also holds).
    pub fn with_cancellation(&self, cancel: CancellationToken) -> Self {
        self.derive(self.inner.path.clone(), cancel, self.inner.deadline)
    }

    /// The same context with a deadline: runs under it stop when it passes.
    pub fn with_deadline(&self, deadline: Instant) -> Self {
        self.derive(
            self.inner.path.clone(),
            self.inner.cancel.clone(),
            Some(deadline),
        )
    }

    /// The same context with another event sink.
    pub fn with_events(&self, sink: EventSink) -> Self {
        RunContext {
            inner: Arc::new(Inner {
                sink,
                cancel: self.inner.cancel.clone(),
                deadline: self.inner.deadline,
                path: self.inner.path.clone(),
                run_id: self.inner.run_id.clone(),
                state: self.inner.state.clone(),
            }),
        }
    }

    /// The same context naming the run: checkpoints are saved under this
    /// id (one is made up when none is given).
    pub fn with_run_id(&self, run_id: impl Into<Arc<str>>) -> Self {
        RunContext {
            inner: Arc::new(Inner {
                sink: self.inner.sink.clone(),
                cancel: self.inner.cancel.clone(),
                deadline: self.inner.deadline,
                path: self.inner.path.clone(),
                run_id: Some(run_id.into()),
                state: self.inner.state.clone(),
            }),
        }
    }

    /// The run id given with [`RunContext::with_run_id`], if any.
    pub fn run_id(&self) -> Option<&Arc<str>> {
        self.inner.run_id.as_ref()
    }

    /// The run's state as it was when this turn started: read-only (a
    /// turn changes it through its reply, [`Reply::with_state`](crate::Reply::with_state)),
    /// empty outside a workflow run. A nested workflow's run starts from
    /// the state its parent's turn sees.
    pub fn state(&self) -> &StateSnapshot {
        &self.inner.state
    }

    /// The same context seeing run state `state` (the run's supervisor
    /// gives each turn its snapshot; useful to test an agent alone).
    pub fn with_state(&self, state: StateSnapshot) -> Self {
        RunContext {
            inner: Arc::new(Inner {
                sink: self.inner.sink.clone(),
                cancel: self.inner.cancel.clone(),
                deadline: self.inner.deadline,
                path: self.inner.path.clone(),
                run_id: self.inner.run_id.clone(),
                state,
            }),
        }
    }

    /// A context for something this one starts: its path gains `/name`,
    /// and its cancellation follows this one's (but not the other way).
    pub fn child(&self, name: &str) -> Self {
        self.derive(
            self.child_path(name),
            self.inner.cancel.child_token(),
            self.inner.deadline,
        )
    }

    /// `path/name`, or `name` at the top.
    pub fn child_path(&self, name: &str) -> Arc<str> {
        if self.inner.path.is_empty() {
            Arc::from(name)
        } else {
            Arc::from(format!("{}/{name}", self.inner.path))
        }
    }

    pub(crate) fn derive(
        &self,
        path: Arc<str>,
        cancel: CancellationToken,
        deadline: Option<Instant>,
    ) -> Self {
        RunContext {
            inner: Arc::new(Inner {
                sink: self.inner.sink.clone(),
                cancel,
                deadline,
                path,
                run_id: self.inner.run_id.clone(),
                state: self.inner.state.clone(),
            }),
        }
    }

    /// The path of the workflow or agent running under this context.
    pub fn path(&self) -> &Arc<str> {
        &self.inner.path
    }

    /// Whether anybody listens to events (so building them is worth it).
    pub fn events_enabled(&self) -> bool {
        !self.inner.sink.is_none()
    }

    /// Reports an event.
    pub fn emit(&self, event: Event) {
        self.inner.sink.send(&event);
    }

    /// Reports an event built only if somebody listens.
    pub fn emit_with(&self, build: impl FnOnce() -> Event) {
        if self.events_enabled() {
            self.inner.sink.send(&build());
        }
    }

    /// The event sink.
    pub fn sink(&self) -> &EventSink {
        &self.inner.sink
    }

    /// The cancellation token.
    pub fn cancellation(&self) -> &CancellationToken {
        &self.inner.cancel
    }

    /// Cancels this context and everything started under it.
    pub fn cancel(&self) {
        self.inner.cancel.cancel();
    }

    /// Whether this context was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.inner.cancel.is_cancelled()
    }

    /// Completes when this context is cancelled.
    pub async fn cancelled(&self) {
        self.inner.cancel.cancelled().await
    }

    /// The deadline, if any.
    pub fn deadline(&self) -> Option<Instant> {
        self.inner.deadline
    }
}
