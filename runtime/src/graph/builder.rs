//! [`GraphBuilder`]: describes a graph and validates it into a [`Graph`].

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::sync::Arc;

use troupe_router::algo;

use super::condition::Condition;
use super::model::{Edge, EntryFn, Graph, Isolation, Join, Scheduler};
use super::node_input::NodeInput;
use crate::agent::Agent;
use crate::retry::RetryPolicy;
use crate::thread::{Thread, WorkflowState};

impl Graph {
    /// Starts describing a graph.
    pub fn builder() -> GraphBuilder {
        GraphBuilder::default()
    }
}

/// The per-loop iteration limit when none is given.
pub const DEFAULT_LOOP_LIMIT: u32 = 100;

/// One thing wrong with a graph.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum GraphProblem {
    /// The graph has no node.
    Empty,
    /// Two nodes share a name.
    DuplicateNode(String),
    /// A transition, start or option names a node that is not in the graph.
    UnknownNode {
        /// The unknown name.
        name: String,
        /// Where it was named.
        context: String,
    },
    /// No node can start the run.
    NoStart,
    /// A node no path from a start node reaches.
    Unreachable(String),
    /// A cycle whose transitions are all unconditional: it never ends by
    /// itself.
    CycleWithoutExit(Vec<String>),
    /// A node with both unconditional and conditional transitions, which
    /// leaves open whether the unconditional one is a default or a fan-out.
    Ambiguous {
        /// The node.
        node: String,
        /// Targets of its unconditional transitions.
        unconditional: Vec<String>,
        /// Targets of its conditional transitions.
        conditional: Vec<String>,
    },
}

impl fmt::Display for GraphProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            GraphProblem::Empty => f.write_str("the graph has no nodes"),
            GraphProblem::DuplicateNode(n) => write!(f, "two nodes are named '{n}'"),
            GraphProblem::UnknownNode { name, context } => {
                write!(f, "unknown agent '{name}' in {context}")
            }
            GraphProblem::NoStart => f.write_str(
                "no start node: every node has an incoming transition; name one with .start(..)",
            ),
            GraphProblem::Unreachable(n) => {
                write!(f, "node '{n}' is unreachable from the start node(s)")
            }
            GraphProblem::CycleWithoutExit(nodes) => write!(
                f,
                "the cycle {} has no conditional exit: it would run forever (make a transition conditional, or give the workflow a stop condition)",
                nodes.join(" -> ")
            ),
            GraphProblem::Ambiguous {
                node,
                unconditional,
                conditional,
            } => write!(
                f,
                "node '{node}' mixes unconditional transitions (to {}) with conditional ones (to {}): use Condition::otherwise() for a default branch, or make every transition conditional",
                unconditional.join(", "),
                conditional.join(", ")
            ),
        }
    }
}

/// A graph that does not validate; lists every problem found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct GraphError {
    /// Every problem, in a stable order.
    pub problems: Vec<GraphProblem>,
}

impl fmt::Display for GraphError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("invalid graph: ")?;
        for (i, p) in self.problems.iter().enumerate() {
            if i > 0 {
                f.write_str("; ")?;
            }
            write!(f, "{p}")?;
        }
        Ok(())
    }
}

struct EdgeSpec {
    from: String,
    to: String,
    condition: Condition,
    back: bool,
    limit: Option<u32>,
}

/// Describes a control-flow graph of agents.
///
/// ```
/// use troupe_runtime::{graph::Condition, FnAgent, Graph, Thread};
///
/// let step = |name: &str| FnAgent::sync(name, |_: &Thread| Ok("ok"));
/// let graph = Graph::builder()
///     .add_agent(step("write"))
///     .add_agent(step("review"))
///     .add_agent(step("publish"))
///     .add_transition("write", "review", Condition::always())
///     .add_loop("review", "write", Condition::text_contains("REJECT"))
///     .add_transition("review", "publish", Condition::text_contains("APPROVE"))
///     .build()
///     .unwrap();
/// assert_eq!(graph.starts().collect::<Vec<_>>(), ["write"]);
/// ```
#[derive(Default)]
pub struct GraphBuilder {
    agents: Vec<Arc<dyn Agent>>,
    edges: Vec<EdgeSpec>,
    starts: Vec<String>,
    joins: BTreeMap<String, Join>,
    inputs: BTreeMap<String, NodeInput>,
    isolation: BTreeMap<String, Isolation>,
    retries: BTreeMap<String, RetryPolicy>,
    first_match: BTreeSet<String>,
    scheduler: Scheduler,
    max_supersteps: Option<u64>,
    loop_limit: Option<u32>,
    entry: Option<EntryFn>,
}

