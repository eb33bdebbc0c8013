//! [`NodeBuilder`]: what a [`Node`](crate::Node) is to be — its name,
//! address, cookie, agents, peers and connection settings. Starting it
//! ([`NodeBuilder::start`]) is the node's own business.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use tokio_rustls::rustls::pki_types::ServerName;
use tokio_rustls::{TlsAcceptor, TlsConnector};
use troupe_runtime::Agent;

use crate::DEFAULT_MAX_FRAME;

/// `ractor_cluster`'s TLS mode: every connection, in and out, is wrapped
/// in TLS (rustls). `ractor_cluster` calls it experimental; the cookie
/// handshake still runs inside it.
#[derive(Clone)]
pub struct Tls {
    /// Accepts incoming connections.
    pub acceptor: TlsAcceptor,
    /// Opens outgoing connections.
    pub connector: TlsConnector,
    /// The name peers' certificates are checked against.
    pub server_name: ServerName<'static>,
}

impl fmt::Debug for Tls {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Tls")
            .field("server_name", &self.server_name)
            .finish_non_exhaustive()
    }
}

/// Describes a [`Node`](crate::Node).
pub struct NodeBuilder {
    pub(crate) name: Option<String>,
    pub(crate) listen: Option<String>,
    pub(crate) cookie: Option<String>,
    pub(crate) agents: Vec<Arc<dyn Agent>>,
    pub(crate) peers: Vec<String>,
    pub(crate) connect_timeout: Duration,
    pub(crate) mesh: bool,
    pub(crate) tls: Option<Tls>,
    pub(crate) max_frame: u64,
    pub(crate) keep_connected: bool,
}

impl Default for NodeBuilder {
    fn default() -> Self {
        NodeBuilder {
            name: None,
            listen: None,
            cookie: None,
            agents: Vec::new(),
            peers: Vec::new(),
            connect_timeout: Duration::from_secs(5),
            mesh: false,
            tls: None,
            max_frame: DEFAULT_MAX_FRAME,
            keep_connected: true,
        }
    }
}

impl fmt::Debug for NodeBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Never the cookie.
        f.debug_struct("NodeBuilder")
            .field("name", &self.name)
            .field("listen", &self.listen)
            .field(
                "agents",
                &self.agents.iter().map(|a| a.name()).collect::<Vec<_>>(),
            )
            .field("peers", &self.peers)
            .field("tls", &self.tls.is_some())
            .finish_non_exhaustive()
    }
}

impl NodeBuilder {
    /// The node's name, unique in the cluster (`b`): it appears in event
    /// paths (`worker#3@b`) and in `agent@node` references.
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Where to listen: `IP:PORT` (`127.0.0.1:7001`; port 0 picks a free
    /// one, see [`Node::addr`](crate::Node::addr)). Only that interface listens. Default
    /// `127.0.0.1:0`.
    pub fn listen(mut self, addr: impl Into<String>) -> Self {
        self.listen = Some(addr.into());
        self
    }

    /// The shared secret every node of the cluster must have.
    pub fn cookie(mut self, cookie: impl Into<String>) -> Self {
        self.cookie = Some(cookie.into());
        self
    }

    /// Hosts an agent: it becomes reachable from every connected node as
    /// `name` (any replica) or `name@node`.
    pub fn host(mut self, agent: impl Agent) -> Self {
        self.agents.push(Arc::new(agent));
        self
    }

    /// Hosts a shared agent.
    pub fn host_arc(mut self, agent: Arc<dyn Agent>) -> Self {
        self.agents.push(agent);
        self
    }

    /// Connects to the node listening at `addr` on start (and keeps the
    /// connection: see [`NodeBuilder::keep_connected`]).
    pub fn connect(mut self, addr: impl Into<String>) -> Self {
        self.peers.push(addr.into());
        self
    }

    /// How long a connection may take, handshake included. Default 5 s.
    pub fn connect_timeout(mut self, timeout: Duration) -> Self {
        self.connect_timeout = timeout;
        self
    }

    /// Also connects to the peers of its peers (`ractor_cluster`'s
    /// transitive mode), making a full mesh. Default off: a node connects
    /// to the addresses it is given, and sees the agents of those nodes.
    pub fn mesh(mut self, on: bool) -> Self {
        self.mesh = on;
        self
    }

    /// Wraps every connection in TLS (`ractor_cluster`'s experimental TLS
    /// mode). All nodes of a cluster must use it.
    pub fn tls(mut self, tls: Tls) -> Self {
        self.tls = Some(tls);
        self
    }

    /// The largest frame this node accepts (default [`DEFAULT_MAX_FRAME`]);
    /// a turn whose thread would be larger fails before it is sent. All
    /// nodes of a cluster must agree.
    pub fn max_frame(mut self, bytes: u64) -> Self {
        self.max_frame = bytes.max(1024);
        self
    }

    /// Reconnects to the peers it connected to whenever their connection
    /// drops (`ractor_cluster` does not). Default on.
    pub fn keep_connected(mut self, on: bool) -> Self {
        self.keep_connected = on;
        self
    }
}
