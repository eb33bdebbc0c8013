//! # troupe-cluster
//!
//! Agents of troupe spread over several processes and machines, on ractor's
//! own distribution layer (`ractor_cluster`). It builds on
//! `troupe-runtime`'s public API alone: a remote agent is an ordinary
//! [`Agent`](troupe_runtime::Agent), so workflows and presets use it
//! unchanged, and the runtime itself carries no networking or TLS.
//!
//! A [`Node`] is a process in a cluster: it listens on an address, proves a
//! shared cookie to its peers, and *hosts* agents. Each hosted agent is a
//! small actor (the agent host) registered in a ractor process group named
//! `troupe.agent.<name>`; `ractor_cluster` keeps process groups in sync
//! across connected nodes, so every node sees every replica of every agent
//! hosted by the nodes it is connected to.
//!
//! A workflow on one node uses an agent hosted on another through a
//! [`RemoteAgent`]: an ordinary [`Agent`](troupe_runtime::Agent) whose turn picks a
//! live replica, sends it the thread and waits for the reply. To the
//! workflow a remote participant is like any other: its thread, the run's
//! events, stop conditions, cancellation, retries and checkpoints behave as
//! with a local agent.
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use troupe_cluster::{Node, RemoteAgent};
//! use troupe_runtime::{FnAgent, RunContext, Thread};
//!
//! // On machine B: host a researcher.
//! let researcher = FnAgent::sync("researcher", |_: &Thread| Ok("found it"));
//! let b = Node::builder()
//!     .name("b")
//!     .listen("127.0.0.1:7001")
//!     .cookie(std::env::var("TROUPE_COOKIE")?)
//!     .host(researcher)
//!     .start()
//!     .await?;
//!
//! // On machine A (another process): join, then use it by name.
//! let a = Node::builder()
//!     .name("a")
//!     .listen("127.0.0.1:7000")
//!     .cookie(std::env::var("TROUPE_COOKIE")?)
//!     .connect("127.0.0.1:7001")
//!     .start()
//!     .await?;
//! let remote = RemoteAgent::parse("researcher@b")?; // or RemoteAgent::new("researcher") for any replica
//! # let _ = (b, a, remote);
//! # Ok(()) }
//! ```
//!
//! ## The wire
//!
//! The agent host's message type is the only actor message in troupe that
//! can cross nodes ([`ractor::Message::serializable`] is true for it alone).
//! A turn travels as one `ractor_cluster` call: the thread, the caller's
//! path and a request id, encoded with [`troupe_runtime::codec`] (bincode) behind a
//! 4-byte wire version, inside `ractor_cluster`'s own protobuf framing. The
//! reply carries the agent's [`Reply`](troupe_runtime::Reply) (messages, replacement
//! thread, next, request, private messages) and the events the turn
//! produced (as JSON text: events are internally tagged, which bincode
//! cannot carry).
//!
//! ## Faults, and what `ractor_cluster` does not do
//!
//! `ractor_cluster` calls its authentication and TLS support experimental
//! and does not reconnect lost sessions, nor notice a peer that stops
//! answering without closing its socket (its pings only measure latency).
//! troupe designs around that:
//!
//! - **Liveness.** While a remote turn runs, the caller asks the host about
//!   it every [`CallOptions::heartbeat`]; a node that answers nothing for
//!   [`CallOptions::node_timeout`] (default 5 s) fails the step with
//!   an error of kind [`ErrorKind::Node`](troupe_runtime::ErrorKind::Node) (cause [`NodeLost`]) naming the node and the
//!   agent. A node that dies closes its sockets, which fails the step at
//!   once. Either way nothing hangs.
//! - **Retries.** A failed remote step is retried by the step's
//!   [`RetryPolicy`](troupe_runtime::RetryPolicy) like any other (kind
//!   [`ErrorKind::Node`](troupe_runtime::ErrorKind::Node)); the retry picks another
//!   live replica, avoiding nodes that just failed. Inside presets whose
//!   inner steps take no retry policy (MapReduce's workers),
//!   [`RemoteAgent::failover`] re-runs the turn on another replica itself.
//! - **No duplicates.** A retried turn re-sends the same thread; only the
//!   reply of the attempt that succeeded is applied, and messages carry ids
//!   so a message never enters a thread twice. A request whose turn is
//!   still running on a host (a retry after a slow answer) joins that turn
//!   instead of starting a second one.
//! - **Reconnects.** A node keeps the peers it was told to connect to
//!   connected, trying again while they are away.
//! - **Authentication** is `ractor_cluster`'s challenge–response over a
//!   shared cookie: it proves both sides know the cookie but does not
//!   encrypt anything. Use [`NodeBuilder::tls`] (its TLS mode) or a private
//!   network between machines; never expose a node port to the internet.
//!   Take the cookie from the environment, never from a command-line flag
//!   (flags show in `ps`).
//! - **Frames** are limited to [`DEFAULT_MAX_FRAME`] bytes by default; a
//!   peer that receives a larger one drops the whole connection, so a
//!   thread too large for the wire fails its step with a clear error before
//!   it is sent. All nodes of a cluster must use the same limit.
//! - **One node per process**: process groups are process-wide in ractor.

