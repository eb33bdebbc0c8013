//! The names most programs on the runtime use, for a glob import:
//!
//! ```
//! use troupe_runtime::prelude::*;
//!
//! let shout = FnAgent::sync("shout", |thread| {
//!     Ok(thread.last().map(|m| m.text_content().to_uppercase()).unwrap_or_default())
//! });
//! let workflow = Workflow::builder().participant(shout).build();
//! assert!(workflow.is_ok());
//! ```
//!
//! Everything else stays where it is (the crate root, or its module such
//! as [`store`](crate::store) or [`telemetry`](crate::telemetry)).

pub use crate::{
    Agent, AgentError, Content, ErrorKind, Event, FnAgent, Graph, Message, Reply, RetryPolicy,
    RunContext, RunError, RunResult, Session, StopCondition, Thread, Workflow, async_trait,
};
