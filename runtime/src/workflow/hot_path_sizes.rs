//! The sizes the hot path relies on, as tests (issue 38 item 5; the
//! measurements are in BENCHMARKS.md, the reasons in ARCHITECTURE.md, "Hot
//! path"). Every turn builds, sends and moves these types by value: a field
//! added to one is written and copied at every turn of every run, so
//! growing one past its bound must be a decision, not an accident. Each
//! bound is today's size on a 64-bit target; raise one only with a reason
//! (and a benchmark) in the commit, lower it when a type shrinks.

use std::mem::size_of;

use super::protocol::{AgentMsg, PendingTurn, RunMsg, TurnBack, TurnEnd, TurnOutcome, WaitingTurn};
use super::run::RunState;
use crate::agent::Reply;
use crate::context::RunContext;
use crate::message::{Message, MessageId};
use crate::store::CheckpointId;
use crate::thread::Thread;

/// Asserts `size_of::<T>() <= max`, saying the type, its size and `why`.
fn at_most<T>(max: usize, why: &str) {
    let size = size_of::<T>();
    assert!(
        size <= max,
        "{} is {size} bytes, over its bound of {max}: {why}",
        std::any::type_name::<T>()
    );
}

#[cfg(target_pointer_width = "64")]
#[test]
fn the_actor_messages_a_turn_sends_stay_small() {
    at_most::<TurnOutcome>(
        24,
        "a turn's outcome is in every RunMsg::Turn; the Reply and the AgentError stay \
         boxed (Done(Box<Reply>), Failed(Box<AgentError>)) so the message does not carry them",
    );
    at_most::<RunMsg>(
        48,
        "the run's supervisor receives one a turn by value through its mailbox; a large \
         variant's payload goes in a Box (Progress's thread and stats)",
    );
    at_most::<AgentMsg>(
        64,
        "every turn is one, moved into the agent actor's mailbox and out again",
    );
    at_most::<TurnBack>(
        48,
        "every turn comes back to its run as one (RunMsg::Turn), ended or still waiting",
    );
    at_most::<WaitingTurn>(
        40,
        "a turn still waiting is kept and polled by its run until it ends",
    );
    at_most::<TurnEnd>(48, "every turn's end is built and taken in by the run once");
    assert_eq!(
        size_of::<PendingTurn>(),
        2 * size_of::<usize>(),
        "a turn under way is one boxed future (a fat pointer): its state stays in its box \
         however far it is moved (agent actor, message, the run's waiting turns)"
    );
    assert_eq!(
        size_of::<Option<Box<Reply>>>(),
        size_of::<usize>(),
        "a boxed reply is one pointer, its absence included"
    );
}

#[cfg(target_pointer_width = "64")]
#[test]
fn the_values_every_turn_copies_stay_small() {
    assert_eq!(
        size_of::<MessageId>(),
        16,
        "message ids are one u128, hashed by one keyed multiply (IdHash) into every \
         thread's id set, three times a turn"
    );
    assert_eq!(
        size_of::<CheckpointId>(),
        16,
        "a checkpoint id is one u128, formatted by hand as 32 hex digits"
    );
    assert_eq!(
        size_of::<RunContext>(),
        size_of::<usize>(),
        "a turn's context is one Arc, cloned into every turn"
    );
    at_most::<Message>(
        144,
        "a message is built every turn and held (Arc) by every thread it reaches",
    );
    at_most::<Reply>(
        336,
        "every turn's reply is moved out of the agent's future and into its Box",
    );
    at_most::<Thread>(
        136,
        "a thread travels in every reply and nested run; its scheduler state is one pointer, \
         its id set (rare: only a long thread whose ids came out of order) one more; a run's \
         children are kept in a map whose every node has room for 11 of them",
    );
    at_most::<crate::event::Event>(
        128,
        "every event is built, sent to the sinks and (in a server) kept with its run, and an \
         event is as wide as its widest variant: a wide payload goes in a Box (RunFinished's \
         stats)",
    );
}

#[cfg(target_pointer_width = "64")]
#[test]
fn what_a_run_waiting_on_its_models_holds_stays_small() {
    // Issue 44 item 3: thousands of runs wait at once, each holding these
    // for its whole life; RSS per run at K = 100,000 is the figure.
    at_most::<RunState>(
        1792,
        "a run's state is one allocation, in mimalloc's 1,792-byte size class (it was \
         2,048): what only some runs use is boxed when first used (the checkpoint \
         writer, the stats a resumed run started from), what every run of a workflow \
         has alike is in its Spec (which thread slots are used)",
    );
    at_most::<troupe_router::Inbox<std::sync::Arc<Message>>>(
        56,
        "each run has an inbox per participant; its config is the router's, shared (an \
         Arc), not a copy of ~140 bytes each",
    );
    let wf = crate::Workflow::builder()
        .participant(crate::FnAgent::sync("a", |_: &Thread| Ok("")))
        .build()
        .expect("a workflow of one agent");
    let ctx = RunContext::new();
    let run = wf.run_task("go", &ctx);
    let size = std::mem::size_of_val(&run);
    assert!(
        size <= 256,
        "Workflow::run_task's future is {size} bytes: the caller's task holds it for the \
         whole run, so it holds no thread nor checkpoint it was given (see `execute`)"
    );
}

#[cfg(target_pointer_width = "64")]
#[test]
fn what_every_hosted_agent_holds_stays_small() {
    at_most::<troupe_router::Inbox<std::sync::Arc<Message>>>(
        56,
        "a run makes one inbox per participant, woken or not (issue 44: 100,000 idle \
         agents in 256 MiB); its config is shared (an Arc), not copied into it",
    );
    at_most::<RunContext>(
        8,
        "a participant's context is one pointer, made when it first has work",
    );
}
