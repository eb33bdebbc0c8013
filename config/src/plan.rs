//! Graph and step workflows as nodes and transitions, before any agent is
//! built: the builder makes the runtime graph from it, and `troupe graph`
//! draws it.

use std::collections::BTreeMap;

use troupe_runtime::Condition;

use super::schema::{
    BranchSpec, ConditionForm, ConditionSpec, GraphSpec, InputSpec, IsolationSpec, JoinSpec,
    RetrySpec, StepKind, StepSpec,
};
use super::template::{Board, Expr};
use super::validate::{step_id, step_kind, step_target};

/// A node: its id and the agent or workflow it runs.
#[derive(Debug, Clone)]
pub(crate) struct PlanNode {
    pub(crate) id: String,
    pub(crate) target: String,
    pub(crate) retry: Option<RetrySpec>,
    pub(crate) join: Option<JoinSpec>,
    pub(crate) input: Option<InputSpec>,
    pub(crate) fan_out: Option<IsolationSpec>,
}

/// A condition as planned: a written one, or one made of a step
/// condition's branches.
#[derive(Debug, Clone)]
pub(crate) enum CondPlan {
    Always,
    Spec(ConditionSpec),
    Not(Box<CondPlan>),
    All(Vec<CondPlan>),
}

impl CondPlan {
    /// The runtime condition; template expressions read `board`.
    pub(crate) fn runtime(&self, board: &Board) -> Result<Condition, String> {
        Ok(match self {
            CondPlan::Always => Condition::always(),
            CondPlan::Spec(s) => spec_condition(s, board)?,
            CondPlan::Not(c) => Condition::not(c.runtime(board)?),
            CondPlan::All(v) => Condition::all(
                v.iter()
                    .map(|c| c.runtime(board))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
        })
    }

    /// A short label for diagrams.
    pub(crate) fn label(&self) -> String {
        match self {
            CondPlan::Always => String::new(),
            CondPlan::Spec(s) => spec_label(s),
            CondPlan::Not(c) => format!("not ({})", c.label()),
            CondPlan::All(v) => v
                .iter()
                .map(CondPlan::label)
                .collect::<Vec<_>>()
                .join(" and "),
        }
    }
}

fn spec_label(s: &ConditionSpec) -> String {
    match &s.0 {
        ConditionForm::Always => "always".into(),
        ConditionForm::Otherwise => "otherwise".into(),
        ConditionForm::Expr(e) => e.trim().to_string(),
        ConditionForm::Contains(t) => format!("contains {t:?}"),
        ConditionForm::Regex(r) => format!("matches /{r}/"),
        ConditionForm::HandoffTo(t) => format!("handoff to {t}"),
        ConditionForm::Source(n) => format!("from {n}"),
        ConditionForm::Field(f) => format!("{} == {}", f.path, f.equals),
        ConditionForm::ToolCalled(t) => format!("called {t}"),
        ConditionForm::Any(v) => v.iter().map(spec_label).collect::<Vec<_>>().join(" or "),
        ConditionForm::All(v) => v.iter().map(spec_label).collect::<Vec<_>>().join(" and "),
        ConditionForm::Not(c) => format!("not ({})", spec_label(c)),
    }
}

/// `a.b` or `/a/b` as a JSON pointer.
fn pointer(path: &str) -> String {
    let p = path.trim();
    if p.starts_with('/') {
        p.to_string()
    } else {
        format!("/{}", p.replace('.', "/"))
    }
}

fn spec_condition(s: &ConditionSpec, board: &Board) -> Result<Condition, String> {
    Ok(match &s.0 {
        ConditionForm::Always => Condition::always(),
        ConditionForm::Otherwise => Condition::otherwise(),
        ConditionForm::Contains(t) => Condition::text_contains(t.clone()),
        ConditionForm::Regex(r) => Condition::regex(r).map_err(|e| e.to_string())?,
        ConditionForm::HandoffTo(t) => Condition::handoff_to(t.clone()),
        ConditionForm::Source(n) => Condition::source_is(n.clone()),
        ConditionForm::Field(f) => Condition::field_equals(pointer(&f.path), &f.equals),
        ConditionForm::ToolCalled(t) => Condition::tool_called(t.clone()),
        ConditionForm::Any(v) => Condition::any(
            v.iter()
                .map(|c| spec_condition(c, board))
                .collect::<Result<Vec<_>, _>>()?,
        ),
        ConditionForm::All(v) => Condition::all(
            v.iter()
                .map(|c| spec_condition(c, board))
                .collect::<Result<Vec<_>, _>>()?,
        ),
        ConditionForm::Not(c) => Condition::not(spec_condition(c, board)?),
        ConditionForm::Expr(e) => {
            let expr = Expr::parse(e).map_err(|e| e.message)?;
            let board = board.clone();
            // The node's recorder has written its output to the board
            // before the engine judges its transitions.
            Condition::func(expr.to_string(), move |_| expr.evaluate(&board))
        }
    })
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
}

impl Plan {
    fn index(&self, id: &str) -> Option<usize> {
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
                input: n.0.input,
                fan_out: n.0.fan_out,
            });
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

    /// cagent-style steps as a plan: a chain, fan-out and join for
    /// parallel blocks, conditional transitions for condition steps, loops
    /// for branches that go back.
    pub(crate) fn of_steps(steps: &[StepSpec]) -> Plan {
        let mut c = StepCompiler {
            plan: Plan::default(),
            entries: BTreeMap::new(),
        };
        let first = c.plan.nodes.len();
        c.list(steps, Vec::new());
        if let Some(s) = steps.first()
            && let Some(id) = step_id(s)
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
        for &t in targets {
            if sources.len() > 1 && !is_loop {
                // After a parallel block: wait for every branch.
                self.plan.nodes[t].join = Some(JoinSpec::All);
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
        match step_kind(s) {
            Some(StepKind::Agent | StepKind::Workflow) => {
                let (Some(id), Some(target)) = (step_id(s), step_target(s)) else {
                    return frontier;
                };
                let n = self.plan.nodes.len();
                self.plan.nodes.push(PlanNode {
                    id: id.clone(),
                    target: target.to_string(),
                    retry: s.retry.clone(),
                    join: None,
                    input: None,
                    fan_out: None,
                });
                self.connect(&frontier, &[n], false);
                self.entries.insert(id, vec![n]);
                vec![(n, Vec::new())]
            }
            Some(StepKind::Parallel) => {
                let mut out = Vec::new();
                let mut entries = Vec::new();
                for child in s.steps.iter().flatten() {
                    out.extend(self.step(child, frontier.clone()));
                    if let Some(e) = step_id(child).and_then(|id| self.entries.get(&id)) {
                        entries.extend(e.iter().copied());
                    }
                }
                if let Some(id) = step_id(s) {
                    self.entries.insert(id, entries);
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
                        Some(BranchSpec::Steps(list)) => out.extend(self.list(list, f)),
                        Some(BranchSpec::Goto(target)) => {
                            let targets = self.entries.get(target).cloned().unwrap_or_default();
                            self.connect(&f, &targets, true);
                        }
                    }
                }
                out
            }
            None => frontier,
        }
    }
}
