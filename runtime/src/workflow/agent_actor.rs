//! The actor hosting one participant of a run.
//!
//! It never waits on an agent's turn in its handler: a turn that does not
//! finish on its first poll runs on as a task and reports back — or, when
//! it is its run's only turn under way, goes back to the run, which polls
//! it to its end — so the actor stays responsive and can serve many runs
//! of its workflow at once.
//! A turn's end, a panic included, goes straight to the run's supervisor
//! through the turn's ticket, which reports the turn lost if it is dropped
//! unanswered (this actor stopped with the turn in its inbox).

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;

use futures::FutureExt;
use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::protocol::{AgentMsg, TurnOutcome};
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
            turns,
        } = message;
        ticket.start();
        if turns.is_cancelled() {
            ticket.report(TurnOutcome::Cancelled);
            return Ok(());
        }
        // In its `invoke_agent` span, a child of the span the supervisor
        // put in the turn's context.
        let turn = crate::telemetry::agent_turn(state.agent.clone(), thread, ctx);
        let mut turn = Box::pin(AssertUnwindSafe(turn).catch_unwind());
        // Most turns of function agents finish on their first poll: those
        // report straight away, without a task of their own. A turn that
        // waits moves to a task, so this actor stays responsive (and serves
        // other runs meanwhile); the task polls it again with its own waker.
        if let Poll::Ready(result) = futures::poll!(&mut turn) {
            ticket.report(TurnOutcome::of(result));
            return Ok(());
        }
        // A run's only turn under way goes back to the run, which has
        // nothing else to do while it waits (see `InlineTurn`).
        if ticket.is_inline() {
            ticket.hand_over(turn);
        } else {
            ticket.run_as_task(turn, turns);
        }
        Ok(())
    }
}
