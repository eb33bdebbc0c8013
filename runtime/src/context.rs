//! [`RunContext`]: what every agent turn is given besides its thread — where
//! events go, cancellation, a graceful stop, the deadline and the path of
//! the caller.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::SystemTime;

use tokio::sync::mpsc;
use tokio::time::Instant;
use tokio_util::sync::CancellationToken;

use crate::event::{Event, EventRecord};
use crate::message::{Message, Usage};
use crate::progress::{Progress, ProgressRelay};
use crate::state::StateSnapshot;
use crate::stats::{AgentStats, Meter};
use crate::thread::Thread;
use crate::until_cancelled::UntilCancelled;
// Re-exported for the modules that take sinks and contexts together.
pub(crate) use crate::event_stream::EventStream;
pub(crate) use crate::sink::EventSink;

#[derive(Clone)]
struct Inner {
    sink: EventSink,
    cancel: CancellationToken,
    /// Whether whoever polls the work under this context drops it as soon
    /// as `cancel` is cancelled (a workflow run's participants' turns):
    /// see [`RunContext::is_dropped_on_cancel`]. Never copied into a
    /// context derived for something else, nor kept with another token.
    dropped_on_cancel: bool,
    /// Set to stop gracefully: no new turn starts, turns under way finish.
    stop: CancellationToken,
    deadline: Option<Instant>,
    path: Arc<str>,
    /// The run's id; "" until one is given.
    run_id: Arc<str>,
    /// The next event's number, shared by every context derived from
    /// the one made with the sink.
    seq: Arc<AtomicU64>,
    /// Set on a turn's own context only (never copied into another):
    /// where a nested run over the turn's thread reports its progress.
    progress: Option<Progress>,
    state: StateSnapshot,
    /// Where the turn this context runs under records what it spends
    /// (see [`crate::stats::RunStats`]); none outside a workflow run.
    meter: Option<Meter>,
    /// The tracing span what this context starts is parented under (see
    /// `telemetry`): carried explicitly, as runs and turns go on other tasks.
    span: ParentSpan,
}

/// A context's span: boxed, and not even that when it is no span at all
/// (tracing off, as it mostly is) — a span is 40 bytes, a fifth of every
/// context, and a run makes one context per participant.
#[derive(Clone)]
struct ParentSpan(Option<Box<tracing::Span>>);

impl ParentSpan {
    fn new(span: tracing::Span) -> Self {
        if span.is_none() && span.metadata().is_none() {
            ParentSpan(None)
        } else {
            ParentSpan(Some(Box::new(span)))
        }
    }

    fn get(&self) -> &tracing::Span {
        static NONE: tracing::Span = tracing::Span::none();
        self.0.as_deref().unwrap_or(&NONE)
    }
}