impl fmt::Debug for GraphBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("GraphBuilder")
            .field(
                "nodes",
                &self.agents.iter().map(|a| a.name()).collect::<Vec<_>>(),
            )
            .field("edges", &self.edges.len())
            .finish()
    }
}

impl GraphBuilder {
    /// Adds a node.
    pub fn add_agent(self, agent: impl Agent) -> Self {
        self.add_agent_arc(Arc::new(agent))
    }

    /// Adds a shared node.
    pub fn add_agent_arc(mut self, agent: Arc<dyn Agent>) -> Self {
        self.agents.push(agent);
        self
    }

    /// Adds several shared nodes.
    pub fn add_agents(mut self, agents: impl IntoIterator<Item = Arc<dyn Agent>>) -> Self {
        self.agents.extend(agents);
        self
    }

    /// Adds a transition from `from` to `to`, taken when `condition` holds
    /// for what `from` produced.
    pub fn add_transition(
        mut self,
        from: impl Into<String>,
        to: impl Into<String>,
        condition: Condition,
    ) -> Self {
        self.edges.push(EdgeSpec {
            from: from.into(),
            to: to.into(),
            condition,
            back: false,
            limit: None,
        });
        self
    }

    /// Adds an unconditional transition.
    pub fn add_edge(self, from: impl Into<String>, to: impl Into<String>) -> Self {
        self.add_transition(from, to, Condition::Always)
    }

    /// Adds a first-match switch from `from`: the cases' transitions in
    /// order, of which only the first whose condition holds fires, and a
    /// `default` taken when none holds (seed 002's SwitchCaseEdgeRunner).
    /// A case back to an earlier node is a loop, limited as loops are.
    pub fn add_switch(
        self,
        from: impl Into<String>,
        cases: impl IntoIterator<Item = (String, Condition)>,
        default: Option<String>,
    ) -> Self {
        let from = from.into();
        let mut b = self;
        for (to, condition) in cases {
            b = b.add_transition(from.clone(), to, condition);
        }
        if let Some(to) = default {
            b = b.add_transition(from.clone(), to, Condition::otherwise());
        }
        b.first_match(from)
    }

    /// Makes `node`'s conditional transitions a first-match switch, in the
    /// order they were added (see [`GraphBuilder::add_switch`]).
    pub fn first_match(mut self, node: impl Into<String>) -> Self {
        self.first_match.insert(node.into());
        self
    }

    /// Adds a loop: a transition from `from` back to the earlier node `to`,
    /// taken when `condition` holds, at most the loop limit times per run
    /// (exceeding it fails the run).
    pub fn add_loop(
        self,
        from: impl Into<String>,
        to: impl Into<String>,
        condition: Condition,
    ) -> Self {
        self.push_loop(from.into(), to.into(), condition, None)
    }

    /// Adds a loop with its own iteration limit.
    pub fn add_loop_with_limit(
        self,
        from: impl Into<String>,
        to: impl Into<String>,
        condition: Condition,
        limit: u32,
    ) -> Self {
        self.push_loop(from.into(), to.into(), condition, Some(limit))
    }

    fn push_loop(
        mut self,
        from: String,
        to: String,
        condition: Condition,
        limit: Option<u32>,
    ) -> Self {
        self.edges.push(EdgeSpec {
            from,
            to,
            condition,
            back: true,
            limit,
        });
        self
    }

    /// Names a start node (several may be named). Without any, the nodes
    /// with no incoming transition start.
    pub fn start(mut self, node: impl Into<String>) -> Self {
        self.starts.push(node.into());
        self
    }

