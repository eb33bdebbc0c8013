//! cagent-style steps as a [`Plan`]: a chain, fan-out and join for
//! parallel blocks, conditional transitions for condition steps, loops for
//! branches that go back.

use std::collections::BTreeMap;

use troupe_runtime::graph::Join;

use super::conditions::CondPlan;
use super::graph::{Plan, PlanEdge, PlanNode};
use crate::schema::{Branch, MergeSpec, StepKind, StepSpec};
use crate::shorthand::Shorthand;

impl Plan {
    /// cagent-style steps as a plan: a chain, fan-out and join for
    /// parallel blocks, conditional transitions for condition steps, loops
    /// for branches that go back.
    pub(crate) fn of_steps(steps: &[StepSpec]) -> Plan {
        let mut c = StepCompiler {
            plan: Plan::default(),
            entries: BTreeMap::new(),
            forward: Vec::new(),
            merges: Vec::new(),
        };
        let first = c.plan.nodes.len();
        c.list(steps, Vec::new());
        // Gotos to steps defined after them, now that every step is.
        for (frontier, target) in std::mem::take(&mut c.forward) {
            let targets = c.entries.get(&target).cloned().unwrap_or_default();
            c.connect(&frontier, &targets, false);
        }
        if let Some(s) = steps.first()
            && let Some(id) = s.step_id()
            && let Some(entries) = c.entries.get(&id)
        {
            c.plan.starts = entries.clone();
        } else if c.plan.nodes.len() > first {
            c.plan.starts = vec![first];
        }
        c.plan
    }
}

type Frontier = Vec<(usize, Vec<CondPlan>)>;

struct StepCompiler {
    plan: Plan,
    /// A step id's entry nodes (where a branch going back to it lands).
    entries: BTreeMap<String, Vec<usize>>,
    /// `goto:` steps to a step not yet compiled: where they leave from,
    /// and the step.
    forward: Vec<(Frontier, String)>,
    /// Parallel blocks with `merge:`: the nodes the block ends on, and the
    /// merge the node after them reads their results by.
    merges: Vec<(Vec<usize>, MergeSpec)>,
}

impl StepCompiler {
    fn list(&mut self, steps: &[StepSpec], mut frontier: Frontier) -> Frontier {
        for s in steps {
            frontier = self.step(s, frontier);
        }
        frontier
    }

    fn connect(&mut self, frontier: &Frontier, targets: &[usize], is_loop: bool) {
        let mut sources: Vec<usize> = frontier.iter().map(|(n, _)| *n).collect();
        sources.dedup();
        let merge = self
            .merges
            .iter()
            .find(|(ends, _)| {
                !is_loop && !sources.is_empty() && sources.iter().all(|s| ends.contains(s))
            })
            .map(|(_, m)| m.clone());
        for &t in targets {
            if sources.len() > 1 && !is_loop {
                // After a parallel block: wait for every branch.
                self.plan.nodes[t].join = Some(Join::All);
            }
            if merge.is_some() {
                self.plan.nodes[t].merge = merge.clone();
            }
            for (n, conds) in frontier {
                let cond = match conds.as_slice() {
                    [] => CondPlan::Always,
                    [one] => one.clone(),
                    many => CondPlan::All(many.to_vec()),
                };
                self.plan.edges.push(PlanEdge {
                    from: *n,
                    to: t,
                    cond,
                    is_loop,
                    limit: None,
                });
            }
        }
    }

    fn step(&mut self, s: &StepSpec, frontier: Frontier) -> Frontier {
        match s.step_kind() {
            Some(StepKind::Agent | StepKind::Workflow) => {
                let (Some(id), Some(target)) = (s.step_id(), s.target()) else {
                    return frontier;
                };
                let n = self.plan.nodes.len();
                self.plan.nodes.push(PlanNode {
                    id: id.clone(),
                    target: target.to_string(),
                    retry: s.retry.clone(),
                    join: None,
                    input: None,
                    merge: None,
                    cache: s.cache.clone(),
                    fan_out: None,
                    first_match: false,
                });
                self.connect(&frontier, &[n], false);
                self.entries.insert(id, vec![n]);
                vec![(n, Vec::new())]
            }
            Some(StepKind::Parallel) if s.retry.is_some() => self.retried_block(s, frontier),
            Some(StepKind::Parallel) => {
                let mut out = Vec::new();
                let mut entries = Vec::new();
                for child in s.steps.iter().flatten() {
                    out.extend(self.step(child, frontier.clone()));
                    if let Some(e) = child.step_id().and_then(|id| self.entries.get(&id)) {
                        entries.extend(e.iter().copied());
                    }
                }
                if let Some(id) = s.step_id() {
                    self.entries.insert(id, entries);
                }
                if let Some(m) = &s.merge {
                    let mut ends: Vec<usize> = out.iter().map(|(n, _)| *n).collect();
                    ends.dedup();
                    self.merges.push((ends, m.clone()));
                }
                out
            }
            Some(StepKind::Condition) => {
                let Some(cond) = &s.condition else {
                    return frontier;
                };
                let pred = CondPlan::Spec(cond.clone());
                let mut out = Vec::new();
                for (branch, holds) in [(&s.when_true, true), (&s.when_false, false)] {
                    let test = if holds {
                        pred.clone()
                    } else {
                        CondPlan::Not(Box::new(pred.clone()))
                    };
                    let f: Frontier = frontier
                        .iter()
                        .map(|(n, c)| {
                            let mut c = c.clone();
                            c.push(test.clone());
                            (*n, c)
                        })
                        .collect();
                    match branch {
                        None => out.extend(f),
                        Some(Shorthand(Branch::Steps(list))) => out.extend(self.list(list, f)),
                        Some(Shorthand(Branch::Goto(target))) => {
                            let targets = self.entries.get(target).cloned().unwrap_or_default();
                            self.connect(&f, &targets, true);
                        }
                    }
                }
                out
            }
            Some(StepKind::Goto) => {
                let Some(target) = &s.goto else {
                    return frontier;
                };
                match self.entries.get(target).cloned() {
                    Some(targets) => self.connect(&frontier, &targets, true),
                    None => self.forward.push((frontier, target.clone())),
                }
                // The step after a goto is not reached from it.
                Vec::new()
            }
            None => frontier,
        }
    }

    /// A parallel block with `retry:`: one node running the block as a
    /// nested workflow under the retry policy, so a failure of any of its
    /// steps (after their own retries) runs every step of it again.
    fn retried_block(&mut self, s: &StepSpec, frontier: Frontier) -> Frontier {
        let Some(id) = s.step_id() else {
            return frontier;
        };
        let mut inner = s.clone();
        inner.retry = None;
        inner.merge = None;
        let n = self.plan.nodes.len();
        self.plan.nodes.push(PlanNode {
            id: id.clone(),
            target: id.clone(),
            retry: s.retry.clone(),
            join: None,
            input: None,
            merge: None,
            cache: None,
            fan_out: None,
            first_match: false,
        });
        self.plan
            .blocks
            .insert(id.clone(), Plan::of_steps(std::slice::from_ref(&inner)));
        self.connect(&frontier, &[n], false);
        self.entries.insert(id, vec![n]);
        if let Some(m) = &s.merge {
            self.merges.push((vec![n], m.clone()));
        }
        vec![(n, Vec::new())]
    }
}
