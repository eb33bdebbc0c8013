//! The supervisor actor of one workflow run.
//!
//! It owns the run's scheduling state — every inbox, every thread, the stop
//! tracker — and lends each participant its thread for the length of a turn
//! (an `Arc`, so a turn cut short never loses it). Keeping the state in one
//! place is what makes quiescence detection exact, a shared thread receive a
//! message once, and a checkpoint a plain copy.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use ractor::{Actor, ActorId, ActorProcessingErr, ActorRef, SupervisionEvent};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;
use troupe_router::{Batch, Inbox, Push, Readiness};

use super::agent_actor::{AgentActor, AgentArgs, AgentMsg};
use super::snapshot::{GRAPH_STATE, REQUESTS, RUNNING, Resumed, Snapshot};
use super::{InputRequest, RunResult, RunStatus, Spec};
use crate::agent::{AgentError, Reply};
use crate::codec;
use crate::context::RunContext;
use crate::error::RunError;
use crate::event::Event;
use crate::graph::cursor::Cursor;
use crate::graph::{Isolation, NodeInput, Scheduler};
use crate::message::{Content, Message, MessageId, Usage};
use crate::stop::{StopHandle, StopReason, StopTracker, Trigger};
use crate::store::{Checkpoint, CheckpointId, CheckpointStore};
use crate::thread::{Thread, WorkflowState};

/// Messages the run's supervisor handles.
pub(crate) enum RunMsg {
    /// A participant's turn ended.
    TurnDone {
        index: usize,
        // Boxed: a reply is large and most messages of this enum are small.
        outcome: Box<TurnOutcome>,
        elapsed: Duration,
    },
    /// A partial batch's max wait may have passed.
    Wake { generation: u64 },
    /// A failed turn's backoff is over: run it again.
    Retry { index: usize },
    /// The stop condition's timeout passed.
    Timeout,
    /// The context's deadline passed.
    Deadline,
    /// An external stop handle was set.
    External,
    /// The context was cancelled.
    Cancel,
}

crate::local_message!(RunMsg);

/// How a turn ended.
// Travels boxed (`RunMsg::TurnDone`), so its size does not weigh on the
// mailbox.
#[allow(clippy::large_enum_variant)]
pub(crate) enum TurnOutcome {
    Done(Reply),
    Failed(AgentError),
    Cancelled,
}

pub(crate) struct RunArgs {
    pub(crate) spec: Arc<Spec>,
    pub(crate) thread: Thread,
    pub(crate) ctx: RunContext,
    pub(crate) reply: oneshot::Sender<Result<RunResult, RunError>>,
    pub(crate) top_level: bool,
    pub(crate) resumed: Option<Resumed>,
}

pub(crate) struct RunActor;

struct Part {
    inbox: Inbox<Arc<Message>>,
    actor: Option<ActorRef<AgentMsg>>,
    /// A turn is under way (or waits out a retry's backoff).
    running: bool,
    /// Waiting out a retry's backoff.
    backing_off: bool,
    /// Failed attempts of the current turn.
    attempts: u32,
    ctx: RunContext,
}

/// The graph side of a run.
struct GraphRun {
    cursor: Cursor,
    /// Supersteps: replies of the open superstep, applied at its barrier.
    buffered: Vec<(usize, Reply)>,
    /// Supersteps: the nodes of the open superstep.
    current: Vec<usize>,
    open: bool,
}

enum Failure {
    Failed { agent: String, source: AgentError },
    Panicked { agent: String, message: String },
    Lost { agent: String, reason: String },
    LoopLimit { step: String, limit: u32 },
    SuperstepLimit { limit: u64 },
}

impl Failure {
    fn into_error(self, thread: Thread) -> RunError {
        let thread = Box::new(thread);
        match self {
            Failure::Failed { agent, source } => RunError::AgentFailed {
                agent,
                source,
                thread,
            },
            Failure::Panicked { agent, message } => RunError::AgentPanicked {
                agent,
                message,
                thread,
            },
            Failure::Lost { agent, reason } => RunError::AgentLost {
                agent,
                reason,
                thread,
            },
            Failure::LoopLimit { step, limit } => RunError::LoopLimit {
                step,
                limit,
                thread,
            },
            Failure::SuperstepLimit { limit } => RunError::SuperstepLimit { limit, thread },
        }
    }
}

enum Phase {
    Running,
    Stopping(RunStatus),
    Failing(Failure),
}

pub(crate) struct RunState {
    spec: Arc<Spec>,
    ctx: RunContext,
    /// Cancelled when turns under way must end now.
    turns_token: CancellationToken,
    reply: Option<oneshot::Sender<Result<RunResult, RunError>>>,
    parts: Vec<Part>,
    slots: Vec<Arc<Thread>>,
    used_slots: Vec<bool>,
    /// The run thread's own messages (its children and state are in `slots`
    /// and `state` while the run goes on).
    root: Thread,
    /// Children of the input thread that belong to no slot: kept as they were.
    foreign_children: BTreeMap<String, Thread>,
    state: WorkflowState,
    tracker: Option<StopTracker>,
    in_flight: usize,
    /// Messages waiting in all inboxes together.
    queued: usize,
    phase: Phase,
    last: Option<Arc<Message>>,
    produced: Vec<Arc<Message>>,
    usage: Usage,
    turns: u64,
    started: Instant,
    wake_generation: u64,
    wake_at: Option<SystemTime>,
    watcher: Option<JoinHandle<()>>,
    actor_index: HashMap<ActorId, usize>,
    dirty: Vec<usize>,
    is_dirty: Vec<bool>,
    graph: Option<GraphRun>,
    /// Retries whose backoff is over, to start on the next drive.
    pending_retry: Vec<usize>,
    /// Waiting for a partial batch's max wait (counted in `in_flight`).
    waking: bool,
    run_id: String,
    /// Where checkpoints go (top-level runs with a store only).
    store: Option<Arc<dyn CheckpointStore>>,
    /// The last checkpoint saved (or resumed from).
    parent: Option<CheckpointId>,
    deliveries_since_checkpoint: u64,
    /// Something happened since the last checkpoint.
    changed: bool,
    /// Participants whose turn was cancelled midway.
    cut_short: Vec<usize>,
    /// Input requests raised in this run.
    waiting: Vec<InputRequest>,
    /// Length of the thread before this run produced anything.
    start_len: usize,
}