    /// How `node` waits for its incoming transitions (default
    /// [`Join::AllThatCanArrive`]).
    pub fn join(mut self, node: impl Into<String>, join: Join) -> Self {
        self.joins.insert(node.into(), join);
        self
    }

    /// What `node` receives of its predecessors (default
    /// [`NodeInput::Messages`]).
    pub fn input(mut self, node: impl Into<String>, input: NodeInput) -> Self {
        self.inputs.insert(node.into(), input);
        self
    }

    /// How the branches that `node` fans out to start their threads.
    pub fn fan_out(mut self, node: impl Into<String>, isolation: Isolation) -> Self {
        self.isolation.insert(node.into(), isolation);
        self
    }

    /// Retries `node`'s failed turns.
    pub fn retry(mut self, node: impl Into<String>, policy: RetryPolicy) -> Self {
        self.retries.insert(node.into(), policy);
        self
    }

    /// Chooses the scheduler (default [`Scheduler::Supersteps`]).
    pub fn scheduler(mut self, scheduler: Scheduler) -> Self {
        self.scheduler = scheduler;
        self
    }

    /// Fails a run that takes more than `n` supersteps.
    pub fn max_supersteps(mut self, n: u64) -> Self {
        self.max_supersteps = Some(n);
        self
    }

    /// The iteration limit of loops added without their own.
    pub fn loop_limit(mut self, n: u32) -> Self {
        self.loop_limit = Some(n);
        self
    }

    /// Chooses where a run starts from the state a previous run left (for
    /// example the agent that handed off to the user). Returning `None`
    /// falls back to the start nodes.
    pub fn entry(
        mut self,
        f: impl Fn(&Thread, &WorkflowState) -> Option<String> + Send + Sync + 'static,
    ) -> Self {
        self.entry = Some(Arc::new(f));
        self
    }

