//! # troupe-runtime
//!
//! The runtime under troupe: the [`Message`]s agents exchange, the
//! [`Thread`]s they work on, the [`Agent`] trait, and the [`Workflow`] that
//! composes agents — and is itself an agent, so workflows nest.
//!
//! A workflow run is a supervisor over one actor (ractor) per participant,
//! shared by every run of the workflow by default. The run keeps every
//! participant's inbox (built from a [`Router`]) and thread; when an inbox
//! holds a full batch, the run lends the participant its thread for a turn,
//! appends what it produced, and routes it to the inboxes that accept it. The run ends when nothing can
//! run and nothing is in flight, when its [`StopCondition`] holds, or when
//! its [`RunContext`] is cancelled.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use troupe_runtime::{FnAgent, Router, RunContext, StopCondition, Thread, Workflow};
//!
//! // Two agents that answer each other, and a condition that ends the talk.
//! let ping = FnAgent::sync("ping", |_: &Thread| Ok("ping"));
//! let pong = FnAgent::sync("pong", |_: &Thread| Ok("pong"));
//! let rally = Workflow::builder()
//!     .name("rally")
//!     .participant(ping)
//!     .participant(pong)
//!     .router(Router::builder().add_route("user", "ping").add_route("ping", "pong").add_route("pong", "ping"))
//!     .stop_condition(StopCondition::max_messages(5))
//!     .build()?;
//!
//! let result = rally.run_task("serve", &RunContext::new()).await?;
//! assert_eq!(result.thread.len(), 5); // the task and four shots
//! assert_eq!(result.final_text(), "pong");
//!
//! // Runs are stateless: continue the conversation from the returned thread.
//! let mut thread = result.thread;
//! thread.push(troupe_runtime::Message::user("again"));
//! let again = rally.run(thread, &RunContext::new()).await?;
//! // Both agents may be mid-turn when the limit is reached; turns under way
//! // finish, so a concurrent run can end a message or two past it.
//! assert!(again.thread.len() >= 10);
//! # Ok(()) }
//! ```
//!
//! ## Actor messages and the cluster
//!
//! ractor's `cluster` feature is on for the whole workspace: it changes what
//! every actor message type must implement. Local actor messages implement
//! `ractor::Message` with no serialization ([`local_message!`]); the one
//! message that crosses nodes is declared by the `troupe-cluster` crate and
//! encoded with [`codec`], so distribution rewrites none of the local
//! actors, and this crate depends on no networking or TLS.

mod agent;
/// The checkpoint format (public only with the `fuzzing` feature: the
/// fuzz targets feed its decoders directly).
#[cfg(feature = "fuzzing")]
pub mod checkpoint;
#[cfg(not(feature = "fuzzing"))]
mod checkpoint;
mod clock;
mod context;
mod error;
pub mod event;
mod event_stream;
mod fn_agent;
pub mod graph;
pub mod history;
pub mod message;
mod panic;
pub mod prelude;
mod progress;
mod resumable;
pub mod retry;
mod run_error;
pub mod secrets;
pub mod session;
pub mod sink;
pub mod state;
pub mod stats;
pub mod stop;
pub mod store;
pub mod telemetry;
mod thread;
mod until_cancelled;
mod workflow;

pub use agent::{Agent, Renamed, Reply, ReplyParts};
pub use async_trait::async_trait;
pub use checkpoint::codec;
pub use clock::RunClock;
pub use context::RunContext;
pub use error::{BuildError, CheckpointError};
pub use event::Event;
pub use event_stream::EventStream;
pub use fn_agent::FnAgent;
pub use graph::Graph;
pub use message::{Content, Message};
pub use panic::panic_text;
pub use resumable::{InputRequest, RunStatus, SchedulerState, SchedulerStateError};
pub use retry::RetryPolicy;
pub use run_error::{AgentError, BoxError, ErrorKind, RunError};
pub use session::Session;
pub use stop::StopCondition;
pub use thread::{Thread, WorkflowState};
pub use tokio_util::sync::CancellationToken;
pub use troupe_router::{Clock, InboxConfig, Overflow, Router, RouterBuilder};
pub use until_cancelled::UntilCancelled;
pub use workflow::{ForkEdits, ProgressRelay, RunResult, RunStream, Workflow, WorkflowBuilder};

/// Declares a type as a local-only actor message.
///
/// With ractor's `cluster` feature every actor message implements
/// `ractor::Message`; messages that never leave the process take the
/// default (no serialization), which is all this macro writes.
#[macro_export]
macro_rules! local_message {
    ($t:ty) => {
        impl ::ractor::Message for $t {}
    };
}

// The README's example is compiled and run as a doc test, so it cannot
// drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
