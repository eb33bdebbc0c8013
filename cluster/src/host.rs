//! The agent host: the actor that makes one agent reachable from other
//! nodes.
//!
//! It registers under `troupe.host.<agent>@<node>` and joins the process
//! group `troupe.agent.<agent>`, which `ractor_cluster` mirrors on every
//! connected node. Like the runtime's agent actors it never awaits a turn
//! in its handler: each turn runs as a task and reports back with a local
//! `Finished` message, so the host keeps answering heartbeats and cancels
//! while turns run.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use ractor::{Actor, ActorProcessingErr, ActorRef, RpcReplyPort};
use tokio_util::sync::CancellationToken;
use tracing::{Instrument, Span};
use troupe_runtime::{Agent, RunContext, panic_text, sink::EventSink, telemetry};

use crate::trace_context;
use crate::wire::{
    CallReply, CallRequest, CancelRequest, HostMsg, Outcome, StatusReply, StatusRequest, WireError,
    WireReply, pack, unpack,
};

pub(crate) struct HostActor;

pub(crate) struct HostArgs {
    pub(crate) agent: Arc<dyn Agent>,
    pub(crate) node: String,
    /// Replies larger than this cannot cross the wire.
    pub(crate) max_frame: u64,
}

pub(crate) struct HostState {
    args: HostArgs,
    /// Turns under way, by request key.
    pending: HashMap<u64, Pending>,
    next_turn: u64,
}

struct Pending {
    /// Tells `Finished` of this turn from one of an older turn of the same key.
    turn: u64,
    /// Who waits for the reply: (attempt, port).
    waiters: Vec<(u128, RpcReplyPort<Vec<u8>>)>,
    cancel: CancellationToken,
    /// Events of the turn as JSON, until handed over.
    events: Arc<Mutex<Vec<String>>>,
}

impl HostState {
    fn load(&self) -> u32 {
        u32::try_from(self.pending.len()).unwrap_or(u32::MAX)
    }

    fn take_events(events: &Mutex<Vec<String>>) -> Vec<String> {
        // A poisoned lock only means a sink callback panicked mid-push.
        std::mem::take(&mut *events.lock().unwrap_or_else(|p| p.into_inner()))
    }

    /// Sends a reply to a waiter; a reply too large for the wire becomes an
    /// error the caller can read (a frame over the peer's limit would drop
    /// the whole connection).
    fn answer(&self, port: RpcReplyPort<Vec<u8>>, reply: &CallReply) {
        let bytes = match pack(reply) {
            Ok(b) if (b.len() as u64) < self.args.max_frame => b,
            Ok(b) => {
                let too_large = CallReply {
                    load: reply.load,
                    events: Vec::new(),
                    outcome: Outcome::Failed(WireError::Failed(format!(
                        "the reply of agent '{}' on node '{}' is {} bytes, over the wire's frame limit of {} bytes",
                        self.args.agent.name(),
                        self.args.node,
                        b.len(),
                        self.args.max_frame
                    ))),
                };
                pack(&too_large).unwrap_or_default()
            }
            Err(e) => pack(&CallReply {
                load: reply.load,
                events: Vec::new(),
                outcome: Outcome::Failed(WireError::Failed(format!(
                    "cannot encode the reply: {e}"
                ))),
            })
            .unwrap_or_default(),
        };
        // The caller may have given up already; then nobody needs it.
        let _ = port.send(bytes);
    }

    fn refuse(&self, port: RpcReplyPort<Vec<u8>>, reason: String) {
        let reply = CallReply {
            load: self.load(),
            events: Vec::new(),
            outcome: Outcome::Refused(reason),
        };
        self.answer(port, &reply);
    }

