//! The actor hosting one participant of a run.
//!
//! It never waits on an agent's turn in its handler: a turn that does not
//! finish on its first poll runs on as a task and reports back, so the
//! actor stays responsive. A turn's end goes
//! straight to the run's supervisor; a panic comes back here and fails this
//! actor, so the supervisor learns of it through ractor's supervision.

use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::task::Poll;
use tokio::time::Instant;

use futures::FutureExt;
use ractor::{Actor, ActorProcessingErr, ActorRef};

use super::protocol::{AgentMsg, RunMsg, TurnOutcome};
use crate::agent::Agent;
use crate::panic::panic_text;

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
        myself: ActorRef<AgentMsg>,
        message: AgentMsg,
        state: &mut AgentArgs,
    ) -> Result<(), ActorProcessingErr> {
        match message {
            AgentMsg::Turn {
                thread,
                ctx,
                index,
                run,
                turns,
            } => {
                let started = Instant::now();
                if turns.is_cancelled() {
                    report(&run, index, TurnOutcome::Cancelled, started);
                    return Ok(());
                }
                // In its `invoke_agent` span, a child of the span the
                // supervisor put in the turn's context.
                let turn = crate::telemetry::agent_turn(state.agent.clone(), thread, ctx);
                let mut turn = Box::pin(AssertUnwindSafe(turn).catch_unwind());
                // Most turns of function agents finish on their first poll:
                // those report straight away, without a task of their own.
                // A turn that waits moves to a task, so this actor stays
                // responsive; the task polls it again with its own waker.
                if let Poll::Ready(result) = futures::poll!(&mut turn) {
                    let outcome = match result {
                        Ok(Ok(reply)) => TurnOutcome::Done(Box::new(reply)),
                        Ok(Err(e)) => TurnOutcome::Failed(Box::new(e)),
                        Err(panic) => return Err(panic_text(panic).into()),
                    };
                    report(&run, index, outcome, started);
                    return Ok(());
                }
                tokio::spawn(async move {
                    let outcome = tokio::select! {
                        biased;
                        _ = turns.cancelled() => TurnOutcome::Cancelled,
                        r = turn => match r {
                            Ok(Ok(reply)) => TurnOutcome::Done(Box::new(reply)),
                            Ok(Err(e)) => TurnOutcome::Failed(Box::new(e)),
                            Err(panic) => {
                                let _ = myself.cast(AgentMsg::Panicked(panic_text(panic)));
                                return;
                            }
                        },
                    };
                    report(&run, index, outcome, started);
                });
                Ok(())
            }
            AgentMsg::Panicked(text) => Err(text.into()),
        }
    }
}

/// Sends a turn's outcome to the run. The run may be over already; then
/// nobody needs the outcome.
fn report(run: &ActorRef<RunMsg>, index: usize, outcome: TurnOutcome, started: Instant) {
    let _ = run.cast(RunMsg::TurnDone {
        index,
        outcome,
        elapsed: started.elapsed(),
    });
}
