//! Agents and workflows as tools (`tools: [{agent: NAME}]`,
//! `{workflow: NAME}`): one target, a known one, never the agent itself,
//! and no cycle of agents calling each other as tools.

use std::collections::BTreeMap;

use super::checker::{Checker, Defined, expected_names, p};
use crate::schema::{ConfigFile, ToolSpec};

/// Checks the agent tools of every agent, then their cycles.
pub(super) fn check_agent_tools(c: &mut Checker<'_>, names: &Defined, spec: &ConfigFile) {
    // agent → (agent it calls, index of the tool entry)
    let mut calls: BTreeMap<&str, Vec<(&str, usize)>> = BTreeMap::new();
    for (name, agent) in &spec.agents {
        for (i, tool) in agent.tools.iter().enumerate() {
            let ToolSpec::Agent(t) = tool else { continue };
            let path = p(&["agents", name]).key("tools").index(i);
            match (&t.agent, &t.workflow) {
                (Some(_), Some(_)) => c.error(
                    &path.key("workflow"),
                    "a tool calls an agent or a workflow, not both",
                    Some("`agent: NAME` or `workflow: NAME`".into()),
                ),
                (Some(target), None) => {
                    if target == name {
                        c.value_error(
                            &path.key("agent"),
                            format!("agent `{name}` cannot be a tool of itself"),
                            Some("another agent".into()),
                        );
                    } else if !names.agents.contains(target) && !names.broken.contains(target) {
                        c.value_error(
                            &path.key("agent"),
                            format!("unknown agent `{target}`"),
                            expected_names(names.agents.iter().map(String::as_str).collect()),
                        );
                    } else {
                        calls.entry(name).or_default().push((target, i));
                    }
                }
                (None, Some(target)) => {
                    if !names.workflows.contains(target) && !names.broken.contains(target) {
                        c.value_error(
                            &path.key("workflow"),
                            format!("unknown workflow `{target}`"),
                            expected_names(names.workflows.iter().map(String::as_str).collect()),
                        );
                    }
                }
                (None, None) => c.error(&path, "a tool entry without a kind", None),
            }
            if t.name.as_deref().is_some_and(|n| {
                n.is_empty()
                    || !n
                        .chars()
                        .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-')
            }) {
                c.value_error(
                    &path.key("name"),
                    "not a valid tool name",
                    Some("letters, digits, `_` and `-`".into()),
                );
            }
        }
    }
    for (from, path) in cycles(&calls) {
        let (target, i) = path[0];
        let mut chain = vec![from];
        chain.extend(path.iter().map(|(a, _)| *a));
        c.value_error(
            &p(&["agents", from]).key("tools").index(i).key("agent"),
            format!(
                "agent `{from}` calls itself through its tools ({}); `{target}` cannot be its tool",
                chain.join(" -> ")
            ),
            Some("tools that do not lead back to the agent".into()),
        );
    }
}

/// For each agent on a cycle of tool calls (reported once per cycle, at
/// its first agent in name order), the path back to it: `(agent called,
/// index of the tool entry of the agent before)`.
fn cycles<'a>(
    calls: &BTreeMap<&'a str, Vec<(&'a str, usize)>>,
) -> Vec<(&'a str, Vec<(&'a str, usize)>)> {
    let mut out: Vec<(&str, Vec<(&str, usize)>)> = Vec::new();
    for &start in calls.keys() {
        if out
            .iter()
            .any(|(_, path)| path.iter().any(|(a, _)| *a == start))
        {
            continue;
        }
        // Depth-first search for a path back to `start`, iteratively.
        let mut stack: Vec<(&str, usize)> = vec![(start, 0)];
        let mut path: Vec<(&str, usize)> = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        let mut found = false;
        while let Some(&(at, next)) = stack.last() {
            let edges = calls.get(at).map_or(&[][..], Vec::as_slice);
            let Some(&(to, i)) = edges.get(next) else {
                stack.pop();
                path.pop();
                continue;
            };
            if let Some(top) = stack.last_mut() {
                top.1 += 1;
            }
            if to == start {
                path.push((to, i));
                found = true;
                break;
            }
            if seen.insert(to) {
                path.push((to, i));
                stack.push((to, 0));
            }
        }
        if found {
            out.push((start, path));
        }
    }
    out
}
