//! Graph and step workflows as nodes and transitions, before any agent is
//! built: the builder makes the runtime graph from it, and `troupe graph`
//! draws it.

mod conditions;
mod graph;
mod steps;

pub(crate) use conditions::Blocks;
pub(crate) use graph::{Plan, PlanNode};
