//! [`ClusterError`]: why a node could not start, connect or host.

use std::time::Duration;

/// A node could not start, join a cluster or host an agent.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ClusterError {
    /// A node or agent name is empty or holds a separator (`@`, `/`, space).
    #[error("invalid {kind} name '{name}': it must be non-empty, without '@', '/' or spaces")]
    InvalidName {
        /// What was named ("node", "agent").
        kind: &'static str,
        /// The name.
        name: String,
    },
    /// A setting is missing or wrong.
    #[error("{0}")]
    Config(String),
    /// The cookie is missing or empty.
    #[error(
        "no cookie: set one with NodeBuilder::cookie, or in the {0} environment variable (never on the command line: flags show in `ps`)"
    )]
    NoCookie(String),
    /// An address does not parse or resolve.
    #[error("invalid address '{addr}': {reason}")]
    InvalidAddress {
        /// The address.
        addr: String,
        /// Why.
        reason: String,
    },
    /// Another node already runs in this process.
    #[error(
        "a node is already running in this process (ractor's process groups are process-wide: one node per process)"
    )]
    AlreadyRunning,
    /// The node could not listen.
    #[error("node '{node}' cannot listen on {addr}: {reason}")]
    Listen {
        /// The node.
        node: String,
        /// The address.
        addr: String,
        /// Why.
        reason: String,
    },
    /// A peer could not be reached.
    #[error("cannot connect to the node at {addr}: {reason}")]
    Connect {
        /// The peer's address.
        addr: String,
        /// Why.
        reason: String,
    },
    /// A peer closed the connection during authentication.
    #[error(
        "the node at {addr}{} refused the connection during authentication: the cookies differ (or it is not a troupe node)",
        peer.as_ref().map(|p| format!(" ('{p}')")).unwrap_or_default()
    )]
    AuthRefused {
        /// The peer's address.
        addr: String,
        /// The peer's name, if it told it before refusing.
        peer: Option<String>,
    },
    /// A peer did not finish the handshake in time.
    #[error("the node at {addr} did not complete the handshake within {after:?}")]
    ConnectTimeout {
        /// The peer's address.
        addr: String,
        /// How long was waited.
        after: Duration,
    },
    /// An agent could not be hosted.
    #[error("cannot host agent '{agent}': {reason}")]
    Host {
        /// The agent.
        agent: String,
        /// Why.
        reason: String,
    },
    /// No replica of an agent showed up in time.
    #[error("no node hosts agent '{agent}'{} after waiting {waited:?}", node.as_ref().map(|n| format!(" on node '{n}'")).unwrap_or_default())]
    NoReplica {
        /// The agent.
        agent: String,
        /// The node it was looked for on, if pinned.
        node: Option<String>,
        /// How long was waited.
        waited: Duration,
    },
    /// Waiting for a signal or the node's actors failed.
    #[error("node '{node}': {reason}")]
    Runtime {
        /// The node.
        node: String,
        /// What went wrong.
        reason: String,
    },
}
