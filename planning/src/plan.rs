//! [`Plan`]: steps and the dependencies between them, whatever form they
//! were written in, and the queries every other part asks of them.

use std::collections::{HashMap, HashSet};
use std::fmt;

use troupe_runtime::{graph::Isolation, message::USER};

use crate::error::PlanError;
use crate::passing::ResultScope;
use crate::step::PlanStep;
use crate::summarizer::Summarizer;
use crate::text::{self, PlanGraph};

/// A plan: steps and the dependencies between them, acyclic. Build one
/// from text ([`Plan::from_text`]) or from action groups
/// ([`ActionGroups`](crate::ActionGroups)); run it by compiling it into a workflow
/// ([`Plan::compile`]).
///
/// Its [`Display`](fmt::Display) is the text form: one line per edge and
/// one per step without any.
#[derive(Debug, Clone)]
pub struct Plan {
    pub(crate) nodes: Vec<Node>,
    pub(crate) edges: Vec<(usize, usize)>,
    /// Whose results steps receive unless the compile options say.
    pub(crate) scope: ResultScope,
}

/// One node of a plan.
#[derive(Debug, Clone)]
pub(crate) struct Node {
    pub(crate) id: String,
    pub(crate) kind: NodeKind,
}

#[derive(Debug, Clone)]
pub(crate) enum NodeKind {
    /// A step of its own.
    Step(PlanStep),
    /// A branch of a parallel group.
    Branch {
        step: PlanStep,
        /// The group's summarizer node.
        merge: usize,
        isolation: Isolation,
    },
    /// A parallel group's summarizer.
    Merge {
        summarizer: Summarizer,
        branches: Vec<usize>,
    },
}

impl Plan {
    /// A plan from a text graph whose ids name `steps` (steps the text does
    /// not name are left out).
    ///
    /// ```
    /// use troupe_planning::{Plan, PlanStep};
    /// use troupe_runtime::{FnAgent, Thread};
    ///
    /// let step = |id: &str| PlanStep::new(id, FnAgent::sync(id, |_: &Thread| Ok("ok")), "");
    /// let err = Plan::from_text("A -> B\nB -> C", [step("A"), step("B")]).unwrap_err();
    /// assert_eq!(err.to_string(), "line 2: unknown step 'C' (known: A, B)");
    /// ```
    pub fn from_text(
        text: &str,
        steps: impl IntoIterator<Item = PlanStep>,
    ) -> Result<Plan, PlanError> {
        Plan::from_graph(&PlanGraph::parse(text)?, steps)
    }

    /// A plan from a parsed graph whose ids name `steps`.
    pub fn from_graph(
        graph: &PlanGraph,
        steps: impl IntoIterator<Item = PlanStep>,
    ) -> Result<Plan, PlanError> {
        let mut by_id: HashMap<String, PlanStep> = HashMap::new();
        for step in steps {
            let id = step.id().to_string();
            if by_id.insert(id.clone(), step).is_some() {
                return Err(PlanError::DuplicateId(id));
            }
        }
        let mut nodes = Vec::with_capacity(graph.ids().len());
        for id in graph.ids() {
            let Some(step) = by_id.get(id) else {
                let mut known: Vec<&str> = by_id.keys().map(String::as_str).collect();
                known.sort_unstable();
                return Err(PlanError::UnknownStep {
                    line: graph.line_of(id).unwrap_or(0),
                    id: id.clone(),
                    known: known.join(", "),
                });
            };
            nodes.push(Node {
                id: id.clone(),
                kind: NodeKind::Step(step.clone()),
            });
        }
        Plan::new(
            nodes,
            graph.edge_indexes().to_vec(),
            ResultScope::Predecessors,
        )
    }

