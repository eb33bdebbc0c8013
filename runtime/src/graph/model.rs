//! [`Graph`]: a validated control-flow graph of agents, and the options
//! of its nodes (joins, thread isolation) and of its scheduling.

use std::fmt;
use std::sync::Arc;

use super::condition::Condition;
use super::node_input::NodeInput;
use crate::agent::Agent;
use crate::retry::RetryPolicy;
use crate::thread::{Thread, WorkflowState};

/// How a node with several incoming transitions waits for them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "schema", derive(serde::Deserialize, schemars::JsonSchema))]
#[cfg_attr(feature = "schema", serde(rename_all = "snake_case"))]
pub enum Join {
    /// Runs once every incoming transition has fired.
    All,
    /// Runs as soon as one incoming transition fires.
    Any,
    /// Runs once every incoming transition that can still fire has fired:
    /// branches whose conditions failed are not waited for.
    #[default]
    AllThatCanArrive,
}

/// How the branches of a fan-out start their threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "schema", derive(serde::Deserialize, schemars::JsonSchema))]
#[cfg_attr(feature = "schema", serde(rename_all = "snake_case"))]
pub enum Isolation {
    /// Each branch keeps its own thread and receives only what is delivered.
    #[default]
    Fresh,
    /// Each branch first receives a copy of the parent's thread.
    Inherit,
}

/// When activated nodes start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(feature = "schema", derive(serde::Deserialize, schemars::JsonSchema))]
#[cfg_attr(feature = "schema", serde(rename_all = "snake_case"))]
pub enum Scheduler {
    /// In supersteps: all activated nodes run concurrently, and the next
    /// set starts when all have finished. Deterministic; checkpoints are
    /// taken between supersteps.
    #[default]
    Supersteps,
    /// A node starts as soon as its own inputs are ready, with no barrier
    /// across branches.
    Dataflow,
}

/// Picks the node a run starts at from the state a previous run left;
/// `None` falls back to the graph's start nodes.
pub type EntryFn = Arc<dyn Fn(&Thread, &WorkflowState) -> Option<String> + Send + Sync>;

/// A transition between two nodes.
#[derive(Debug, Clone)]
pub(crate) struct Edge {
    pub(crate) from: usize,
    pub(crate) to: usize,
    pub(crate) condition: Condition,
    /// A back-edge closes a loop: it is counted and limited, and it does not
    /// take part in joins.
    pub(crate) back: bool,
    pub(crate) limit: u32,
}

/// A validated control-flow graph of agents.
#[derive(Clone)]
pub struct Graph {
    pub(crate) agents: Vec<Arc<dyn Agent>>,
    pub(crate) names: Vec<String>,
    pub(crate) edges: Vec<Edge>,
    /// Edge indexes by source node.
    pub(crate) out: Vec<Vec<usize>>,
    /// Forward (non-back) edge indexes by target node.
    pub(crate) forward_in: Vec<Vec<usize>>,
    pub(crate) starts: Vec<usize>,
    pub(crate) joins: Vec<Join>,
    pub(crate) inputs: Vec<NodeInput>,
    pub(crate) isolation: Vec<Isolation>,
    pub(crate) retries: Vec<Option<RetryPolicy>>,
    /// Nodes whose conditional transitions form a switch: only the first
    /// that holds (in the order added) fires.
    pub(crate) first_match: Vec<bool>,
    pub(crate) scheduler: Scheduler,
    pub(crate) max_supersteps: Option<u64>,
    /// Cycles no condition can leave: fine only under a stop condition.
    pub(crate) endless_cycles: Vec<Vec<String>>,
    pub(crate) entry: Option<EntryFn>,
}

impl fmt::Debug for Graph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Graph")
            .field("nodes", &self.names)
            .field("edges", &self.edges)
            .field("starts", &self.starts)
            .field("scheduler", &self.scheduler)
            .finish()
    }
}

impl Graph {
    /// The nodes' names, in the order they were added.
    pub fn nodes(&self) -> &[String] {
        &self.names
    }

    /// Each transition as (from, to, condition, is a loop).
    pub fn transitions(&self) -> impl Iterator<Item = (&str, &str, &Condition, bool)> {
        self.edges.iter().map(|e| {
            (
                self.names[e.from].as_str(),
                self.names[e.to].as_str(),
                &e.condition,
                e.back,
            )
        })
    }

    /// The start nodes.
    pub fn starts(&self) -> impl Iterator<Item = &str> {
        self.starts.iter().map(|&i| self.names[i].as_str())
    }

    /// The scheduler.
    pub fn scheduler(&self) -> Scheduler {
        self.scheduler
    }

    /// A text of the topology (nodes, edges, conditions, options) from which
    /// checkpoints take their topology hash.
    pub fn topology(&self) -> String {
        let mut s = format!("nodes={:?};starts={:?};", self.names, self.starts);
        for e in &self.edges {
            s.push_str(&format!(
                "{}->{}[{}{}{}];",
                e.from,
                e.to,
                e.condition,
                if e.back { ",loop" } else { "" },
                if e.back {
                    format!(",{}", e.limit)
                } else {
                    String::new()
                }
            ));
        }
        s.push_str(&format!(
            "joins={:?};inputs={:?};isolation={:?};scheduler={:?}",
            self.joins, self.inputs, self.isolation, self.scheduler
        ));
        // Only graphs with a switch say so: others keep their topology hash.
        if self.first_match.contains(&true) {
            s.push_str(&format!(";first_match={:?}", self.first_match));
        }
        s
    }
}