    /// Validates the graph. Every problem is reported at once.
    pub fn build(self) -> Result<Graph, GraphError> {
        let mut problems = Vec::new();
        let names: Vec<String> = self.agents.iter().map(|a| a.name().to_string()).collect();
        if names.is_empty() {
            problems.push(GraphProblem::Empty);
        }
        let mut index: HashMap<&str, usize> = HashMap::new();
        for (i, n) in names.iter().enumerate() {
            if index.insert(n.as_str(), i).is_some() {
                problems.push(GraphProblem::DuplicateNode(n.clone()));
            }
        }
        let mut lookup = |name: &str, context: String| -> Option<usize> {
            let found = index.get(name).copied();
            if found.is_none() {
                problems.push(GraphProblem::UnknownNode {
                    name: name.to_string(),
                    context,
                });
            }
            found
        };

        let loop_limit = self.loop_limit.unwrap_or(DEFAULT_LOOP_LIMIT);
        let mut edges = Vec::new();
        for e in &self.edges {
            let context = format!("transition {} -> {}", e.from, e.to);
            let from = lookup(&e.from, context.clone());
            let to = lookup(&e.to, context);
            if let (Some(from), Some(to)) = (from, to) {
                edges.push(Edge {
                    from,
                    to,
                    condition: e.condition.clone(),
                    back: e.back,
                    limit: e.limit.unwrap_or(loop_limit),
                });
            }
        }
        let mut starts = Vec::new();
        for s in &self.starts {
            if let Some(i) = lookup(s, "start".into()) {
                starts.push(i);
            }
        }
        let n = names.len();
        let option_nodes: Vec<(&String, &str)> = self
            .joins
            .keys()
            .map(|k| (k, "join option"))
            .chain(self.inputs.keys().map(|k| (k, "input option")))
            .chain(self.isolation.keys().map(|k| (k, "fan-out option")))
            .chain(self.retries.keys().map(|k| (k, "retry option")))
            .chain(self.first_match.iter().map(|k| (k, "switch")))
            .collect();
        for (name, what) in option_nodes {
            lookup(name, what.to_string());
        }

        if starts.is_empty() {
            let mut has_in = vec![false; n];
            for e in edges.iter().filter(|e| !e.back) {
                has_in[e.to] = true;
            }
            starts = (0..n).filter(|&i| !has_in[i]).collect();
            if starts.is_empty() && n > 0 {
                problems.push(GraphProblem::NoStart);
            }
        }

        let mut out = vec![Vec::new(); n];
        for (i, e) in edges.iter().enumerate() {
            out[e.from].push(i);
        }
        // Each node's successors, edge for edge (so position `k` of
        // `successors[v]` is edge `out[v][k]`).
        let successors: Vec<Vec<usize>> = out
            .iter()
            .map(|es| es.iter().map(|&e| edges[e].to).collect())
            .collect();
        // Depth-first from the starts: an edge into a node still on the path
        // closes a loop even if it was not declared as one.
        let walk = algo::depth_first(&successors, starts.iter().copied());
        for back in &walk.back_edges {
            edges[out[back.from][back.index]].back = true;
        }
        for (i, name) in names.iter().enumerate() {
            if !walk.reached[i] && !starts.is_empty() {
                problems.push(GraphProblem::Unreachable(name.clone()));
            }
        }
        let mut forward_in = vec![Vec::new(); n];
        for (i, e) in edges.iter().enumerate() {
            if !e.back {
                forward_in[e.to].push(i);
            }
        }
        for (node, outs) in out.iter().enumerate() {
            let uncond: Vec<String> = outs
                .iter()
                .filter(|&&e| edges[e].condition.is_always())
                .map(|&e| names[edges[e].to].clone())
                .collect();
            let cond: Vec<String> = outs
                .iter()
                .filter(|&&e| !edges[e].condition.is_always())
                .map(|&e| names[edges[e].to].clone())
                .collect();
            if !uncond.is_empty() && !cond.is_empty() {
                problems.push(GraphProblem::Ambiguous {
                    node: names[node].clone(),
                    unconditional: uncond,
                    conditional: cond,
                });
            }
        }
        let endless_cycles = endless_cycles(&successors, &edges, &names);

        if !problems.is_empty() {
            return Err(GraphError { problems });
        }
        let by_name = |i: usize| names[i].as_str();
        Ok(Graph {
            joins: (0..n)
                .map(|i| self.joins.get(by_name(i)).copied().unwrap_or_default())
                .collect(),
            inputs: (0..n)
                .map(|i| self.inputs.get(by_name(i)).cloned().unwrap_or_default())
                .collect(),
            isolation: (0..n)
                .map(|i| self.isolation.get(by_name(i)).copied().unwrap_or_default())
                .collect(),
            retries: (0..n)
                .map(|i| self.retries.get(by_name(i)).cloned())
                .collect(),
            first_match: (0..n)
                .map(|i| self.first_match.contains(by_name(i)))
                .collect(),
            agents: self.agents,
            edges,
            out,
            forward_in,
            starts,
            scheduler: self.scheduler,
            max_supersteps: self.max_supersteps,
            endless_cycles,
            entry: self.entry,
            names,
        })
    }
}

/// Strongly connected components whose internal edges are all
/// unconditional: cycles nothing but a stop condition can end. In the
/// components' order (reverse topological), each sorted.
fn endless_cycles(successors: &[Vec<usize>], edges: &[Edge], names: &[String]) -> Vec<Vec<String>> {
    let components = algo::strongly_connected_components(successors);
    // Per component: has an internal edge, and are all internal edges
    // unconditional — one pass over the edges.
    let mut internal = vec![false; components.len()];
    let mut all_always = vec![true; components.len()];
    for e in edges {
        if let (Some(c), Some(to)) = (
            components.component_of(e.from),
            components.component_of(e.to),
        ) && c == to
        {
            internal[c] = true;
            all_always[c] &= e.condition.is_always();
        }
    }
    components
        .iter()
        .enumerate()
        .filter(|&(c, members)| (members.len() > 1 || internal[c]) && all_always[c])
        .map(|(_, members)| members.iter().map(|&i| names[i].clone()).collect())
        .collect()
}
