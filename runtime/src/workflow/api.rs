//! [`Workflow`]: running a workflow — from a thread, from a checkpoint,
//! with an answer to a question, in the background — and a workflow as an
//! [`Agent`] of another.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use tokio::sync::oneshot;

use super::answer;
use super::fallback;
use super::result::{RunResult, RunStream};
use super::run::{RunArgs, RunTask};
use super::snapshot::{self, Resumed};
use super::spec::Spec;
use crate::agent::{Agent, AgentError, Reply};
use crate::context::{EventSink, EventStream, RunContext};
use crate::error::CheckpointError;
use crate::message::{Message, MessageId};
use crate::progress::{Progress, ProgressRelay};
use crate::resumable::request::InputRequest;
use crate::resumable::status::RunStatus;
use crate::run_error::RunError;
use crate::store::{CheckpointId, CheckpointStore};
use crate::thread::Thread;

/// Agents composed into one agent.
///
/// Built from participants and a router (see [`WorkflowBuilder`]). A run is
/// a supervisor task sending turns to one actor per participant (spawned
/// when the participant first has work and shared by every run of the
/// workflow, concurrent ones included, unless
/// [`WorkflowBuilder::reuse_actors`] says otherwise): every agent runs
/// whenever its inbox holds a full batch (or a partial one after its max
/// wait), its messages are routed to the inboxes that accept them, and the
/// run ends when nothing can run and nothing is in flight, when the stop
/// condition holds, or on cancellation.
///
/// One `Workflow` value serves any number of concurrent runs; runs keep all
/// their state in the [`Thread`] they return.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use troupe_runtime::{FnAgent, Message, Router, RunContext, Thread, Workflow};
///
/// let upper = FnAgent::sync("upper", |t: &Thread| {
///     Ok(t.last().map(|m| m.text_content().to_uppercase()).unwrap_or_default())
/// });
/// let exclaim = FnAgent::sync("exclaim", |t: &Thread| {
///     Ok(format!("{}!", t.last().map(|m| m.text_content().into_owned()).unwrap_or_default()))
/// });
/// let workflow = Workflow::builder()
///     .name("shouter")
///     .participant(upper)
///     .participant(exclaim)
///     .router(
///         Router::builder()
///             .add_route("user", "upper")
///             .add_route("upper", "exclaim")
///             .output("exclaim"),
///     )
///     .build()?;
/// let result = workflow.run(Thread::from_messages([Message::user("hi")]), &RunContext::new()).await?;
/// assert_eq!(result.final_text(), "HI!");
/// # Ok(()) }
/// ```
///
/// [`WorkflowBuilder`]: crate::WorkflowBuilder
/// [`WorkflowBuilder::reuse_actors`]: crate::WorkflowBuilder::reuse_actors
#[derive(Clone)]
pub struct Workflow {
    pub(super) spec: Arc<Spec>,
}

impl fmt::Debug for Workflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Workflow")
            .field("name", &self.spec.name)
            .field("participants", &self.spec.names)
            .field("stop", &self.spec.stop)
            .finish()
    }
}

impl Workflow {
    /// The workflow's name.
    pub fn name(&self) -> &str {
        &self.spec.name
    }

    /// The participants' names, in order.
    pub fn participants(&self) -> impl Iterator<Item = &str> {
        self.spec.names.iter().map(|n| &**n)
    }

    /// The router's warnings (routes that can cascade without end).
    pub fn warnings(&self) -> Vec<String> {
        self.spec
            .router
            .warnings()
            .iter()
            .map(|w| w.to_string())
            .collect()
    }

    /// Runs the workflow over `thread` until it completes, stops or is
    /// cancelled. Messages of the thread the workflow has not seen yet (all
    /// of them, the first time) are its input. A thread a run returned
    /// waiting for input keeps that run's counters (its stop condition's,
    /// turns, usage): a run over it counts on from them.
    pub async fn run(
        &self,
        thread: impl Into<Thread>,
        ctx: &RunContext,
    ) -> Result<RunResult, RunError> {
        self.execute(thread.into(), ctx.child(&self.spec.name), true, None, None)
            .await
    }

    /// Runs as [`Workflow::run`] does, as part of an agent's turn: when
    /// the run above checkpoints, this run reports where it stands through
    /// `relay` (see [`RunContext::relay_progress`]) at the points it would
    /// checkpoint, and when it stops gracefully. A thread so reported,
    /// given back, carries the run on from there.
    pub async fn run_relayed(
        &self,
        thread: impl Into<Thread>,
        ctx: &RunContext,
        relay: Option<ProgressRelay>,
    ) -> Result<RunResult, RunError> {
        self.execute(
            thread.into(),
            ctx.child(&self.spec.name),
            true,
            None,
            relay.map(ProgressRelay::into_hook),
        )
        .await
    }

