//! What building a router checks: [`RouteProblem`]s (errors) and
//! [`RouteWarning`]s, and the graph walks behind them.
//!
//! The graph has an edge from each sender to each inbox that accepts it.
//! Reachability starts at the entry sources; cycles are its strongly
//! connected components.

use std::fmt;

use crate::error::ConfigError;

/// The part a name plays where a router names an unknown agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AgentRole {
    /// A route's source.
    Source,
    /// A route's (or inbox option's) target.
    Target,
    /// A declared output.
    Output,
}

impl fmt::Display for AgentRole {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::Source => "source",
            Self::Target => "target",
            Self::Output => "output",
        })
    }
}

/// One reason a router cannot be built. Each message names the agents concerned.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum RouteProblem {
    /// A route, inbox option or output names an agent that is not a
    /// participant (nor, for sources, `"user"` or a declared entry).
    #[error("{}", unknown_agent(name, *role))]
    UnknownAgent {
        /// The unknown name.
        name: String,
        /// Where it was used.
        role: AgentRole,
    },

    /// No message can ever reach this participant: no chain of routes leads
    /// from an entry source (such as `"user"`) to its inbox.
    #[error(
        "agent {agent:?} is unreachable: no chain of routes from the entry sources (\"user\" and declared entries) delivers messages to it"
    )]
    Unreachable {
        /// The participant.
        agent: String,
    },

    /// No other inbox accepts this participant's messages, and it is not
    /// declared an output.
    #[error(
        "agent {agent:?} reaches nobody: no inbox accepts its messages; add a route from it, or declare it a result with `.output(\"{agent}\")`"
    )]
    ReachesNobody {
        /// The participant.
        agent: String,
    },

    /// A participant is listed more than once.
    #[error("participant {name:?} is listed more than once")]
    DuplicateParticipant {
        /// The repeated name.
        name: String,
    },

    /// A participant uses a reserved name (`"user"`, the caller's messages).
    #[error("participant name {name:?} is reserved for the caller's messages")]
    ReservedName {
        /// The reserved name.
        name: String,
    },

    /// A participant's name is empty.
    #[error("participant #{index} has an empty name")]
    EmptyName {
        /// Its position in the participant list.
        index: usize,
    },

    /// A target's inbox options, once merged across its routes, are invalid.
    #[error("invalid inbox options for {target:?}: {reason}")]
    InvalidConfig {
        /// The participant whose inbox it is.
        target: String,
        /// What is wrong.
        reason: ConfigError,
    },

    /// Two routes (or inbox options) into one target set different
    /// non-default values for one option.
    #[error("conflicting inbox options for {target:?}: {detail}")]
    ConflictingOptions {
        /// The participant whose inbox it is.
        target: String,
        /// The option and the two values, such as `batch_size: 10 vs 5`.
        detail: String,
    },
}

fn unknown_agent(name: &str, role: AgentRole) -> String {
    match role {
        AgentRole::Source => format!(
            "unknown agent {name:?} as a route source: not a participant, \"user\", or a declared entry"
        ),
        AgentRole::Target => format!("unknown agent {name:?} as a route target: not a participant"),
        AgentRole::Output => {
            format!("unknown agent {name:?} declared as output: not a participant")
        }
    }
}

/// Something legal but likely unintended, returned with a built router.
#[derive(Debug, Clone, PartialEq, Eq, Hash, thiserror::Error)]
pub enum RouteWarning {
    /// These participants' inboxes accept each other's messages in a cycle
    /// (or one accepts its own), so messages can cascade without end unless
    /// something else stops the run. Agents are in participant order.
    #[error("{}", cycle(agents))]
    Cycle {
        /// The participants in the cycle, in participant order.
        agents: Vec<String>,
    },
}

fn cycle(agents: &[String]) -> String {
    match agents {
        [one] => format!("agent {one:?} routes to itself: messages can cascade without end"),
        many => {
            let names: Vec<String> = many.iter().map(|a| format!("{a:?}")).collect();
            format!(
                "routes among {} form a cycle: messages can cascade without end",
                names.join(", ")
            )
        }
    }
}

/// Marks the nodes reachable from `seeds` (which count as reached).
/// Nodes `>= n` are ignored.
pub(crate) fn reachable<'a>(
    n: usize,
    seeds: impl IntoIterator<Item = usize>,
    edges: impl Fn(usize) -> &'a [usize],
) -> Vec<bool> {
    let mut seen = vec![false; n];
    let mut todo: Vec<usize> = Vec::new();
    let mut visit = |v: usize, todo: &mut Vec<usize>| {
        if let Some(flag) = seen.get_mut(v)
            && !*flag
        {
            *flag = true;
            todo.push(v);
        }
    };
    for s in seeds {
        visit(s, &mut todo);
    }
    while let Some(v) = todo.pop() {
        for &w in edges(v) {
            visit(w, &mut todo);
        }
    }
    seen
}