    fn start_turn(
        &mut self,
        myself: ActorRef<HostMsg>,
        request: CallRequest,
        port: RpcReplyPort<Vec<u8>>,
    ) {
        // A retry of a turn still running here joins it rather than doing
        // the work twice: both get the same reply, with the same message ids.
        if let Some(p) = self.pending.get_mut(&request.key) {
            p.waiters.push((request.attempt, port));
            return;
        }
        self.next_turn += 1;
        let turn = self.next_turn;
        let key = request.key;
        let cancel = CancellationToken::new();
        let events = Arc::new(Mutex::new(Vec::new()));
        self.pending.insert(
            key,
            Pending {
                turn,
                waiters: vec![(request.attempt, port)],
                cancel: cancel.clone(),
                events: events.clone(),
            },
        );

        let sink = if request.events {
            EventSink::callback(move |e| {
                if let Ok(json) = serde_json::to_string(&e.event) {
                    // Poisoned only if a take panicked mid-swap: the
                    // buffer is still a valid list of events.
                    events.lock().unwrap_or_else(|p| p.into_inner()).push(json);
                }
            })
        } else {
            EventSink::None
        };
        // The turn's path is the caller's with the node appended, so events
        // from here say where they happened: `team/map/worker#3@b`.
        let path = format!("{}@{}", request.path, self.args.node);
        let mut ctx = RunContext::with_sink(sink)
            .child(&path)
            .with_cancellation(cancel.clone());
        if let Some(ms) = request.deadline_ms {
            ctx = ctx.with_deadline(tokio::time::Instant::now() + Duration::from_millis(ms));
        }
        if let Some(run_id) = request.run_id {
            ctx = ctx.with_run_id(run_id);
        }
        let agent = self.args.agent.clone();
        // The turn's span here is a child of the caller's, across nodes:
        // its parent comes from the wire, never from this task.
        let span = telemetry::agent_span(&Span::none(), agent.name(), &path);
        trace_context::restore_parent(&span, request.traceparent.as_deref());
        let ctx = telemetry::with_parent(ctx, &span);
        let thread = Arc::new(request.thread);
        tokio::spawn(async move {
            let turn_future =
                AssertUnwindSafe(agent.run(thread, ctx).instrument(span.clone())).catch_unwind();
            let outcome = tokio::select! {
                biased;
                _ = cancel.cancelled() => Outcome::Failed(WireError::Cancelled),
                r = turn_future => match r {
                    Ok(Ok(reply)) => Outcome::Done(Box::new(WireReply::from(reply))),
                    Ok(Err(e)) => {
                        telemetry::record_failure(&span, telemetry::error_type(e.kind()), &e);
                        Outcome::Failed(WireError::from_agent(&e, &path))
                    }
                    Err(panic) => Outcome::Failed(WireError::Panicked(panic_text(panic))),
                },
            };
            // The host stops only with its node; then nobody waits anyway.
            let _ = myself.cast(HostMsg::Finished { key, turn, outcome });
        });
    }
}

impl Actor for HostActor {
    type Msg = HostMsg;
    type State = HostState;
    type Arguments = HostArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<HostMsg>,
        args: HostArgs,
    ) -> Result<HostState, ActorProcessingErr> {
        Ok(HostState {
            args,
            pending: HashMap::new(),
            next_turn: 0,
        })
    }

    async fn post_stop(
        &self,
        _myself: ActorRef<HostMsg>,
        state: &mut HostState,
    ) -> Result<(), ActorProcessingErr> {
        // Turns under way end with the host; their callers see the
        // connection (or the reply port) go.
        for p in state.pending.values() {
            p.cancel.cancel();
        }
        Ok(())
    }

    async fn handle(
        &self,
        myself: ActorRef<HostMsg>,
        message: HostMsg,
        state: &mut HostState,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            HostMsg::Call(bytes, port) => match unpack::<CallRequest>(&bytes) {
                Ok(request) if request.agent != state.args.agent.name() => {
                    let reason = format!(
                        "node '{}' hosts '{}' here, not '{}'",
                        state.args.node,
                        state.args.agent.name(),
                        request.agent
                    );
                    state.refuse(port, reason);
                }
                Ok(request) => state.start_turn(myself, request, port),
                Err(e) => {
                    let reason = format!("node '{}' cannot read the request: {e}", state.args.node);
                    state.refuse(port, reason);
                }
            },
            HostMsg::Status(bytes, port) => {
                let reply = match unpack::<StatusRequest>(&bytes) {
                    Ok(q) => {
                        let pending = state.pending.get(&q.key);
                        StatusReply {
                            known: pending.is_some(),
                            load: state.load(),
                            events: match pending {
                                Some(p) if q.drain_events => HostState::take_events(&p.events),
                                _ => Vec::new(),
                            },
                        }
                    }
                    Err(_) => StatusReply {
                        known: false,
                        load: state.load(),
                        events: Vec::new(),
                    },
                };
                if let Ok(bytes) = pack(&reply) {
                    let _ = port.send(bytes);
                }
            }
            HostMsg::Cancel(bytes) => {
                if let Ok(c) = unpack::<CancelRequest>(&bytes)
                    && let Some(p) = state.pending.get_mut(&c.key)
                {
                    p.waiters.retain(|(attempt, _)| *attempt != c.attempt);
                    // Another caller joined this turn: it goes on for them.
                    if p.waiters.is_empty() {
                        p.cancel.cancel();
                        state.pending.remove(&c.key);
                    }
                }
            }
            HostMsg::Finished { key, turn, outcome } => {
                if state.pending.get(&key).is_some_and(|p| p.turn == turn)
                    && let Some(p) = state.pending.remove(&key)
                {
                    let reply = CallReply {
                        load: state.load(),
                        events: HostState::take_events(&p.events),
                        outcome,
                    };
                    for (_, port) in p.waiters {
                        state.answer(port, &reply);
                    }
                }
            }
        }
        Ok(())
    }
}