    /// Continues run `run_id` from a checkpoint in `store` (the latest when
    /// `checkpoint` is `None`), exactly where it was. A checkpoint of
    /// another topology, of an unknown format version, or whose bytes fail
    /// their checksum is refused with a [`CheckpointError`] saying which
    /// — but for a damaged latest one, which gives way to the newest good
    /// one before it. The store is first repaired for appending
    /// ([`CheckpointStore::repair`]); a repair and a checkpoint skipped are
    /// [`Event::Warning`](crate::Event::Warning)s.
    /// New checkpoints go to the workflow's own store, under the run id of
    /// `ctx` if it has one, else under `run_id`.
    pub async fn run_from_checkpoint(
        &self,
        store: &dyn CheckpointStore,
        run_id: &str,
        checkpoint: Option<CheckpointId>,
        ctx: &RunContext,
    ) -> Result<RunResult, RunError> {
        let child = ctx.child(&self.spec.name);
        let (cp, snapshot) = fallback::load(&self.spec, store, run_id, checkpoint, &child).await?;
        let resumed = Resumed {
            snapshot,
            parent: cp.id,
            run_id: ctx
                .run_id()
                .map_or_else(|| run_id.to_string(), |r| r.to_string()),
        };
        self.execute(Thread::new(), child, true, Some(resumed), None)
            .await
    }

    /// Continues run `run_id` from the latest checkpoint in the workflow's
    /// own store (see [`Workflow::run_from_checkpoint`]).
    pub async fn resume(&self, run_id: &str, ctx: &RunContext) -> Result<RunResult, RunError> {
        let Some(store) = self.spec.store.clone() else {
            return Err(CheckpointError::NoStore(self.spec.name.clone()).into());
        };
        self.run_from_checkpoint(store.as_ref(), run_id, None, ctx)
            .await
    }

    /// Answers input request `request` of run `run_id` (waiting in its
    /// latest checkpoint in `store`) and runs on. Works across processes:
    /// all it needs is the store.
    ///
    /// A request raised inside a nested workflow, at any depth, has an id
    /// here that names the way down (`team/clerk-…`): the answer reaches
    /// the agent that asked. With several requests open, answer them one
    /// at a time: the run goes on as far as it can and ends waiting for
    /// input again with the others, under the same ids.
    pub async fn respond(
        &self,
        store: &dyn CheckpointStore,
        run_id: &str,
        request: &str,
        answer: impl Into<String>,
        ctx: &RunContext,
    ) -> Result<RunResult, RunError> {
        let child = ctx.child(&self.spec.name);
        fallback::repair(store, run_id, &child).await?;
        let (cp, mut snapshot) = snapshot::load(&self.spec, store, run_id, None).await?;
        answer::deliver(&mut snapshot.thread, run_id, request, answer.into())?;
        snapshot.start_len = snapshot.thread.len();
        let resumed = Resumed {
            snapshot,
            parent: cp.id,
            run_id: run_id.to_string(),
        };
        self.execute(
            Thread::new(),
            ctx.child(&self.spec.name),
            true,
            Some(resumed),
            None,
        )
        .await
    }

    /// Answers input request `request` in a thread a run returned (no store
    /// needed) and runs on (see [`Workflow::respond`]).
    pub async fn respond_in_thread(
        &self,
        mut thread: Thread,
        request: &str,
        answer: impl Into<String>,
        ctx: &RunContext,
    ) -> Result<RunResult, RunError> {
        let run_id = ctx.run_id().map_or("", |r| &**r).to_string();
        answer::deliver(&mut thread, &run_id, request, answer.into())?;
        self.run(thread, ctx).await
    }

    /// The pending input requests of a thread a run returned.
    pub fn pending_requests(thread: &Thread) -> Vec<InputRequest> {
        answer::pending_requests(thread)
    }

    /// Runs the workflow on one user message.
    pub async fn run_task(
        &self,
        task: impl Into<String>,
        ctx: &RunContext,
    ) -> Result<RunResult, RunError> {
        // Not through `run`: its future would keep the thread it is given
        // for the whole run.
        let thread = Thread::from_messages([Message::user(task)]);
        self.execute(thread, ctx.child(&self.spec.name), true, None, None)
            .await
    }

    /// Runs the workflow in the background, streaming its events live.
    pub fn run_stream(&self, thread: impl Into<Thread>, ctx: &RunContext) -> RunStream {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let sink = match ctx.sink() {
            EventSink::None => EventSink::Channel(tx),
            other => EventSink::Many(vec![other.clone(), EventSink::Channel(tx)]),
        };
        let ctx = ctx.with_events(sink);
        let workflow = self.clone();
        let thread = thread.into();
        let handle = tokio::spawn(async move { workflow.run(thread, &ctx).await });
        RunStream::new(EventStream::from_receiver(rx), handle)
    }