/// The strongly connected components that contain a cycle (more than one
/// node, or a self-loop), each sorted, ordered by their smallest node.
///
/// Tarjan's algorithm, iterative so that long chains of participants cannot
/// overflow the stack. Edges to nodes `>= n` are ignored.
// Every index below is a node `< n`: roots come from `0..n` and edges are
// checked before they are followed, so the per-node vectors cannot be
// overrun, and plain indexing keeps the algorithm readable.
#[allow(clippy::indexing_slicing)]
pub(crate) fn cycles<'a>(n: usize, edges: impl Fn(usize) -> &'a [usize]) -> Vec<Vec<usize>> {
    const UNSEEN: usize = usize::MAX;
    let mut order = vec![UNSEEN; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack: Vec<usize> = Vec::new();
    // (node, position of the next edge to follow)
    let mut calls: Vec<(usize, usize)> = Vec::new();
    let mut next = 0;
    let mut found = Vec::new();

    for root in 0..n {
        if order[root] != UNSEEN {
            continue;
        }
        order[root] = next;
        low[root] = next;
        next += 1;
        stack.push(root);
        on_stack[root] = true;
        calls.push((root, 0));

        while let Some(top) = calls.last_mut() {
            let (v, pos) = *top;
            match edges(v).get(pos) {
                Some(&w) => {
                    top.1 += 1;
                    if w >= n {
                        continue;
                    }
                    if order[w] == UNSEEN {
                        order[w] = next;
                        low[w] = next;
                        next += 1;
                        stack.push(w);
                        on_stack[w] = true;
                        calls.push((w, 0));
                    } else if on_stack[w] {
                        low[v] = low[v].min(order[w]);
                    }
                }
                None => {
                    calls.pop();
                    if let Some(&(parent, _)) = calls.last() {
                        low[parent] = low[parent].min(low[v]);
                    }
                    if low[v] == order[v] {
                        let mut component = Vec::new();
                        while let Some(w) = stack.pop() {
                            on_stack[w] = false;
                            component.push(w);
                            if w == v {
                                break;
                            }
                        }
                        if component.len() > 1 || edges(v).contains(&v) {
                            component.sort_unstable();
                            found.push(component);
                        }
                    }
                }
            }
        }
    }
    found.sort_unstable_by_key(|c: &Vec<usize>| c.first().copied());
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    fn graph(adj: &[&[usize]]) -> Vec<Vec<usize>> {
        adj.iter().map(|a| a.to_vec()).collect()
    }

    #[test]
    fn reachability_follows_edges_from_seeds() {
        let g = graph(&[&[1], &[2], &[], &[0]]);
        let seen = reachable(4, [0], |v| &g[v]);
        assert_eq!(seen, [true, true, true, false]);
    }

    #[test]
    fn cycles_are_components_and_self_loops() {
        // 0 -> 1 -> 2 -> 0, 3 -> 3, 4 -> 5 (no cycle), 6 <-> 5
        let g = graph(&[&[1], &[2], &[0], &[3], &[5], &[6], &[5]]);
        assert_eq!(cycles(7, |v| &g[v]), [vec![0, 1, 2], vec![3], vec![5, 6]]);
        let acyclic = graph(&[&[1, 2], &[2], &[]]);
        assert!(cycles(3, |v| &acyclic[v]).is_empty());
    }

    #[test]
    fn long_chains_do_not_overflow_the_stack() {
        let n = 200_000;
        let g: Vec<Vec<usize>> = (0..n).map(|v| vec![(v + 1) % n]).collect();
        let found = cycles(n, |v| &g[v]);
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].len(), n);
    }

    #[test]
    fn messages_name_the_agents() {
        let warning = RouteWarning::Cycle {
            agents: vec!["a".into(), "b".into()],
        };
        assert_eq!(
            warning.to_string(),
            "routes among \"a\", \"b\" form a cycle: messages can cascade without end"
        );
        let own = RouteWarning::Cycle {
            agents: vec!["a".into()],
        };
        assert!(own.to_string().contains("\"a\" routes to itself"));
        let unknown = RouteProblem::UnknownAgent {
            name: "x".into(),
            role: AgentRole::Output,
        };
        assert!(unknown.to_string().contains("\"x\""));
        assert_eq!(AgentRole::Target.to_string(), "target");
    }
}