mod builder;
mod call;
mod error;
#[cfg(feature = "fuzzing")]
pub mod fuzzing;
mod host;
mod node;
mod node_lost;
mod placement;
pub mod prelude;
mod remote_agent;
mod serve;
mod sessions;
mod trace_context;
mod wire;

pub use builder::{NodeBuilder, Tls};
pub use call::CallOptions;
pub use error::ClusterError;
pub use node::Node;
pub use node_lost::NodeLost;
pub use placement::{Placement, Selection};
pub use remote_agent::{NODE_METADATA, RemoteAgent, spread};
pub use serve::{NodeSettings, serve};
pub use sessions::PeerInfo;

/// The environment variable the cookie is read from. Never a command-line
/// flag: flags show in `ps`.
pub const COOKIE_ENV: &str = "TROUPE_COOKIE";

/// The prefix of the process group of each hosted agent:
/// `troupe.agent.<agent name>`.
pub const GROUP_PREFIX: &str = "troupe.agent.";

/// The default limit on one frame on the wire (16 MiB, `ractor_cluster`'s).
pub const DEFAULT_MAX_FRAME: u64 = ractor_cluster::DEFAULT_MAX_INBOUND_FRAME_SIZE;

/// The process group hosting replicas of `agent`.
pub fn group_name(agent: &str) -> String {
    format!("{GROUP_PREFIX}{agent}")
}

/// The registered name of the host actor of `agent` on `node`. Hosts are
/// named so that a replica found in a process group says which node it
/// lives on (remote actors keep their name, not their node's).
pub(crate) fn host_actor_name(agent: &str, node: &str) -> String {
    format!("troupe.host.{agent}@{node}")
}

/// The node named in a host actor's name.
pub(crate) fn node_of_host(actor_name: &str) -> Option<&str> {
    actor_name
        .strip_prefix("troupe.host.")
        .and_then(|rest| rest.rsplit_once('@'))
        .map(|(_, node)| node)
}

/// Checks a node or agent name: not empty, and free of the characters
/// that separate names in paths and addresses.
pub(crate) fn check_name(kind: &'static str, name: &str) -> Result<(), ClusterError> {
    let bad = name.is_empty()
        || name
            .chars()
            .any(|c| c == '@' || c == '/' || c.is_whitespace() || c.is_control());
    if bad {
        return Err(ClusterError::InvalidName {
            kind,
            name: name.to_string(),
        });
    }
    Ok(())
}

// The README's example is compiled as a doc test, so it cannot drift from
// the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_names_say_their_node() {
        let n = host_actor_name("worker", "b");
        assert_eq!(node_of_host(&n), Some("b"));
        assert_eq!(node_of_host("something.else"), None);
        assert_eq!(group_name("worker"), "troupe.agent.worker");
    }

    #[test]
    fn names_are_checked() {
        assert!(check_name("node", "b").is_ok());
        assert!(check_name("node", "worker#1").is_ok());
        for bad in ["", "a@b", "a/b", "a b"] {
            assert!(check_name("node", bad).is_err(), "{bad:?}");
        }
    }
}
