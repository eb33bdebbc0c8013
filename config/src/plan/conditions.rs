//! [`CondPlan`]: a transition's condition as planned, and the runtime
//! condition (or the diagram label) it becomes.

use std::collections::BTreeMap;
use std::sync::Arc;

use troupe_runtime::graph::Condition;

use crate::schema::{ConditionForm, ConditionSpec};
use crate::template::{Board, Expr};

/// Parallel block id → the ids of its steps, in order.
pub(crate) type Blocks = Arc<BTreeMap<String, Vec<String>>>;

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
    /// The runtime condition; template expressions read the run's state
    /// (knowing parallel blocks `board`).
    pub(crate) fn runtime(&self, board: &Blocks) -> Result<Condition, String> {
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
        ConditionForm::Type(t) => format!("type {t}"),
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

fn spec_condition(s: &ConditionSpec, board: &Blocks) -> Result<Condition, String> {
    Ok(match &s.0 {
        ConditionForm::Always => Condition::always(),
        ConditionForm::Otherwise => Condition::otherwise(),
        ConditionForm::Contains(t) => Condition::text_contains(t.clone()),
        ConditionForm::Regex(r) => Condition::regex(r).map_err(|e| e.to_string())?,
        ConditionForm::HandoffTo(t) => Condition::handoff_to(t.clone()),
        ConditionForm::Source(n) => Condition::source_is(n.clone()),
        ConditionForm::Field(f) => Condition::field_equals(pointer(&f.path), &f.equals),
        ConditionForm::ToolCalled(t) => Condition::tool_called(t.clone()),
        ConditionForm::Type(t) => Condition::type_is(t.clone()),
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
            let blocks = board.clone();
            // The node's recorder put its output in its reply's state
            // delta, which the run applies before it judges the node's
            // transitions.
            Condition::state_func(expr.to_string(), move |state, _| {
                expr.evaluate(&Board::with_blocks(state, &blocks))
            })
        }
    })
}
