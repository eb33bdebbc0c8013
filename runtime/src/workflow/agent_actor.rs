//! The actor hosting one participant of a run.
//!
//! The actor is the participant's ordering point: its inbox takes the
//! turns of every run of its workflow, one at a time per run. It polls a
//! turn once, in its handler, and sends it back to its run through the
//! turn's ticket — ended (most turns of function agents, a panic
//! included), or still waiting, for the run to poll to its end — so it
//! never waits on a turn and serves many runs of its workflow at once. A
//! ticket dropped unused (this actor stopped with the turn in its inbox)
//! reports the turn lost.
//!
//! A run whose turn finds the actor idle polls it itself, the same way
//! ([`first_poll`]), through the gate the actor shares with the runs
//! (`agent_gate`): the actor claims that gate for each turn it polls, so
//! the agent's first polls never overlap and a turn queued here is never
//! overtaken.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;

use futures::FutureExt;
use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::agent_gate::AgentGate;
use super::protocol::{AgentMsg, PendingTurn, TurnOutcome};
use crate::agent::Agent;
use crate::context::RunContext;
use crate::thread::Thread;

/// The actor hosting one participant (see the module's documentation).
pub(crate) struct AgentActor;

/// What an agent actor is started with, and keeps.
pub(crate) struct AgentArgs {
    /// The participant's agent.
    pub(crate) agent: Arc<dyn Agent>,
    /// The gate it shares with the runs (see `agent_gate`).
    pub(crate) gate: Arc<AgentGate>,
}

impl Actor for AgentActor {
    type Msg = AgentMsg;
    type State = AgentArgs;
    type Arguments = AgentArgs;

    async fn pre_start(
        &self,
        _myself: ActorRef<AgentMsg>,
        args: AgentArgs,
    ) -> Result<AgentArgs, ActorProcessingErr> {
        Ok(args)
    }

    async fn handle(
        &self,
        _myself: ActorRef<AgentMsg>,
        message: AgentMsg,
        state: &mut AgentArgs,
    ) -> Result<(), ActorProcessingErr> {
        let AgentMsg::Turn {
            thread,
            ctx,
            mut ticket,
        } = message;
        // A run may be polling a turn of this agent inline: ours waits,
        // and the inbox's next message with it.
        state.gate.claim_queued().await;
        ticket.start();
        // The context's cancellation is the run's turns'.
        let back = if ctx.cancellation().is_cancelled() {
            Ok(TurnOutcome::Cancelled)
        } else {
            first_poll(state.agent.clone(), thread, ctx).await
        };
        state.gate.polled();
        ticket.back(back);
        Ok(())
    }
}

/// Starts a turn of `agent` and polls it once, on the caller's task (the
/// agent actor's, or a run's that claimed the agent's gate): ended (most
/// turns of function agents, a panic included), or still waiting, to be
/// polled on by its run.
pub(crate) async fn first_poll(
    agent: Arc<dyn Agent>,
    thread: Arc<Thread>,
    ctx: RunContext,
) -> Result<TurnOutcome, PendingTurn> {
    // In its `invoke_agent` span, a child of the span the supervisor put
    // in the turn's context.
    let turn = crate::telemetry::agent_turn(agent, thread, ctx);
    let mut turn = Box::pin(AssertUnwindSafe(turn).catch_unwind());
    // A turn that waits goes back as it is, and its run polls it on with
    // its own waker, so an actor stays responsive (and serves other runs
    // meanwhile).
    match futures::poll!(&mut turn) {
        Poll::Ready(result) => Ok(TurnOutcome::of(result)),
        Poll::Pending => Err(turn as PendingTurn),
    }
}
