//! `steps:`: every step does one known thing, ids are unique, parallel
//! blocks have ids, conditions judge steps defined before them and branch
//! back only to earlier steps, and a loop has an exit.

use std::collections::{BTreeMap, BTreeSet};

use super::checker::{Checker, Defined, expected_names};
use super::conditions::check_condition;
use super::participants::plain_or_remote;
use super::retry::check_retry;
use crate::schema::{Branch, ConfigFile, StepKind, StepSpec, WorkflowSpec, collect_step_ids};
use crate::tree::FieldPath;

/// Checks the step list at `base` of workflow `w`; gives the step ids, in
/// the order they are defined.
pub(super) fn check_steps(
    c: &mut Checker<'_>,
    names: &Defined,
    spec: &ConfigFile,
    base: &FieldPath,
    w: &WorkflowSpec,
    steps: &[StepSpec],
) -> Vec<String> {
    if steps.is_empty() {
        c.value_error(base, "no steps", Some("at least one step".into()));
    }
    let mut check = StepCheck {
        names,
        spec,
        has_stop: w.has_stop(),
        defined: Vec::new(),
        retried: BTreeMap::new(),
        all: {
            let mut all = BTreeSet::new();
            collect_step_ids(steps, &mut all);
            all
        },
        in_branch: 0,
    };
    check.list(c, base, steps, false);
    check.defined
}

/// What checking a workflow's steps needs, and the ids defined so far.
struct StepCheck<'s> {
    names: &'s Defined,
    spec: &'s ConfigFile,
    has_stop: bool,
    defined: Vec<String>,
    /// Steps inside a parallel block with `retry:` (which runs as one
    /// node, a nested workflow), with that block's id.
    retried: BTreeMap<String, String>,
    /// Every step id of the workflow (a goto may go forward).
    all: BTreeSet<String>,
    /// How deep in condition branches the steps being checked are.
    in_branch: usize,
}

impl StepCheck<'_> {
    fn list(
        &mut self,
        c: &mut Checker<'_>,
        base: &FieldPath,
        steps: &[StepSpec],
        in_parallel: bool,
    ) {
        let mut all_ids = BTreeSet::new();
        collect_step_ids(steps, &mut all_ids);
        for (i, s) in steps.iter().enumerate() {
            let sp = base.index(i);
            if c.was_removed(&sp) {
                continue;
            }
            let Some(kind) = s.step_kind() else {
                // Its `agent:` (or other kind) was dropped for an error of its own.
                if c.lost_part(&sp) {
                    continue;
                }
                c.error(
                    &sp,
                    "a step needs something to do",
                    Some("`agent:`, `workflow:`, `steps:` (parallel) or `condition:`".into()),
                );
                continue;
            };
            check_misplaced(c, &sp, s, kind);
            let id = s.step_id();
            if kind == StepKind::Parallel && s.id.is_none() {
                c.error(
                    &sp,
                    "a parallel step needs an `id`",
                    Some("`id:` (templates read the block's outputs through it)".into()),
                );
            }
            if let Some(id) = &id
                && self.defined.contains(id)
            {
                let at = if s.id.is_some() {
                    sp.key("id")
                } else {
                    sp.clone()
                };
                c.value_error(
                    &at,
                    format!("step id `{id}` is used twice"),
                    Some("a unique `id:`".into()),
                );
            }
            if let Some(r) = &s.retry {
                if r.on.as_ref().is_some_and(Vec::is_empty) {
                    c.value_error(
                        &sp.key("retry").key("on"),
                        "an empty list retries nothing",
                        Some("error kinds, or no `on:`".into()),
                    );
                }
                check_retry(c, &sp.key("retry"), r);
            }
            match kind {
                StepKind::Agent => self.agent(c, &sp, s),
                StepKind::Workflow => self.workflow(c, &sp, s),
                StepKind::Parallel => self.parallel(c, &sp, s),
                StepKind::Condition => {
                    let first = i == 0 && self.defined.is_empty();
                    self.condition(c, &sp, s, first, in_parallel, &all_ids);
                }
                StepKind::Goto => self.goto(c, &sp, s, in_parallel),
            }
            if let Some(id) = id
                && !self.defined.contains(&id)
            {
                self.defined.push(id);
            }
        }
    }

    fn agent(&mut self, c: &mut Checker<'_>, sp: &FieldPath, s: &StepSpec) {
        let Some(target) = s.target() else {
            return c.error(
                sp,
                "an agent step needs `agent:`",
                Some("`agent: <name>`".into()),
            );
        };
        let names = self.names;
        let field = if s.agent.is_some() { "agent" } else { "name" };
        if let Some(a) = plain_or_remote(c, self.spec, &sp.key(field), target)
            && !names.agents.contains(a)
            && !names.broken.contains(a)
        {
            let hint = if names.workflows.contains(a) {
                Some(format!("`{a}` is a workflow: use `workflow: {a}`"))
            } else {
                expected_names(names.agents.iter().map(String::as_str).collect())
            };
            c.value_error(&sp.key(field), format!("unknown agent `{a}`"), hint);
        }
    }

    fn workflow(&mut self, c: &mut Checker<'_>, sp: &FieldPath, s: &StepSpec) {
        let names = self.names;
        match &s.workflow {
            None => c.error(
                sp,
                "a workflow step needs `workflow:`",
                Some("the name of a workflow in `workflows:`".into()),
            ),
            Some(n) if !names.workflows.contains(n) && !names.broken.contains(n) => c.value_error(
                &sp.key("workflow"),
                format!("unknown workflow `{n}`"),
                expected_names(names.workflows.iter().map(String::as_str).collect()),
            ),
            _ => {}
        }
    }

    fn parallel(&mut self, c: &mut Checker<'_>, sp: &FieldPath, s: &StepSpec) {
        match &s.steps {
            None => c.error(sp, "a parallel step needs `steps:`", None),
            Some(children) => {
                if children.is_empty() {
                    c.value_error(
                        &sp.key("steps"),
                        "no steps to run in parallel",
                        Some("at least one step".into()),
                    );
                }
                if s.retry.is_some()
                    && let Some(block) = s.step_id()
                {
                    let mut inner = BTreeSet::new();
                    collect_step_ids(children, &mut inner);
                    for id in inner {
                        self.retried.entry(id).or_insert_with(|| block.clone());
                    }
                }
                self.list(c, &sp.key("steps"), children, true);
            }
        }
    }

    /// A condition step; `first`: nothing ran before it.
    fn condition(
        &mut self,
        c: &mut Checker<'_>,
        sp: &FieldPath,
        s: &StepSpec,
        first: bool,
        in_parallel: bool,
        all_ids: &BTreeSet<String>,
    ) {
        if in_parallel {
            c.error(
                sp,
                "a condition cannot run inside a parallel block",
                Some("conditions between steps".into()),
            );
        }
        if first {
            c.error(
                sp,
                "a condition needs a step before it to judge",
                Some("an agent step first".into()),
            );
        }
        match &s.condition {
            None => c.error(
                sp,
                "a condition step needs `condition:`",
                Some("`condition: \"{{ $steps.<id>.output… }}\"`".into()),
            ),
            Some(cond) => {
                let known = self.defined.clone();
                check_condition(c, &sp.key("condition"), cond, &known, all_ids);
            }
        }
        let mut loops = 0;
        for (field, branch) in [("true", &s.when_true), ("false", &s.when_false)] {
            match branch.as_ref().map(|b| &b.0) {
                Some(Branch::Goto(target)) => {
                    loops += 1;
                    if let Some(block) = self.retried.get(target) {
                        c.value_error(
                            &sp.key(field),
                            format!(
                                "step `{target}` is inside parallel block `{block}`, which has `retry:` and runs as a whole"
                            ),
                            Some(format!("the block itself: `{block}`")),
                        );
                    } else if !self.defined.contains(target) {
                        let msg = if all_ids.contains(target) {
                            format!(
                                "step `{target}` is referenced before it exists (a branch may only go back to an earlier step)"
                            )
                        } else {
                            format!("unknown step `{target}`")
                        };
                        c.value_error(
                            &sp.key(field),
                            msg,
                            expected_names(self.defined.iter().map(String::as_str).collect()),
                        );
                    }
                }
                Some(Branch::Steps(list)) => {
                    self.in_branch += 1;
                    self.list(c, &sp.key(field), list, false);
                    self.in_branch -= 1;
                }
                None => {}
            }
        }
        if loops == 2 && !self.has_stop {
            c.error(
                sp,
                "a loop with no exit: both branches go back to earlier steps",
                Some("one branch that carries on, or a `stop:` condition".into()),
            );
        }
    }
}

