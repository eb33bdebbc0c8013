//! [`Plan`]: nodes, transitions and start nodes; a graph section as a
//! plan.

use std::collections::BTreeMap;

use troupe_runtime::{graph::Isolation, graph::Join, graph::NodeInput};

use super::conditions::CondPlan;
use crate::schema::{CacheSpec, ConditionForm, GraphSpec, MergeSpec, RetrySpec};
use crate::shorthand::Shorthand;

/// A node: its id and the agent or workflow it runs.
#[derive(Debug, Clone)]
pub(crate) struct PlanNode {
    pub(crate) id: String,
    pub(crate) target: String,
    pub(crate) retry: Option<RetrySpec>,
    pub(crate) join: Option<Join>,
    pub(crate) input: Option<NodeInput>,
    /// Its predecessors' results merged by a template (instead of `input`).
    pub(crate) merge: Option<MergeSpec>,
    /// Its result cache.
    pub(crate) cache: Option<CacheSpec>,
    pub(crate) fan_out: Option<Isolation>,
    /// Its transitions are a first-match switch.
    pub(crate) first_match: bool,
}

/// A transition.
#[derive(Debug, Clone)]
pub(crate) struct PlanEdge {
    pub(crate) from: usize,
    pub(crate) to: usize,
    pub(crate) cond: CondPlan,
    pub(crate) is_loop: bool,
    pub(crate) limit: Option<u32>,
}

/// Nodes, transitions and start nodes.
#[derive(Debug, Clone, Default)]
pub(crate) struct Plan {
    pub(crate) nodes: Vec<PlanNode>,
    pub(crate) edges: Vec<PlanEdge>,
    pub(crate) starts: Vec<usize>,
    /// Nodes that run a plan of their own as a nested workflow, by node
    /// id: a `parallel` block with `retry:`, rerun whole when any of its
    /// steps fails (all or nothing).
    pub(crate) blocks: BTreeMap<String, Plan>,
}

impl Plan {
    pub(super) fn index(&self, id: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.id == id)
    }

    /// A graph section as a plan.
    pub(crate) fn of_graph(g: &GraphSpec) -> Plan {
        let mut plan = Plan::default();
        for n in &g.nodes {
            plan.nodes.push(PlanNode {
                id: n.id().to_string(),
                target: n.0.agent.clone(),
                retry: n.0.retry.clone(),
                join: n.0.join,
                input: n.0.input.clone(),
                merge: n.0.merge.clone(),
                cache: n.0.cache.clone(),
                fan_out: n.0.fan_out,
                first_match: n.0.switch.is_some(),
            });
        }
        for n in &g.nodes {
            let (Some(s), Some(from)) = (&n.0.switch, plan.index(n.id())) else {
                continue;
            };
            let cases = s
                .cases
                .iter()
                .map(|c| (&c.to, CondPlan::Spec(c.when.clone())));
            let default = s.default.iter().map(|to| {
                let otherwise = Shorthand(ConditionForm::Otherwise);
                (to, CondPlan::Spec(otherwise))
            });
            for (to, cond) in cases.chain(default) {
                let Some(to) = plan.index(to) else { continue };
                plan.edges.push(PlanEdge {
                    from,
                    to,
                    cond,
                    is_loop: false,
                    limit: None,
                });
            }
        }
        for t in &g.transitions {
            let (Some(from), Some(to)) = (plan.index(&t.from), plan.index(&t.to)) else {
                continue;
            };
            plan.edges.push(PlanEdge {
                from,
                to,
                cond: t.when.clone().map_or(CondPlan::Always, CondPlan::Spec),
                is_loop: t.is_loop.unwrap_or(false) || t.max_iterations.is_some(),
                limit: t.max_iterations,
            });
        }
        plan.starts = g.start.iter().filter_map(|s| plan.index(s)).collect();
        plan
    }
}