/// What a run (and every agent turn in it) is given: the event sink,
/// a cancellation token, a graceful-stop signal, an optional deadline, and
/// the path of the workflow or agent it runs as. Cheap to clone.
///
/// Two ways to end a run early: [`cancel`](RunContext::cancel) ends it now
/// (turns under way are cut short and run again on resume);
/// [`stop_gracefully`](RunContext::stop_gracefully) starts no new turn,
/// lets the turns under way finish, and ends it as
/// [`RunStatus::Interrupted`](crate::RunStatus::Interrupted). Both reach
/// every context started under this one, so nested runs stop too. A
/// cancellation flows only down; a graceful stop is asked of the whole
/// run: the contexts of one run tree share it.
///
/// ```
/// use troupe_runtime::RunContext;
///
/// let ctx = RunContext::new();
/// let child = ctx.child("writer");
/// ctx.stop_gracefully();
/// assert!(child.is_stopping()); // a graceful stop reaches what it started
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
            .field("stopping", &self.inner.stop.is_cancelled())
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
                dropped_on_cancel: false,
                stop: CancellationToken::new(),
                deadline: None,
                path: Arc::from(""),
                run_id: Arc::from(""),
                seq: Arc::new(AtomicU64::new(0)),
                progress: None,
                state: StateSnapshot::default(),
                meter: None,
                span: ParentSpan::new(tracing::Span::current()),
            }),
        }
    }

    /// A context streaming its events, and the stream to read them from.
    pub fn stream() -> (Self, EventStream) {
        let (tx, rx) = mpsc::unbounded_channel();
        (
            Self::with_sink(EventSink::Channel(tx)),
            EventStream::from_receiver(rx),
        )
    }

    /// The same context with another cancellation token (for example one the
    /// caller also holds).
    pub fn with_cancellation(&self, cancel: CancellationToken) -> Self {
        self.with(|inner| {
            inner.cancel = cancel;
            inner.dropped_on_cancel = false;
        })
    }

    /// The same context with a deadline: runs under it stop when it passes.
    pub fn with_deadline(&self, deadline: Instant) -> Self {
        self.with(|inner| inner.deadline = Some(deadline))
    }

    /// The same context with another event sink.
    pub fn with_events(&self, sink: EventSink) -> Self {
        self.with(|inner| inner.sink = sink)
    }

    /// The same context naming the run: checkpoints are saved under this
    /// id (one is made up when none is given).
    pub fn with_run_id(&self, run_id: impl Into<Arc<str>>) -> Self {
        let run_id = run_id.into();
        self.with(|inner| inner.run_id = run_id)
    }

    /// This context naming the run (as [`RunContext::with_run_id`]),
    /// changed in place when no one else holds it: a run's own context,
    /// made for it, is not copied once more just to be named.
    pub(crate) fn into_run_id(mut self, run_id: impl Into<Arc<str>>) -> Self {
        let run_id = run_id.into();
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => {
                // As `with` leaves it: a turn's hook stays with the turn.
                inner.progress = None;
                inner.run_id = run_id;
                self
            }
            None => self.with(|inner| inner.run_id = run_id),
        }
    }

    /// A copy of this context changed by `edit` (sharing its tokens unless
    /// `edit` replaces them).
    fn with(&self, edit: impl FnOnce(&mut Inner)) -> Self {
        let mut inner = (*self.inner).clone();
        // A turn's progress hook is never copied into another context.
        inner.progress = None;
        edit(&mut inner);
        RunContext {
            inner: Arc::new(inner),
        }
    }

    /// The tracing span that runs and turns started under this context are
    /// children of: the span current where the context was made, or one
    /// given with [`RunContext::with_span`] (a run's supervisor gives each
    /// turn its run's or superstep's span).
    pub fn span(&self) -> &tracing::Span {
        self.inner.span.get()
    }

    /// The same context parenting what it starts under `span` (a turn's
    /// context keeps its progress hook: it is still the same turn's).
    pub fn with_span(&self, span: tracing::Span) -> Self {
        let mut inner = (*self.inner).clone();
        inner.span = ParentSpan::new(span);
        RunContext {
            inner: Arc::new(inner),
        }
    }

    /// The run id given with [`RunContext::with_run_id`], if any.
    pub fn run_id(&self) -> Option<&Arc<str>> {
        Some(&self.inner.run_id).filter(|id| !id.is_empty())
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
        self.with(|inner| inner.state = state)
    }

    /// A context for something this one starts: its path gains `/name`,
    /// its cancellation follows this one's (but not the other way), and it
    /// shares this one's graceful stop.
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

    /// A context for something this one starts, at `path`, cancelled by
    /// `cancel`; it shares this one's graceful stop (a token per context,
    /// as cancellation has, cost every participant of every run an
    /// allocation and a registration with its parent, for a signal that
    /// is only ever asked of a run as a whole).
    pub(crate) fn derive(
        &self,
        path: Arc<str>,
        cancel: CancellationToken,
        deadline: Option<Instant>,
    ) -> Self {
        self.derive_metered(path, cancel, deadline, self.inner.meter.clone())
    }

    /// [`derive`](RunContext::derive) with `meter` as the new context's
    /// meter. Built field by field: cloning this context's token only to
    /// drop it for `cancel` cost two locks of the token tree.
    pub(crate) fn derive_metered(
        &self,
        path: Arc<str>,
        cancel: CancellationToken,
        deadline: Option<Instant>,
        meter: Option<Meter>,
    ) -> Self {
        let me = &*self.inner;
        RunContext {
            inner: Arc::new(Inner {
                sink: me.sink.clone(),
                cancel,
                dropped_on_cancel: false,
                stop: me.stop.clone(),
                deadline,
                path,
                run_id: me.run_id.clone(),
                seq: me.seq.clone(),
                // A turn's progress hook is never copied into another
                // context.
                progress: None,
                state: me.state.clone(),
                meter,
                span: me.span.clone(),
            }),
        }
    }

    /// The same context carrying `progress`, the hook of a turn.
    pub(crate) fn with_progress(&self, progress: Progress) -> Self {
        let mut inner = (*self.inner).clone();
        inner.progress = Some(progress);
        RunContext {
            inner: Arc::new(inner),
        }
    }

    /// The progress hook of this turn, if it was lent `thread` itself.
    pub(crate) fn progress_for(&self, thread: &Arc<Thread>) -> Option<Progress> {
        self.inner
            .progress
            .as_ref()
            .filter(|p| p.lent(thread))
            .cloned()
    }

    /// For an agent whose turn runs a workflow over a thread of its own
    /// (not `lent`, the thread its turn was lent): the way that run
    /// reports its progress as part of this turn's, `wrap` putting the
    /// run's thread (as a checkpoint would hold it) into the turn's. The
    /// run above then checkpoints with it, and if the turn is cut short
    /// it runs again over the thread so reported, in which the agent finds
    /// its run's thread to go on from. `None` when the run above does not
    /// checkpoint (nothing to report to) or `lent` is not this turn's
    /// thread.
    pub fn relay_progress(
        &self,
        lent: &Arc<Thread>,
        wrap: impl Fn(Thread) -> Thread + Send + Sync + 'static,
    ) -> Option<ProgressRelay> {
        self.progress_for(lent)
            .map(|hook| ProgressRelay::new(&hook, wrap))
    }

    /// The same context for a turn over `thread` whose workflow (run as an
    /// agent, [`Agent::run`](crate::Agent::run)) reports its progress
    /// through `relay` (see [`RunContext::relay_progress`]).
    pub fn with_progress_relay(&self, relay: &ProgressRelay, thread: &Arc<Thread>) -> Self {
        self.with_progress(relay.hook_over(thread))
    }

    /// The path of the workflow or agent running under this context.
    pub fn path(&self) -> &Arc<str> {
        &self.inner.path
    }

    /// Whether anybody listens to events (so building them is worth it).
    pub fn events_enabled(&self) -> bool {
        !self.inner.sink.is_none()
    }

    /// Reports an event, stamped with the run's id, the next number of
    /// the run's sequence and the time (see [`EventRecord`]).
    pub fn emit(&self, event: Event) {
        if crate::event::log::enabled() {
            crate::event::log::log(&self.inner.run_id, &event);
        }
        if self.events_enabled() {
            self.send(event);
        }
    }

    /// Reports a custom event named `name` carrying `data`, from this
    /// context's agent (an [`Event::Custom`]).
    pub fn emit_custom(&self, name: impl Into<String>, data: serde_json::Value) {
        let path = self.path().clone();
        self.emit_with(|| Event::Custom {
            path,
            name: name.into(),
            data,
        });
    }

    /// Yields `message` as an output of this context's agent's turn, before
    /// the messages of its reply (seed 002's `yield_output`: several
    /// outputs from one turn). When the turn ends, the run appends each to
    /// the threads and reports it (`MessageProduced`) like the reply's
    /// own; the last message of the reply stays the agent's response. A
    /// turn that fails or is cut short yields nothing. Returns `false`
    /// (nothing yielded) outside a participant's turn of a workflow run
    /// (e.g. an agent called as a tool).
    pub fn yield_output(&self, message: Message) -> bool {
        self.meter()
            .is_some_and(|meter| meter.yield_output(self.path(), message))
    }

    /// Reports an event built only if somebody listens (a sink, or a log
    /// subscriber: see `event::log`).
    pub fn emit_with(&self, build: impl FnOnce() -> Event) {
        let logged = crate::event::log::enabled();
        if !logged && !self.events_enabled() {
            return;
        }
        let event = build();
        if logged {
            crate::event::log::log(&self.inner.run_id, &event);
        }
        if self.events_enabled() {
            self.send(event);
        }
    }

    fn send(&self, event: Event) {
        let record = EventRecord {
            run_id: self.inner.run_id.clone(),
            seq: self.inner.seq.fetch_add(1, Ordering::Relaxed),
            time: SystemTime::now(),
            event,
        };
        self.inner.sink.send(&record);
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

    /// Whether whoever polls the work under this context drops it as soon
    /// as the context is cancelled — true for the context a workflow run
    /// gives each participant's turn (the run drops a turn it polls, or
    /// the task running it, when its turns are cancelled). An agent then
    /// need not wait for the cancellation itself while it waits on a
    /// model; [`RunContext::run_until_cancelled`] takes this into account.
    /// A context made from this one for something else (a
    /// [`child`](RunContext::child), another token) says `false`: work
    /// moved to a task of its own is not dropped with the turn, and still
    /// sees the cancellation at its next [`is_cancelled`](RunContext::is_cancelled).
    pub fn is_dropped_on_cancel(&self) -> bool {
        self.inner.dropped_on_cancel
    }

    /// `fut`'s output, or `None` if this context is cancelled first (the
    /// cancellation is checked first at every poll). Under a context whose
    /// work is dropped on cancellation ([`RunContext::is_dropped_on_cancel`])
    /// `fut` runs as is, nothing raced: no waiter registered with the
    /// token, and none unregistered, on every call.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
    /// use troupe_runtime::RunContext;
    ///
    /// let ctx = RunContext::new();
    /// assert_eq!(ctx.run_until_cancelled(async { 7 }).await, Some(7));
    /// ctx.cancel();
    /// assert_eq!(ctx.run_until_cancelled(std::future::pending::<u8>()).await, None);
    /// # });
    /// ```
    pub fn run_until_cancelled<F: std::future::Future>(&self, fut: F) -> UntilCancelled<'_, F> {
        let cancelled = (!self.inner.dropped_on_cancel).then(|| self.inner.cancel.cancelled());
        UntilCancelled::new(fut, cancelled)
    }

    /// This context as a run's participant's, the context of its turns:
    /// seeing run state `state`, and marked as one whose work is dropped
    /// as soon as it is cancelled (see [`RunContext::is_dropped_on_cancel`]).
    pub(crate) fn into_turns(mut self, state: &StateSnapshot) -> Self {
        let edit = |inner: &mut Inner| {
            inner.dropped_on_cancel = true;
            inner.state = state.clone();
        };
        match Arc::get_mut(&mut self.inner) {
            Some(inner) => {
                edit(inner);
                self
            }
            None => self.with(edit),
        }
    }

    /// Asks the run this context belongs to (and everything started under
    /// it) to stop gracefully: no new turn starts, the turns under way finish, a
    /// checkpoint is saved, and the run ends as
    /// [`RunStatus::Interrupted`](crate::RunStatus::Interrupted), from which
    /// [`Workflow::resume`](crate::Workflow::resume) carries on. A
    /// [`cancel`](RunContext::cancel) afterwards still ends it at once.
    pub fn stop_gracefully(&self) {
        self.inner.stop.cancel();
    }

    /// Whether a graceful stop was asked for.
    pub fn is_stopping(&self) -> bool {
        self.inner.stop.is_cancelled()
    }

    /// Completes when a graceful stop is asked for.
    pub async fn stopping(&self) {
        self.inner.stop.cancelled().await
    }

    /// [`stopping`](RunContext::stopping) as a future owning what it
    /// waits on (a run's task keeps one while it waits).
    pub(crate) fn stopping_owned(&self) -> tokio_util::sync::WaitForCancellationFutureOwned {
        self.inner.stop.clone().cancelled_owned()
    }

    /// The deadline, if any.
    pub fn deadline(&self) -> Option<Instant> {
        self.inner.deadline
    }

    /// Records a model call that used `usage` and cost `cost` USD (when
    /// its model is priced) in the turn this context runs under, counted
    /// for this context's path whether the turn then succeeds or fails
    /// (see [`RunStats`](crate::stats::RunStats)). Does nothing outside a run.
    pub fn record_model_call(&self, usage: Usage, cost: Option<f64>) {
        if let Some(meter) = &self.inner.meter {
            let mut spent = AgentStats::default();
            spent.add_model_call(usage, cost);
            meter.record(&self.inner.path, spent);
        }
    }

    /// Records a tool call in the turn this context runs under (see
    /// [`RunContext::record_model_call`]).
    pub fn record_tool_call(&self) {
        if let Some(meter) = &self.inner.meter {
            let spent = AgentStats {
                tool_calls: 1,
                ..AgentStats::default()
            };
            meter.record(&self.inner.path, spent);
        }
    }

    /// The meter of the turn this context runs under.
    pub(crate) fn meter(&self) -> Option<&Meter> {
        self.inner.meter.as_ref()
    }
}
