//! `switch:` on graph nodes: cases that go to known nodes under valid
//! conditions, a known default, and no `transitions:` from a switch node.

use std::collections::BTreeSet;

use super::checker::{Checker, expected_names};
use super::conditions::check_condition;
use super::field_paths::check_field_conditions;
use super::loops::Edge;
use crate::schema::GraphSpec;
use crate::tree::FieldPath;

/// Checks the switches of graph `g` at `base` (node ids `ids`); adds
/// their cases to `edges` (numbered after the transitions, as the
/// default is a condition: `otherwise`).
pub(super) fn check_switches(
    c: &mut Checker<'_>,
    base: &FieldPath,
    g: &GraphSpec,
    ids: &[String],
    edges: &mut Vec<Edge>,
) -> bool {
    let all: BTreeSet<String> = ids.iter().cloned().collect();
    let mut all_known = true;
    let mut next = g.transitions.len();
    let mut known = |c: &mut Checker<'_>, path: &FieldPath, name: &str| {
        let at = ids.iter().position(|x| x == name);
        if at.is_none() {
            c.value_error(
                path,
                format!("unknown node `{name}`"),
                expected_names(ids.iter().map(String::as_str).collect()),
            );
            all_known = false;
        }
        at
    };
    for (i, n) in g.nodes.iter().enumerate() {
        let Some(s) = &n.0.switch else { continue };
        let sp = base.key("nodes").index(i).key("switch");
        let from = ids.iter().position(|x| x == n.id());
        if s.cases.is_empty() {
            c.value_error(
                &sp.key("cases"),
                "a switch with no cases",
                Some("at least one `{when: …, to: NODE}`".into()),
            );
        }
        for (k, case) in s.cases.iter().enumerate() {
            let cp = sp.key("cases").index(k);
            check_condition(c, &cp.key("when"), &case.when, ids, &all);
            check_field_conditions(c, &cp.key("when"), &case.when, n.id());
            if let (Some(to), Some(f)) = (known(c, &cp.key("to"), &case.to), from) {
                edges.push((f, to, false, next));
            }
            next += 1;
        }
        if let Some(d) = &s.default
            && let (Some(to), Some(f)) = (known(c, &sp.key("default"), d), from)
        {
            edges.push((f, to, false, next));
        }
        if let Some(t) = g.transitions.iter().position(|t| t.from == n.id()) {
            c.error(
                &base.key("transitions").index(t).key("from"),
                format!(
                    "node `{}` has a `switch:`, which decides where it goes: a transition from it would fire beside the switch",
                    n.id()
                ),
                Some(format!(
                    "a case (or the `default`) of the switch of `{}`",
                    n.id()
                )),
            );
        }
    }
    all_known
}