impl Actor for RunActor {
    type Msg = RunMsg;
    type State = RunState;
    type Arguments = RunArgs;

    async fn pre_start(
        &self,
        myself: ActorRef<RunMsg>,
        args: RunArgs,
    ) -> Result<RunState, ActorProcessingErr> {
        let RunArgs {
            spec,
            thread,
            ctx,
            reply,
            top_level,
            resumed,
        } = args;
        let (mut thread, resumed_from, run_id) = match resumed {
            Some(r) => (
                r.snapshot.thread.clone(),
                Some((r.snapshot, r.parent)),
                r.run_id,
            ),
            None => {
                let id = ctx.run_id().map_or_else(
                    || format!("{}-{}", spec.name, &MessageId::new().to_string()[16..]),
                    |r| r.to_string(),
                );
                (thread, None, id)
            }
        };
        let turns_token = ctx.cancellation().child_token();
        let mut children = std::mem::take(thread.children_mut());
        let mut state = thread.state_mut().take().unwrap_or_default();

        let mut used_slots = vec![false; spec.slot_names.len()];
        for &s in &spec.slot_of {
            used_slots[s] = true;
        }
        let slots = spec
            .slot_names
            .iter()
            .map(|n| Arc::new(children.remove(n).unwrap_or_default()))
            .collect();
        let parts = spec
            .names
            .iter()
            .enumerate()
            .map(|(i, name)| {
                let inbox = spec
                    .router
                    .inbox(i)
                    .ok_or_else(|| format!("the router has no inbox for '{name}'"))?;
                Ok(Part {
                    inbox,
                    actor: None,
                    running: false,
                    backing_off: false,
                    attempts: 0,
                    ctx: ctx.derive(ctx.child_path(name), turns_token.clone(), ctx.deadline()),
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        let tracker = spec.stop.clone().map(StopTracker::new);
        let n = spec.names.len();
        let pending = std::mem::take(&mut state.pending);
        let interrupted: Vec<String> = state
            .data
            .remove(RUNNING)
            .and_then(|t| serde_json::from_str(&t).ok())
            .unwrap_or_default();
        let mut run = RunState {
            spec,
            ctx,
            turns_token,
            reply: Some(reply),
            parts,
            slots,
            used_slots,
            root: thread,
            foreign_children: children,
            state,
            tracker,
            in_flight: 0,
            queued: 0,
            phase: Phase::Running,
            last: None,
            produced: Vec::new(),
            usage: Usage::default(),
            turns: 0,
            started: Instant::now(),
            wake_generation: 0,
            wake_at: None,
            watcher: None,
            actor_index: HashMap::new(),
            dirty: Vec::with_capacity(n),
            is_dirty: vec![false; n],
            graph: None,
            pending_retry: Vec::new(),
            waking: false,
            store: None,
            run_id,
            parent: None,
            deliveries_since_checkpoint: 0,
            changed: true,
            cut_short: Vec::new(),
            waiting: Vec::new(),
            start_len: 0,
        };
        if top_level {
            run.store = run.spec.store.clone();
        }
        if let Some((snapshot, parent)) = resumed_from {
            run.parent = Some(parent);
            if let (Some(t), Some(state)) = (run.tracker.as_mut(), snapshot.stop) {
                t.restore(state);
            }
            run.usage = snapshot.usage;
            run.turns = snapshot.turns;
            run.start_len = snapshot.start_len.min(run.root.len());
            run.last = snapshot.last.and_then(|id| {
                run.root
                    .messages()
                    .iter()
                    .rev()
                    .find(|m| m.id == id)
                    .cloned()
            });
            run.produced = run.root.messages()[run.start_len..].to_vec();
        }
        run.graph = run.spec.graph.as_ref().map(|g| {
            let saved = run
                .state
                .data
                .remove(GRAPH_STATE)
                .and_then(|text| serde_json::from_str::<Cursor>(&text).ok())
                .filter(|c| c.fits(g));
            let mut cursor = saved.unwrap_or_else(|| Cursor::new(g));
            // A graph that ran out of nodes starts again only for new input;
            // resuming a finished run has nothing left to do.
            let fresh_input = run.state.consumed < run.root.len();
            if !cursor.has_next() && fresh_input {
                let entry = g
                    .entry
                    .as_ref()
                    .and_then(|f| f(&run.root, &run.state))
                    .and_then(|name| g.names.iter().position(|n| *n == name));
                match entry {
                    Some(i) => cursor.activate(i),
                    None => g.starts.iter().for_each(|&i| cursor.activate(i)),
                }
            }
            GraphRun {
                cursor,
                buffered: Vec::new(),
                current: Vec::new(),
                open: false,
            }
        });
        run.ctx.emit_with(|| Event::RunStarted {
            path: run.ctx.path().clone(),
            participants: n,
        });
        run.restore_pending(pending);
        for name in interrupted {
            if let Some(i) = run.spec.router.index_of(&name) {
                run.pending_retry.push(i);
            }
        }
        run.take_input();
        if run.start_len == 0 {
            run.start_len = run.root.len();
        }
        run.watcher = Some(run.spawn_watcher(myself));
        Ok(run)
    }

    async fn post_start(
        &self,
        myself: ActorRef<RunMsg>,
        state: &mut RunState,
    ) -> Result<(), ActorProcessingErr> {
        state.drive(&myself).await;
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<RunMsg>,
        message: RunMsg,
        state: &mut RunState,
    ) -> Result<(), ActorProcessingErr> {
        if state.reply.is_none() {
            return Ok(()); // finished; late news changes nothing
        }
        match message {
            RunMsg::TurnDone {
                index,
                outcome,
                elapsed,
            } => state.turn_done(index, *outcome, elapsed, &myself),
            RunMsg::Wake { generation } => {
                if generation == state.wake_generation {
                    state.wake_at = None;
                    if std::mem::take(&mut state.waking) {
                        state.in_flight -= 1;
                    }
                    for i in 0..state.parts.len() {
                        if !state.parts[i].inbox.is_empty() {
                            state.mark_dirty(i);
                        }
                    }
                }
            }
            RunMsg::Retry { index } => state.retry_now(index),
            RunMsg::Timeout => {
                if let Some(reason) = state.observe(Trigger::Timeout) {
                    state.stop_now(RunStatus::Stopped(reason));
                }
            }
            RunMsg::Deadline => state.stop_now(RunStatus::Stopped(StopReason {
                condition: "deadline".into(),
                detail: "the run context's deadline passed".into(),
            })),
            RunMsg::External => {
                if let Some(reason) = state.observe(Trigger::External) {
                    state.stop_gracefully(RunStatus::Stopped(reason));
                }
            }
            RunMsg::Cancel => state.stop_now(RunStatus::Cancelled),
        }
        state.drive(&myself).await;
        Ok(())
    }

    async fn handle_supervisor_evt(
        &self,
        myself: ActorRef<RunMsg>,
        event: SupervisionEvent,
        state: &mut RunState,
    ) -> Result<(), ActorProcessingErr> {
        if state.reply.is_none() {
            return Ok(());
        }
        let (cell, failure) = match event {
            SupervisionEvent::ActorFailed(cell, err) => (cell, Some(err.to_string())),
            SupervisionEvent::ActorTerminated(cell, _, reason) => (cell, reason),
            _ => return Ok(()),
        };
        let Some(index) = state.actor_index.remove(&cell.get_id()) else {
            return Ok(());
        };
        state.parts[index].actor = None;
        let agent = state.parts[index].ctx.path().to_string();
        let was_running = std::mem::replace(&mut state.parts[index].running, false);
        if was_running {
            state.in_flight -= 1;
        }
        match failure {
            Some(message) if was_running && !state.retry_later(index, None, &message, &myself) => {
                state.fail(Failure::Panicked { agent, message });
            }
            reason if was_running => state.fail(Failure::Lost {
                agent,
                reason: reason.unwrap_or_else(|| "its actor was stopped".into()),
            }),
            // An idle actor that went away is spawned again when needed.
            _ => {}
        }
        state.drive(&myself).await;
        Ok(())
    }
}

impl RunState {
    fn mark_dirty(&mut self, i: usize) {
        if !self.is_dirty[i] {
            self.is_dirty[i] = true;
            self.dirty.push(i);
        }
    }

    fn observe(&mut self, trigger: Trigger<'_>) -> Option<StopReason> {
        self.tracker.as_mut().and_then(|t| t.observe(trigger))
    }

    fn restore_pending(&mut self, pending: BTreeMap<String, Vec<Arc<Message>>>) {
        let now = SystemTime::now();
        for (name, messages) in pending {
            match self.spec.router.index_of(&name) {
                Some(i) => {
                    for m in messages {
                        self.push_to(i, m, now, false);
                    }
                }
                None => self.ctx.emit_with(|| Event::Warning {
                    path: self.ctx.path().clone(),
                    text: format!(
                        "{} pending message(s) for '{name}', who is not a participant, were dropped",
                        messages.len()
                    ),
                }),
            }
        }
    }

    /// Delivers the thread's messages that the workflow has not seen yet:
    /// by the router, or — a graph without one — to the nodes about to run.
    fn take_input(&mut self) {
        let from = self.state.consumed.min(self.root.len());
        let fresh: Vec<Arc<Message>> = self.root.messages()[from..].to_vec();
        self.state.consumed = self.root.len();
        let first_nodes: Vec<usize> = match &self.graph {
            Some(g) if self.spec.edge_delivery => g.cursor.next_nodes().to_vec(),
            _ => Vec::new(),
        };
        let now = SystemTime::now();
        for m in fresh {
            if let Some(reason) = self.observe(Trigger::Message {
                message: &m,
                produced: false,
            }) {
                self.stop_gracefully(RunStatus::Stopped(reason));
            }
            if self.spec.edge_delivery {
                for &t in &first_nodes {
                    self.push_to(t, m.clone(), now, false);
                }
            } else {
                self.route(&m.source.clone(), &m);
            }
        }
    }

    /// Puts `m` in `target`'s inbox. `routed` applies the router's sender
    /// filter; messages placed deliberately (along a graph edge, restored
    /// from a checkpoint, an answer to the target's question) skip it.
    fn push_to(&mut self, target: usize, m: Arc<Message>, now: SystemTime, routed: bool) {
        let part = &mut self.parts[target];
        let before = part.inbox.len();
        let id = m.id;
        let outcome = if routed {
            part.inbox.push(m, now)
        } else {
            part.inbox.deliver(m, now)
        };
        self.queued = self.queued + part.inbox.len() - before;
        let wf = &self.ctx;
        let to = &self.spec.names[target];
        let delivered = || Event::MessageDelivered {
            path: wf.path().clone(),
            message: id,
            to: to.to_string(),
        };
        let dropped = |id, reason: String| Event::MessageDropped {
            path: wf.path().clone(),
            message: id,
            to: to.to_string(),
            reason,
        };
        if outcome.is_accepted() {
            self.deliveries_since_checkpoint += 1;
            self.changed = true;
        }
        match outcome {
            Push::Accepted => wf.emit_with(delivered),
            Push::AcceptedWithDrop(d) => {
                wf.emit_with(delivered);
                wf.emit_with(|| dropped(d.message.id, d.reason.to_string()));
            }
            Push::Dropped(d) => wf.emit_with(|| dropped(d.message.id, d.reason.to_string())),
            Push::Rejected(m) => {
                wf.emit_with(|| dropped(m.id, "rejected: the inbox is full".into()))
            }
            Push::Filtered(_) => return,
        }
        self.mark_dirty(target);
    }

    fn route(&mut self, sender: &str, m: &Arc<Message>) {
        let now = SystemTime::now();
        let spec = self.spec.clone();
        for &t in spec.router.targets(sender) {
            self.push_to(t, m.clone(), now, true);
        }
    }

    fn report_dropped(&self, target: usize, batch: &Batch<Arc<Message>>) {
        for d in &batch.dropped {
            self.ctx.emit_with(|| Event::MessageDropped {
                path: self.ctx.path().clone(),
                message: d.message.id,
                to: self.spec.names[target].to_string(),
                reason: d.reason.to_string(),
            });
        }
    }

    fn stop_gracefully(&mut self, status: RunStatus) {
        if matches!(self.phase, Phase::Running) {
            self.phase = Phase::Stopping(status);
        }
    }

    fn stop_now(&mut self, status: RunStatus) {
        match self.phase {
            Phase::Failing(_) => {}
            // Cancellation overrides a graceful stop that is still waiting.
            Phase::Stopping(_) if status != RunStatus::Cancelled => {}
            _ => self.phase = Phase::Stopping(status),
        }
        self.interrupt();
    }

    fn fail(&mut self, failure: Failure) {
        if !matches!(self.phase, Phase::Failing(_)) {
            self.phase = Phase::Failing(failure);
        }
        self.interrupt();
    }

    /// Ends every turn under way now, and every retry still backing off.
    fn interrupt(&mut self) {
        self.turns_token.cancel();
        if std::mem::take(&mut self.waking) {
            self.in_flight -= 1;
        }
        for part in &mut self.parts {
            if part.backing_off {
                part.backing_off = false;
                part.running = false;
                self.in_flight -= 1;
            }
        }
    }

    /// Schedules another attempt of participant `index`'s failed turn if
    /// its retry policy allows; returns whether it did.
    fn retry_later(
        &mut self,
        index: usize,
        kind: Option<crate::agent::ErrorKind>,
        error: &str,
        myself: &ActorRef<RunMsg>,
    ) -> bool {
        if !matches!(self.phase, Phase::Running | Phase::Stopping(_))
            || self.turns_token.is_cancelled()
        {
            return false;
        }
        let Some(policy) = &self.spec.retries[index] else {
            return false;
        };
        let part = &mut self.parts[index];
        part.attempts += 1;
        if !policy.should_retry(part.attempts, kind) {
            return false;
        }
        let delay = policy.delay(part.attempts);
        part.running = true;
        part.backing_off = true;
        self.in_flight += 1;
        self.ctx.emit_with(|| Event::Retry {
            path: part.ctx.path().clone(),
            attempt: part.attempts,
            error: error.to_string(),
            delay_ms: delay.as_secs_f64() * 1e3,
        });
        myself.send_after(delay, move || RunMsg::Retry { index });
        true
    }

    /// A retry's backoff is over: the same turn again, on the same thread.
    fn retry_now(&mut self, index: usize) {
        if !self.parts[index].backing_off {
            return; // interrupted meanwhile
        }
        self.parts[index].backing_off = false;
        self.parts[index].running = false;
        self.in_flight -= 1;
        // Started by the next drive: the actor may have to be spawned again,
        // which takes an await.
        self.pending_retry.push(index);
    }

    fn turn_done(
        &mut self,
        index: usize,
        outcome: TurnOutcome,
        elapsed: Duration,
        myself: &ActorRef<RunMsg>,
    ) {
        let part = &mut self.parts[index];
        if !part.running || part.backing_off {
            return;
        }
        part.running = false;
        self.in_flight -= 1;
        let path = part.ctx.path().clone();
        let reply = match outcome {
            TurnOutcome::Done(reply) => reply,
            TurnOutcome::Failed(source) => {
                let text = source.to_string();
                if !self.retry_later(index, Some(source.kind()), &text, myself) {
                    self.fail(Failure::Failed {
                        agent: path.to_string(),
                        source,
                    });
                }
                return;
            }
            TurnOutcome::Cancelled => {
                // Cut short: it runs again when the run resumes. (A graph's
                // interrupted superstep is re-activated whole instead.)
                if !self.supersteps() {
                    self.cut_short.push(index);
                }
                // The turn may learn of the caller's cancel before the
                // watcher's message arrives: the run is cancelled either way.
                if self.ctx.cancellation().is_cancelled() {
                    self.stop_now(RunStatus::Cancelled);
                }
                return;
            }
        };
        self.parts[index].attempts = 0;
        self.ctx.emit_with(|| Event::AgentFinished {
            path: path.clone(),
            produced: reply.messages.len(),
            elapsed_ms: elapsed.as_secs_f64() * 1e3,
        });
        match &mut self.graph {
            Some(g)
                if self
                    .spec
                    .graph
                    .as_ref()
                    .is_some_and(|g| g.scheduler == Scheduler::Supersteps) =>
            {
                // Applied at the barrier, in node order, so the superstep's
                // outcome does not depend on which turn finished first.
                g.buffered.push((index, reply));
            }
            _ => self.apply_reply(index, reply),
        }
    }

    /// Appends a finished turn's messages, routes them, checks the stop
    /// condition and, in a graph, takes the transitions that hold.
    fn apply_reply(&mut self, index: usize, reply: Reply) {
        self.turns += 1;
        self.state.turns += 1;
        let name = self.spec.names[index].clone();
        let path = self.parts[index].ctx.path().clone();
        self.state.last_speaker = Some(name.to_string());
        let slot = self.spec.slot_of[index];
        if let Some(t) = reply.thread {
            self.slots[slot] = Arc::new(t);
        }
        if let Some(prompt) = &reply.request {
            let request = InputRequest {
                id: format!("{}-{}", name, &MessageId::new().to_string()[24..]),
                agent: name.to_string(),
                prompt: prompt.clone(),
            };
            self.ctx.emit_with(|| Event::InputRequested {
                path: path.clone(),
                request: request.id.clone(),
                prompt: request.prompt.clone(),
            });
            self.waiting.push(request);
            self.stop_gracefully(RunStatus::WaitingForInput(Vec::new()));
        }
        if let Some(next) = &reply.next {
            self.ctx.emit_with(|| Event::Selected {
                path: path.clone(),
                next: next.clone(),
            });
        }
        for mut m in reply.private {
            m.source = name.clone();
            if let Some(u) = m.usage {
                self.usage += u;
            }
            Arc::make_mut(&mut self.slots[slot]).push(m);
        }
        let mut produced = Vec::with_capacity(reply.messages.len());
        for mut m in reply.messages {
            m.source = name.clone();
            let m = Arc::new(m);
            Arc::make_mut(&mut self.slots[slot]).push_shared(m.clone());
            self.root.push_shared(m.clone());
            if let Some(u) = m.usage {
                self.usage += u;
            }
            self.ctx.emit_with(|| Event::MessageProduced {
                path: path.clone(),
                message: m.clone(),
            });
            if let Some(to) = m.handoff_target() {
                self.ctx.emit_with(|| Event::Handoff {
                    path: path.clone(),
                    to: to.to_string(),
                });
            }
            if let Some(reason) = self.observe(Trigger::Message {
                message: &m,
                produced: true,
            }) {
                self.stop_gracefully(RunStatus::Stopped(reason));
            }
            if !self.spec.edge_delivery {
                self.route(&name, &m);
            }
            self.produced.push(m.clone());
            self.last = Some(m.clone());
            produced.push(m);
        }
        // A turn that only steered (a selector's) is not a turn of the
        // conversation: it does not count towards max_turns.
        if !produced.is_empty()
            && let Some(reason) = self.observe(Trigger::Turn)
        {
            self.stop_gracefully(RunStatus::Stopped(reason));
        }
        self.changed = true;
        // An agent waiting for the caller's answer goes nowhere yet: it
        // runs again once the answer arrives.
        if reply.request.is_some() {
            return;
        }
        if self.graph.is_some() {
            self.take_transitions(index, &produced, reply.next.as_deref());
        } else {
            self.mark_dirty(index);
        }
    }

    fn take_transitions(
        &mut self,
        index: usize,
        produced: &[Arc<Message>],
        selected: Option<&[String]>,
    ) {
        // The spec is shared (an Arc): holding it keeps the graph borrowable
        // while the run's own state changes, without copying the graph.
        let spec = self.spec.clone();
        let (Some(g), Some(run)) = (spec.graph.as_ref(), self.graph.as_mut()) else {
            return;
        };
        let taken = match run.cursor.finished(g, index, produced, selected) {
            Ok(taken) => taken,
            Err(e) => {
                self.fail(Failure::LoopLimit {
                    step: e.step,
                    limit: e.limit,
                });
                return;
            }
        };
        let now = SystemTime::now();
        for e in taken {
            let to = g.edges[e].to;
            let (from_slot, to_slot) = (self.spec.slot_of[index], self.spec.slot_of[to]);
            // Agents sharing a thread inherit it already; copying it onto
            // itself would clone the whole thread every turn.
            if g.isolation[index] == Isolation::Inherit && from_slot != to_slot {
                let parent = self.slots[from_slot].clone();
                Arc::make_mut(&mut self.slots[to_slot])
                    .extend_shared(parent.messages().iter().cloned());
            }
            if self.spec.edge_delivery {
                for m in produced {
                    self.push_to(to, m.clone(), now, false);
                }
            }
        }
    }

    /// Starts every turn that can start, and finishes the run when nothing
    /// is left to do.
    async fn drive(&mut self, myself: &ActorRef<RunMsg>) {
        if self.reply.is_none() {
            return;
        }
        for index in std::mem::take(&mut self.pending_retry) {
            if matches!(self.phase, Phase::Running | Phase::Stopping(_))
                && !self.turns_token.is_cancelled()
            {
                self.start_turn(index, Vec::new(), myself).await;
            }
        }
        if let Some(n) = self.spec.checkpoint_every
            && self.deliveries_since_checkpoint >= n
            && matches!(self.phase, Phase::Running)
        {
            Box::pin(self.checkpoint_now()).await;
        }
        if self.graph.is_some() {
            self.drive_graph(myself).await;
        } else {
            self.drive_router(myself).await;
        }
        if self.in_flight == 0 && self.reply.is_some() {
            Box::pin(self.finish(myself)).await;
        }
    }

    async fn drive_router(&mut self, myself: &ActorRef<RunMsg>) {
        let limit = self.spec.max_concurrency.unwrap_or(usize::MAX);
        while self.in_flight < limit {
            let Some(i) = self.dirty.pop() else { break };
            self.is_dirty[i] = false;
            if matches!(self.phase, Phase::Running) && !self.parts[i].running {
                self.try_start(i, false, myself).await;
            }
        }
        if self.in_flight > 0 || !matches!(self.phase, Phase::Running) || self.queued == 0 {
            return;
        }
        // Nothing runs: partial batches either wait for their max wait or,
        // with none set, are flushed so no message is stranded.
        let now = SystemTime::now();
        for i in 0..self.parts.len() {
            if self.parts[i].inbox.is_empty() || !matches!(self.phase, Phase::Running) {
                continue;
            }
            match self.parts[i].inbox.readiness(now) {
                Readiness::Waiting { until: Some(t) } => {
                    self.arm_wake(t, myself);
                    // Keeps the run alive until the wake-up.
                    self.in_flight += 1;
                    self.waking = true;
                    return;
                }
                Readiness::Ready => {
                    self.try_start(i, false, myself).await;
                }
                _ => {
                    self.try_start(i, true, myself).await;
                }
            }
        }
    }

    async fn drive_graph(&mut self, myself: &ActorRef<RunMsg>) {
        // The router's readiness does not schedule a graph: drop the marks.
        for i in std::mem::take(&mut self.dirty) {
            self.is_dirty[i] = false;
        }
        let spec = self.spec.clone();
        let Some(g) = spec.graph.as_ref() else {
            return;
        };
        match g.scheduler {
            Scheduler::Supersteps => {
                if self.in_flight > 0 {
                    return;
                }
                let interrupted = matches!(self.phase, Phase::Failing(_))
                    || self.phase_is(&RunStatus::Cancelled)
                    || self.turns_token.is_cancelled();
                let Some(run) = self.graph.as_mut() else {
                    return;
                };
                if run.open {
                    run.open = false;
                    let superstep = run.cursor.superstep;
                    let mut buffered = std::mem::take(&mut run.buffered);
                    let current = std::mem::take(&mut run.current);
                    if interrupted {
                        // Interrupted: the superstep did not complete, so it
                        // is undone and its nodes run again next time.
                        run.cursor.superstep -= 1;
                        for i in current {
                            run.cursor.activate(i);
                        }
                        return;
                    }
                    buffered.sort_by_key(|(i, _)| *i);
                    for (i, reply) in buffered {
                        self.apply_reply(i, reply);
                    }
                    self.ctx.emit_with(|| Event::SuperstepCompleted {
                        path: self.ctx.path().clone(),
                        superstep,
                    });
                    // Between supersteps nothing is in flight: the state is
                    // whole, and the next superstep has not begun.
                    if matches!(self.phase, Phase::Running) {
                        Box::pin(self.checkpoint_now()).await;
                    }
                }
                let Some(run) = self.graph.as_mut() else {
                    return;
                };
                if !matches!(self.phase, Phase::Running) || !run.cursor.has_next() {
                    return;
                }
                if let Some(limit) = g.max_supersteps
                    && run.cursor.superstep >= limit
                {
                    self.fail(Failure::SuperstepLimit { limit });
                    return;
                }
                run.cursor.superstep += 1;
                let superstep = run.cursor.superstep;
                let nodes = run.cursor.take_next();
                run.current = nodes.clone();
                run.open = true;
                self.ctx.emit_with(|| Event::SuperstepStarted {
                    path: self.ctx.path().clone(),
                    superstep,
                    nodes: nodes.iter().map(|&i| g.names[i].clone()).collect(),
                });
                for i in nodes {
                    let batch = self.take_batch(i, true);
                    self.start_turn(i, batch, myself).await;
                }
            }
            Scheduler::Dataflow => {
                if !matches!(self.phase, Phase::Running) {
                    return;
                }
                let mut ready = Vec::new();
                if let Some(run) = self.graph.as_mut() {
                    let room = self
                        .spec
                        .max_concurrency
                        .unwrap_or(usize::MAX)
                        .saturating_sub(self.in_flight);
                    for &i in run.cursor.next_nodes() {
                        if !self.parts[i].running && ready.len() < room {
                            ready.push(i);
                        }
                    }
                    for &i in &ready {
                        run.cursor.take_one(i);
                    }
                }
                for i in ready {
                    let batch = self.take_batch(i, true);
                    self.start_turn(i, batch, myself).await;
                }
            }
        }
    }

    fn supersteps(&self) -> bool {
        self.spec
            .graph
            .as_ref()
            .is_some_and(|g| g.scheduler == Scheduler::Supersteps)
    }

    fn phase_is(&self, status: &RunStatus) -> bool {
        matches!(&self.phase, Phase::Stopping(s) if s == status)
    }

    fn arm_wake(&mut self, at: SystemTime, myself: &ActorRef<RunMsg>) {
        if self.wake_at.is_some_and(|w| w <= at) {
            return;
        }
        self.wake_generation += 1;
        self.wake_at = Some(at);
        let generation = self.wake_generation;
        let delay = at
            .duration_since(SystemTime::now())
            .unwrap_or(Duration::ZERO);
        myself.send_after(delay, move || RunMsg::Wake { generation });
    }

    /// Takes what participant `i` will read this turn: a full batch, or with
    /// `all` everything in its inbox; shaped by its input mode.
    fn take_batch(&mut self, i: usize, all: bool) -> Vec<Arc<Message>> {
        let now = SystemTime::now();
        let part = &mut self.parts[i];
        let before = part.inbox.len();
        let batch = if all {
            part.inbox.take_all(now)
        } else {
            part.inbox.take_batch(now)
        };
        self.queued -= before - part.inbox.len();
        self.report_dropped(i, &batch);
        match self.spec.inputs[i] {
            NodeInput::Messages => batch.messages,
            mode => self.render_predecessors(mode, &batch.messages),
        }
    }

    /// One message standing for the predecessors' last outputs.
    fn render_predecessors(&self, mode: NodeInput, messages: &[Arc<Message>]) -> Vec<Arc<Message>> {
        if messages.is_empty() {
            return Vec::new();
        }
        let mut last: Vec<(&str, &Arc<Message>)> = Vec::new();
        for m in messages {
            match last.iter_mut().find(|(s, _)| *s == &*m.source) {
                Some(entry) => entry.1 = m,
                None => last.push((&m.source, m)),
            }
        }
        let mut text = String::new();
        match mode {
            NodeInput::PriorOutputs => {
                // The layout cagent injects, so prompts written for it fit.
                text.push_str("--- Prior Step Outputs ---\n\n");
                for (step, m) in &last {
                    text.push_str(&format!(
                        "[{step} (agent: {step})]:\n{}\n\n",
                        m.text_content()
                    ));
                }
                text.push_str("--- End Prior Step Outputs ---");
            }
            _ => {
                for (step, m) in &last {
                    let description = self
                        .spec
                        .router
                        .index_of(step)
                        .map(|i| self.spec.agents[i].description())
                        .unwrap_or("");
                    text.push_str(&format!(
                        "<attachment id=\"{step}\" description=\"{description}\">\n{}\n</attachment>\n",
                        m.text_content()
                    ));
                }
            }
        }
        let kind = if mode == NodeInput::PriorOutputs {
            "prior_outputs"
        } else {
            "attachments"
        };
        vec![Arc::new(
            Message::new(
                crate::message::USER,
                Content::Text(text.trim_end().to_string()),
            )
            .with_metadata("troupe.input", kind),
        )]
    }

    /// Starts participant `i`'s turn if its inbox is ready (or, with
    /// `flush`, holds anything).
    async fn try_start(&mut self, i: usize, flush: bool, myself: &ActorRef<RunMsg>) {
        if !flush {
            match self.parts[i].inbox.readiness(SystemTime::now()) {
                Readiness::Ready => {}
                Readiness::Waiting { until: Some(t) } => {
                    self.arm_wake(t, myself);
                    return;
                }
                _ => return,
            }
        }
        let batch = self.take_batch(i, flush);
        if !batch.is_empty() {
            self.start_turn(i, batch, myself).await;
        }
    }

    /// Appends `batch` to participant `i`'s thread and lends it the thread
    /// for a turn.
    async fn start_turn(&mut self, i: usize, batch: Vec<Arc<Message>>, myself: &ActorRef<RunMsg>) {
        let actor = match self.actor_for(i, myself).await {
            Ok(a) => a,
            Err(reason) => {
                let agent = self.parts[i].ctx.path().to_string();
                self.fail(Failure::Lost { agent, reason });
                return;
            }
        };
        let taken = batch.len();
        let slot = self.spec.slot_of[i];
        if taken > 0 {
            Arc::make_mut(&mut self.slots[slot]).extend_shared(batch);
        }
        self.changed = true;
        let mut actor = actor;
        let mut turn = self.turn_message(i, slot, myself);
        if let Err(e) = actor.cast(turn) {
            // A kept actor may have died with the runtime that ran it (a
            // workflow reused under another runtime): one fresh spawn.
            turn = match e {
                ractor::MessagingErr::SendErr(turn) => turn,
                _ => self.turn_message(i, slot, myself),
            };
            self.forget_actor(i);
            let retried = match self.actor_for(i, myself).await {
                Ok(fresh) => {
                    actor = fresh;
                    actor.cast(turn).is_ok()
                }
                Err(_) => false,
            };
            if !retried {
                let agent = self.parts[i].ctx.path().to_string();
                self.fail(Failure::Lost {
                    agent,
                    reason: "its actor no longer takes messages".into(),
                });
                return;
            }
        }
        let part = &mut self.parts[i];
        part.running = true;
        self.in_flight += 1;
        self.ctx.emit_with(|| Event::AgentStarted {
            path: part.ctx.path().clone(),
            batch: taken,
        });
    }

    /// The turn message for participant `i`, over thread slot `slot`.
    fn turn_message(&self, i: usize, slot: usize, myself: &ActorRef<RunMsg>) -> AgentMsg {
        AgentMsg::Turn {
            thread: self.slots[slot].clone(),
            ctx: self.parts[i].ctx.clone(),
            index: i,
            run: myself.clone(),
            turns: self.turns_token.clone(),
        }
    }

    /// Drops this run's hold on participant `i`'s actor.
    fn forget_actor(&mut self, i: usize) {
        if let Some(actor) = self.parts[i].actor.take() {
            self.actor_index.remove(&actor.get_id());
        }
    }

    /// Participant `i`'s actor: this run's, one kept from an earlier run
    /// (linked to this run's supervisor), or a new one.
    async fn actor_for(
        &mut self,
        i: usize,
        myself: &ActorRef<RunMsg>,
    ) -> Result<ActorRef<AgentMsg>, String> {
        if let Some(a) = &self.parts[i].actor {
            return Ok(a.clone());
        }
        let actor = match self.spec.pool.as_ref().and_then(|p| p.take(i)) {
            Some(kept) => {
                kept.get_cell().link(myself.get_cell());
                kept
            }
            None => {
                let args = AgentArgs {
                    agent: self.spec.agents[i].clone(),
                };
                // Boxed, as the other rare awaits of a turn's path: every
                // future awaited here is part of the supervisor's handler
                // future, which is built (and moved) for every message.
                let (actor, _) = Box::pin(Actor::spawn_linked(
                    None,
                    AgentActor,
                    args,
                    myself.get_cell(),
                ))
                .await
                .map_err(|e| format!("cannot start its actor: {e}"))?;
                actor
            }
        };
        self.actor_index.insert(actor.get_id(), i);
        self.parts[i].actor = Some(actor.clone());
        Ok(actor)
    }

    /// Hands the idle agent actors of a run that ended with no turn under
    /// way to the workflow's pool, for its next run; the rest stop with
    /// this run.
    fn keep_actors(&mut self, myself: &ActorRef<RunMsg>) {
        let Some(pool) = self.spec.pool.as_ref() else {
            return;
        };
        if self.in_flight > 0 || matches!(self.phase, Phase::Failing(_)) {
            return;
        }
        for i in 0..self.parts.len() {
            if self.parts[i].running {
                continue;
            }
            let Some(actor) = self.parts[i].actor.take() else {
                continue;
            };
            actor.get_cell().unlink(myself.get_cell());
            match pool.give(i, actor) {
                Ok(()) => {}
                // Already one kept: this one stops with the run.
                Err(actor) => actor.get_cell().link(myself.get_cell()),
            }
        }
    }

    fn spawn_watcher(&self, myself: ActorRef<RunMsg>) -> JoinHandle<()> {
        let cancel = self.ctx.cancellation().clone();
        let timeout = self.spec.stop.as_ref().and_then(|s| s.shortest_timeout());
        let deadline = self.ctx.deadline();
        let mut handles: Vec<StopHandle> = Vec::new();
        if let Some(s) = &self.spec.stop {
            s.external_handles(&mut handles);
        }
        tokio::spawn(async move {
            let timeout = async {
                match timeout {
                    Some(d) => tokio::time::sleep(d).await,
                    None => std::future::pending().await,
                }
            };
            let deadline = async {
                match deadline {
                    Some(t) => tokio::time::sleep_until(t).await,
                    None => std::future::pending().await,
                }
            };
            let external = async {
                if handles.is_empty() {
                    std::future::pending::<()>().await;
                } else {
                    futures::future::select_all(handles.iter().map(|h| Box::pin(h.stopped())))
                        .await;
                }
            };
            tokio::pin!(timeout, deadline, external);
            let (mut timeout_done, mut deadline_done, mut external_done) = (false, false, false);
            loop {
                // After one fires the others are still watched: a timeout
                // inside `All(..)` may not stop the run, but a cancel must.
                let msg = tokio::select! {
                    _ = cancel.cancelled() => RunMsg::Cancel,
                    _ = &mut timeout, if !timeout_done => { timeout_done = true; RunMsg::Timeout }
                    _ = &mut deadline, if !deadline_done => { deadline_done = true; RunMsg::Deadline }
                    _ = &mut external, if !external_done => { external_done = true; RunMsg::External }
                };
                let cancelled = matches!(msg, RunMsg::Cancel);
                if myself.cast(msg).is_err() || cancelled {
                    return;
                }
            }
        })
    }

    /// The run's state as the thread it would return now, without
    /// disturbing the run (for a checkpoint between supersteps).
    fn thread_now(&self) -> Thread {
        let mut thread = self.root.clone();
        let mut children = self.foreign_children.clone();
        for (s, slot) in self.slots.iter().enumerate() {
            if self.used_slots[s] {
                children.insert(self.spec.slot_names[s].clone(), (**slot).clone());
            }
        }
        *thread.children_mut() = children;
        *thread.state_mut() = Some(self.state_now(self.state.clone(), thread.len()));
        thread
    }

    /// `state` completed with what lives outside it while the run goes on:
    /// inbox contents, the graph's cursor, pending input requests.
    fn state_now(&self, mut state: WorkflowState, len: usize) -> WorkflowState {
        for (i, part) in self.parts.iter().enumerate() {
            let name = self.spec.names[i].to_string();
            if part.inbox.is_empty() {
                state.pending.remove(&name);
            } else {
                state
                    .pending
                    .insert(name, part.inbox.iter().cloned().collect());
            }
        }
        // A graph that stopped midway continues where it was; one that ran
        // out of nodes starts afresh (loop counters too) next time.
        state.data.remove(GRAPH_STATE);
        if let Some(run) = &self.graph
            && run.cursor.has_next()
            && let Ok(text) = serde_json::to_string(&run.cursor)
        {
            state.data.insert(GRAPH_STATE.into(), text);
        }
        let mut requests: Vec<InputRequest> = state
            .data
            .get(REQUESTS)
            .and_then(|t| serde_json::from_str(t).ok())
            .unwrap_or_default();
        requests.extend(self.waiting.iter().cloned());
        state.data.remove(REQUESTS);
        if !requests.is_empty()
            && let Ok(text) = serde_json::to_string(&requests)
        {
            state.data.insert(REQUESTS.into(), text);
        }
        // Turns under way when the checkpoint is taken run again on resume:
        // their input is in their threads already.
        let running: Vec<&str> = self
            .parts
            .iter()
            .enumerate()
            .filter(|(i, p)| p.running || self.cut_short.contains(i))
            .map(|(i, _)| &*self.spec.names[i])
            .collect();
        state.data.remove(RUNNING);
        if !running.is_empty()
            && let Ok(text) = serde_json::to_string(&running)
        {
            state.data.insert(RUNNING.into(), text);
        }
        state.consumed = len;
        state
    }

    /// Saves a checkpoint of the run as it is now (if it has a store).
    async fn checkpoint_now(&mut self) {
        if self.store.is_some() {
            let thread = self.thread_now();
            self.save_checkpoint(thread).await;
        }
    }

    /// Encodes `thread` with the run's counters and saves it; a failure is
    /// reported as a warning, the run goes on.
    async fn save_checkpoint(&mut self, thread: Thread) -> Thread {
        let Some(store) = self.store.clone() else {
            return thread;
        };
        self.deliveries_since_checkpoint = 0;
        self.changed = false;
        let superstep = self.graph.as_ref().map_or(0, |g| g.cursor.superstep);
        let snapshot = Snapshot {
            thread,
            stop: self.tracker.as_ref().map(|t| t.state()),
            usage: self.usage,
            turns: self.turns,
            last: self.last.as_ref().map(|m| m.id),
            start_len: self.start_len,
        };
        let saved = match codec::encode(&snapshot) {
            Ok(payload) => {
                let bytes = payload.len();
                let cp = Checkpoint::new(
                    self.run_id.clone(),
                    self.parent,
                    superstep,
                    self.spec.topology_hash,
                    payload,
                );
                store
                    .save(&cp)
                    .await
                    .map(|_| (cp.id, bytes))
                    .map_err(|e| e.to_string())
            }
            Err(e) => Err(e.to_string()),
        };
        match saved {
            Ok((id, bytes)) => {
                self.parent = Some(id);
                self.ctx.emit_with(|| Event::CheckpointSaved {
                    path: self.ctx.path().clone(),
                    run_id: self.run_id.clone(),
                    checkpoint: id.to_string(),
                    superstep,
                    bytes,
                });
            }
            Err(e) => self.ctx.emit_with(|| Event::Warning {
                path: self.ctx.path().clone(),
                text: format!("checkpoint not saved: {e}"),
            }),
        }
        snapshot.thread
    }

    /// Hands back the result, saves the last checkpoint and stops the run's
    /// actors.
    async fn finish(&mut self, myself: &ActorRef<RunMsg>) {
        let Some(reply) = self.reply.take() else {
            return;
        };
        if let Some(w) = self.watcher.take() {
            w.abort();
        }
        let mut thread = std::mem::take(&mut self.root);
        let mut children = std::mem::take(&mut self.foreign_children);
        let slots = std::mem::take(&mut self.slots);
        for (s, slot) in slots.into_iter().enumerate() {
            if self.used_slots[s] {
                let t = Arc::try_unwrap(slot).unwrap_or_else(|shared| (*shared).clone());
                children.insert(self.spec.slot_names[s].clone(), t);
            }
        }
        *thread.children_mut() = children;
        let state = std::mem::take(&mut self.state);
        let len = thread.len();
        *thread.state_mut() = Some(self.state_now(state, len));
        let failed = matches!(self.phase, Phase::Failing(_));
        if !failed && (self.changed || self.parent.is_none()) {
            thread = self.save_checkpoint(thread).await;
        }

        let phase = std::mem::replace(&mut self.phase, Phase::Running);
        let waiting = std::mem::take(&mut self.waiting);
        let result = match phase {
            Phase::Failing(f) => Err(f.into_error(thread)),
            Phase::Stopping(RunStatus::WaitingForInput(_)) => {
                Ok(self.result(thread, RunStatus::WaitingForInput(waiting)))
            }
            Phase::Stopping(status) => Ok(self.result(thread, status)),
            Phase::Running => Ok(self.result(thread, RunStatus::Completed)),
        };
        self.ctx.emit_with(|| Event::RunFinished {
            path: self.ctx.path().clone(),
            status: match &result {
                Ok(r) => r.status.to_string(),
                Err(e) => format!("failed: {e}"),
            },
            usage: self.usage,
            turns: self.turns,
            elapsed_ms: self.started.elapsed().as_secs_f64() * 1e3,
        });
        // The caller may have stopped waiting; then the result has no taker.
        let _ = reply.send(result);
        self.keep_actors(myself);
        myself.stop_children(None);
        myself.stop(None);
    }

    fn result(&mut self, thread: Thread, status: RunStatus) -> RunResult {
        RunResult {
            thread,
            final_response: self.last.take(),
            messages: std::mem::take(&mut self.produced),
            status,
            usage: self.usage,
            turns: self.turns,
            run_id: self.run_id.clone(),
            checkpoint: self.parent,
        }
    }
}
