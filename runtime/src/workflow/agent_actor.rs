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

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;

use futures::FutureExt;
use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::protocol::{AgentMsg, PendingTurn, TurnOutcome};
use crate::agent::Agent;

/// The actor hosting one participant (see the module's documentation).
pub(crate) struct AgentActor;

/// What an agent actor is started with, and keeps.
pub(crate) struct AgentArgs {
    /// The participant's agent.
    pub(crate) agent: Arc<dyn Agent>,
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
        ticket.start();
        // The context's cancellation is the run's turns'.
        if ctx.cancellation().is_cancelled() {
            ticket.back(Ok(TurnOutcome::Cancelled));
            return Ok(());
        }
        // In its `invoke_agent` span, a child of the span the supervisor
        // put in the turn's context.
        let turn = crate::telemetry::agent_turn(state.agent.clone(), thread, ctx);
        let mut turn = Box::pin(AssertUnwindSafe(turn).catch_unwind());
        // Most turns of function agents finish on their first poll: those
        // go back ended. A turn that waits goes back as it is, and its run
        // polls it on with its own waker, so this actor stays responsive
        // (and serves other runs meanwhile).
        let back = match futures::poll!(&mut turn) {
            Poll::Ready(result) => Ok(TurnOutcome::of(result)),
            Poll::Pending => Err(turn as PendingTurn),
        };
        ticket.back(back);
        Ok(())
    }
}