    /// Runs with `ctx` already carrying this run's path. Only a top-level
    /// run saves checkpoints: a nested run's state rides in its parent's,
    /// to which it reports its progress through `progress`, if given.
    ///
    /// The run is started when this is called (its callers await it at
    /// once, from their own poll), and what is returned only waits for its
    /// result: an `async fn` would keep its arguments — a thread, a
    /// checkpoint to resume from — in the caller's future for the whole
    /// run, dead bytes in every run waiting on its models.
    pub(super) fn execute(
        &self,
        thread: Thread,
        ctx: RunContext,
        top_level: bool,
        resumed: Option<Resumed>,
        progress: Option<Progress>,
    ) -> impl Future<Output = Result<RunResult, RunError>> + Send + 'static {
        let started = self.start_run(thread, ctx, top_level, resumed, progress);
        async move {
            let (rx, run_path, guard) = started?;
            let result = rx.await.map_or_else(
                |_| {
                    Err(RunError::Runtime {
                        workflow: run_path,
                        reason: "the run's supervisor stopped without a result".into(),
                    })
                },
                |result| *result,
            );
            guard.disarm();
            result
        }
    }

    /// Starts a run (see [`Workflow::execute`]): where its result comes,
    /// its path (for an error), and the guard that cancels it if its
    /// caller stops waiting.
    fn start_run(
        &self,
        thread: Thread,
        ctx: RunContext,
        top_level: bool,
        resumed: Option<Resumed>,
        progress: Option<Progress>,
    ) -> Result<Started, RunError> {
        // A checkpoint's state was checked when it was loaded; a thread's
        // is checked here, before anything of it is used.
        if let Some(state) = thread.state() {
            state
                .scheduler
                .check_version()
                .map_err(|source| RunError::SchedulerState {
                    workflow: ctx.path().to_string(),
                    source,
                })?;
        }
        let (tx, rx) = oneshot::channel();
        let span = crate::telemetry::workflow_span(ctx.span(), &self.spec.name, ctx.path());
        let run_path = ctx.path().to_string();
        // If the caller stops awaiting, the run must not go on unseen.
        let guard = ctx.cancellation().clone().drop_guard();
        let args = RunArgs {
            spec: self.spec.clone(),
            thread,
            ctx,
            reply: tx,
            top_level,
            resumed,
            progress,
            span,
        };
        // The run's supervisor is a plain task (see `RunAddr`).
        match RunTask::start(args) {
            Ok(task) => {
                tokio::spawn(task.run());
                Ok((rx, run_path, guard))
            }
            Err(e) => {
                guard.disarm();
                Err(RunError::Runtime {
                    workflow: run_path,
                    reason: format!("cannot start the run's supervisor: {e}"),
                })
            }
        }
    }
}

/// A run started: where its result comes, its path, and the guard that
/// cancels it if its caller stops waiting.
type Started = (
    oneshot::Receiver<Box<Result<RunResult, RunError>>>,
    String,
    tokio_util::sync::DropGuard,
);

#[async_trait]
impl Agent for Workflow {
    fn name(&self) -> &str {
        &self.spec.name
    }

    fn description(&self) -> &str {
        &self.spec.description
    }

    /// Runs the workflow as one turn of an outer workflow: the reply is the
    /// inner final response (as a message of this workflow's name, its usage
    /// the whole inner run's), and the inner state is kept in the thread.
    ///
    /// If the outer run checkpoints, the inner run reports its progress to
    /// it at every point it would checkpoint, so the outer checkpoints hold
    /// it. An inner run that ends waiting for input replies with no message
    /// and its open questions ([`Reply::inner_requests`]): the outer run
    /// asks them under longer ids and, when one is answered, runs this
    /// workflow again with the answer, which goes to the agent that asked.
    ///
    /// The inner run starts from the outer turn's run state
    /// ([`RunContext::state`]); what it changed there is the reply's state
    /// delta (the outer run keeps the values, the inner thread none).
    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError> {
        let progress = ctx.progress_for(&thread);
        // The outer run keeps its own reference so nothing is lost if this
        // turn is cancelled; the inner run works on a copy.
        let working = Arc::try_unwrap(thread).unwrap_or_else(|shared| (*shared).clone());
        let base = ctx.state().clone();
        let result = self
            .execute(working, ctx, false, None, progress)
            .await
            .map_err(AgentError::workflow)?;
        // Stopped gracefully with the outer run: this turn is cut short,
        // and runs again when the outer run resumes.
        if result.status == RunStatus::Interrupted {
            return Err(AgentError::cancelled());
        }
        let mut thread = result.thread;
        let state = thread
            .state_mut()
            .as_mut()
            .map(|s| s.scheduler.take_values().changes_since(&base))
            .unwrap_or_default();
        if let RunStatus::WaitingForInput(requests) = result.status {
            return Ok(Reply {
                thread: Some(thread),
                inner_requests: requests,
                state,
                ..Reply::default()
            });
        }
        let mut messages = Vec::new();
        if let Some(last) = result.final_response {
            let mut reply = (*last).clone();
            reply.id = MessageId::new();
            reply.source = Arc::from(self.spec.name.as_str());
            reply.usage = Some(result.usage);
            reply
                .metadata
                .insert("inner_source".into(), last.source.to_string());
            // Recorded as already seen, so the next inner run does not take
            // its own answer for new input.
            thread.push(reply.clone());
            let len = thread.len();
            if let Some(state) = thread.state_mut() {
                state.consumed = len;
            }
            messages.push(reply);
        }
        Ok(Reply {
            messages,
            thread: Some(thread),
            state,
            ..Reply::default()
        })
    }
}