    /// Checks what every plan must hold: steps, unique ids, none reserved.
    pub(crate) fn new(
        nodes: Vec<Node>,
        edges: Vec<(usize, usize)>,
        scope: ResultScope,
    ) -> Result<Plan, PlanError> {
        if nodes.is_empty() {
            return Err(PlanError::Empty);
        }
        let mut seen = HashSet::new();
        for node in &nodes {
            if node.id == USER {
                return Err(PlanError::ReservedId {
                    line: 0,
                    id: node.id.clone(),
                });
            }
            if !seen.insert(node.id.as_str()) {
                return Err(PlanError::DuplicateId(node.id.clone()));
            }
        }
        Ok(Plan {
            nodes,
            edges,
            scope,
        })
    }

    /// The node ids (steps, and parallel groups' summarizers), in plan
    /// order.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.nodes.iter().map(|n| n.id.as_str())
    }

    /// The dependencies `(before, after)`.
    pub fn edges(&self) -> impl Iterator<Item = (&str, &str)> {
        self.edges
            .iter()
            .map(|&(a, b)| (self.nodes[a].id.as_str(), self.nodes[b].id.as_str()))
    }

    /// The nodes nothing comes before.
    pub fn starts(&self) -> Vec<&str> {
        let mut has_in = vec![false; self.nodes.len()];
        for &(_, b) in &self.edges {
            has_in[b] = true;
        }
        self.nodes
            .iter()
            .zip(has_in)
            .filter(|(_, has)| !has)
            .map(|(n, _)| n.id.as_str())
            .collect()
    }

    /// The nodes directly before `id`.
    pub fn predecessors(&self, id: &str) -> Vec<&str> {
        self.edges
            .iter()
            .filter(|&&(_, b)| self.nodes[b].id == id)
            .map(|&(a, _)| self.nodes[a].id.as_str())
            .collect()
    }

    /// The step named `id` (`None` for a summarizer or an unknown id).
    pub fn step(&self, id: &str) -> Option<&PlanStep> {
        self.nodes
            .iter()
            .find(|n| n.id == id)
            .and_then(|n| match &n.kind {
                NodeKind::Step(s) | NodeKind::Branch { step: s, .. } => Some(s),
                NodeKind::Merge { .. } => None,
            })
    }

    /// The node ids in the order the supersteps scheduler runs them: level
    /// by level (a node after all of its predecessors), in plan order
    /// within a level. Every dependency is respected.
    pub fn order(&self) -> Vec<&str> {
        self.topological_order()
            .into_iter()
            .map(|i| self.nodes[i].id.as_str())
            .collect()
    }

    /// Kahn's algorithm by levels, as supersteps run.
    pub(crate) fn topological_order(&self) -> Vec<usize> {
        let n = self.nodes.len();
        let mut indegree = vec![0usize; n];
        let mut out = vec![Vec::new(); n];
        for &(a, b) in &self.edges {
            indegree[b] += 1;
            out[a].push(b);
        }
        let mut level: Vec<usize> = (0..n).filter(|&i| indegree[i] == 0).collect();
        let mut order = Vec::with_capacity(n);
        while !level.is_empty() {
            let mut next = Vec::new();
            for &x in &level {
                for &y in &out[x] {
                    indegree[y] -= 1;
                    if indegree[y] == 0 {
                        next.push(y);
                    }
                }
            }
            order.append(&mut level);
            next.sort_unstable();
            level = next;
        }
        order
    }

    /// What later steps see as the description of `node`'s result.
    pub(crate) fn description_of(&self, node: &Node) -> String {
        match &node.kind {
            NodeKind::Step(s) | NodeKind::Branch { step: s, .. } => s.description().to_string(),
            NodeKind::Merge { branches, .. } => {
                let ids: Vec<&str> = branches
                    .iter()
                    .map(|&b| self.nodes[b].id.as_str())
                    .collect();
                format!("the results of {}", ids.join(", "))
            }
        }
    }
}

impl fmt::Display for Plan {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ids: Vec<String> = self.nodes.iter().map(|n| n.id.clone()).collect();
        text::write_graph(f, &ids, &self.edges)
    }
}