impl StepCheck<'_> {
    /// A `goto:` step: to a known step outside parallel blocks with
    /// `retry:`, not from inside a parallel block, and back only under a
    /// condition (or a stop condition).
    fn goto(&mut self, c: &mut Checker<'_>, sp: &FieldPath, s: &StepSpec, in_parallel: bool) {
        let Some(target) = &s.goto else { return };
        let at = sp.key("goto");
        if in_parallel {
            return c.error(
                sp,
                "a goto cannot run inside a parallel block",
                Some("a goto between steps, or in a condition's branch".into()),
            );
        }
        if let Some(block) = self.retried.get(target) {
            return c.value_error(
                &at,
                format!(
                    "step `{target}` is inside parallel block `{block}`, which has `retry:` and runs as a whole"
                ),
                Some(format!("the block itself: `{block}`")),
            );
        }
        if !self.all.contains(target) {
            return c.value_error(
                &at,
                format!("unknown step `{target}`"),
                expected_names(self.all.iter().map(String::as_str).collect()),
            );
        }
        if self.defined.contains(target) && self.in_branch == 0 && !self.has_stop {
            c.error(
                sp,
                format!(
                    "a loop with no exit: this goto always goes back to `{target}`, so the steps after it never run and the run fails after `max_loop_iterations` rounds"
                ),
                Some("the goto in a condition's branch, or a `stop:` condition".into()),
            );
        }
    }
}

/// Fields that belong to another kind of step.
fn check_misplaced(c: &mut Checker<'_>, sp: &FieldPath, s: &StepSpec, kind: StepKind) {
    let misplaced: &[(&str, bool)] = &[
        ("agent", s.agent.is_some() && kind != StepKind::Agent),
        (
            "workflow",
            s.workflow.is_some() && kind != StepKind::Workflow,
        ),
        ("steps", s.steps.is_some() && kind != StepKind::Parallel),
        (
            "condition",
            s.condition.is_some() && kind != StepKind::Condition,
        ),
        ("true", s.when_true.is_some() && kind != StepKind::Condition),
        (
            "false",
            s.when_false.is_some() && kind != StepKind::Condition,
        ),
        (
            "retry",
            s.retry.is_some() && matches!(kind, StepKind::Condition | StepKind::Goto),
        ),
        ("goto", s.goto.is_some() && kind != StepKind::Goto),
    ];
    for (field, wrong) in misplaced {
        if *wrong {
            c.error(
                &sp.key(*field),
                format!("`{field}` does not belong on {} step", kind_name(kind)),
                None,
            );
        }
    }
}

fn kind_name(k: StepKind) -> &'static str {
    match k {
        StepKind::Agent => "an agent",
        StepKind::Workflow => "a workflow",
        StepKind::Parallel => "a parallel",
        StepKind::Condition => "a condition",
        StepKind::Goto => "a goto",
    }
}
