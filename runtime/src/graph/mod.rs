//! Control-flow graphs: which agent runs after which, on what condition.
//!
//! A [`Graph`] is built with [`GraphBuilder`] and given to a workflow
//! ([`WorkflowBuilder::graph`](crate::WorkflowBuilder::graph)). The graph
//! decides who runs; a router, if the workflow has one too, decides what
//! each inbox receives — without one, a node's messages travel along the
//! transitions that fired.

mod builder;
mod condition;
pub(crate) mod cursor;
mod input_merge;
mod model;
pub(crate) mod node_input;
mod traversal;

pub use builder::{GraphBuilder, GraphError, GraphProblem};
pub use condition::{Condition, SCHEMA_KEY, StatePredicate, TurnPredicate, content_kind};
pub use input_merge::InputMerge;
pub use model::{EntryFn, Graph, Isolation, Join, Scheduler};
pub use node_input::{INPUT_KEY, NodeInput, attachment};
