//! What building a router checks: [`RouteProblem`]s (errors, gathered in a
//! [`RouterError`]) and [`RouteWarning`]s, and the graph walks behind them.
//!
//! The graph has an edge from each sender to each inbox that accepts it.
//! Reachability starts at the entry sources; cycles are its strongly
//! connected components. The walks themselves are in [`crate::algo`].

use std::fmt;

use crate::error::InboxConfigError;

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
#[non_exhaustive]
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
        reason: InboxConfigError,
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
#[non_exhaustive]
pub enum RouteWarning {
    /// These participants' inboxes accept each other's messages in a cycle
    /// (or one accepts its own), so messages can cascade without end unless
    /// something else stops the run. Agents are in participant order.
    #[error("{}", cycle(agents))]
    Cycle {
        /// The participants in the cycle, in participant order.
        agents: Vec<String>,
    },

    /// No route names this participant as its target, so its inbox
    /// takes every sender's messages (the router's default): likely
    /// unintended beside routes that choose the senders of the others.
    #[error(
        "agent {agent:?} is the target of no route, so it hears every sender (the router's default); add a route to it to choose whom it hears"
    )]
    HearsEveryone {
        /// The participant.
        agent: String,
    },

    /// A cycle as [`RouteWarning::Cycle`] that runs through participants
    /// hearing everyone ([`RouteWarning::HearsEveryone`]): the routes
    /// alone make no cycle; the default does.
    #[error("{}", default_cycle(agents, through))]
    CycleThroughDefault {
        /// The participants in the cycle, in participant order.
        agents: Vec<String>,
        /// Those of them that hear every sender, in participant order.
        through: Vec<String>,
    },
}

fn quoted(agents: &[String]) -> String {
    agents
        .iter()
        .map(|a| format!("{a:?}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn default_cycle(agents: &[String], through: &[String]) -> String {
    let who = match through {
        [one] => format!("{one:?}, which no route targets, hears"),
        _ => format!("{}, which no route targets, hear", quoted(through)),
    };
    match agents {
        [one] => format!(
            "agent {one:?} hears its own messages: {who} every sender, itself included; messages can cascade without end"
        ),
        _ => format!(
            "{} form a cycle through the router's default: {who} every sender; messages can cascade without end",
            quoted(agents)
        ),
    }
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

/// Why [`RouterBuilder::build`](crate::RouterBuilder::build) failed: every
/// problem found, not just the first, so one edit can fix them all.
#[derive(Debug, Clone, PartialEq)]
pub struct RouterError {
    /// The problems, in a stable order: participant names, unknown agents,
    /// inbox options, then reachability.
    pub problems: Vec<RouteProblem>,
}

impl fmt::Display for RouterError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.problems.as_slice() {
            [one] => write!(f, "invalid router: {one}"),
            many => {
                write!(f, "invalid router: {} problems", many.len())?;
                for problem in many {
                    write!(f, "\n  - {problem}")?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for RouterError {}

#[cfg(test)]
mod tests {
    use super::*;

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

    #[test]
    fn router_error_lists_every_problem() {
        let err = RouterError {
            problems: vec![
                RouteProblem::Unreachable { agent: "a".into() },
                RouteProblem::ReachesNobody { agent: "b".into() },
            ],
        };
        let text = err.to_string();
        assert!(text.starts_with("invalid router: 2 problems"), "{text}");
        assert!(text.contains("\"a\""), "{text}");
        assert!(text.contains("\"b\""), "{text}");

        let one = RouterError {
            problems: vec![RouteProblem::Unreachable { agent: "a".into() }],
        };
        assert!(!one.to_string().contains('\n'));
    }
}
