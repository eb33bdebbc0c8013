//! [`Node`]: a process of the cluster — it listens, authenticates its
//! peers with a cookie, and hosts agents.

use std::fmt;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use ractor::{Actor, ActorRef};
use ractor_cluster::node::NodeConnectionMode;
use ractor_cluster::{ClientConnectErr, IncomingEncryptionMode, NodeServer, NodeServerMessage};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tokio_rustls::TlsConnector;
use tokio_rustls::rustls::pki_types::ServerName;
use troupe_runtime::Agent;

use crate::builder::NodeBuilder;
use crate::host::{HostActor, HostArgs};
use crate::placement::replicas;
use crate::sessions::{PeerInfo, Sessions, Subscription, lock};
use crate::wire::HostMsg;
use crate::{
    ClusterError, DEFAULT_MAX_FRAME, GROUP_PREFIX, check_name, group_name, host_actor_name,
};

/// Whether a node runs in this process (process groups are process-wide).
static RUNNING: AtomicBool = AtomicBool::new(false);
/// The frame limit of the node of this process.
static MAX_FRAME: AtomicU64 = AtomicU64::new(DEFAULT_MAX_FRAME);

/// The largest payload the node of this process sends or accepts.
pub(crate) fn max_frame() -> u64 {
    MAX_FRAME.load(Ordering::Relaxed)
}

impl NodeBuilder {
    /// Starts listening, hosts the agents and connects to the peers.
    pub async fn start(self) -> Result<Node, ClusterError> {
        let name = self.name.clone().unwrap_or_default();
        check_name("node", &name)?;
        let cookie = match &self.cookie {
            Some(c) if !c.is_empty() => c.clone(),
            _ => return Err(ClusterError::NoCookie(crate::COOKIE_ENV.into())),
        };
        let listen = self.listen.clone().unwrap_or_else(|| "127.0.0.1:0".into());
        let mut addr = resolve(&listen).await?;
        if RUNNING.swap(true, Ordering::SeqCst) {
            return Err(ClusterError::AlreadyRunning);
        }
        // From here on the slot is ours: `Inner`'s drop gives it back, and
        // so must every early return before `Inner` exists.
        let release = ReleaseOnError(true);
        if addr.port() == 0 {
            // ractor_cluster binds port 0 without telling which port it got;
            // pick a free one first.
            let probe = std::net::TcpListener::bind(addr).map_err(|e| ClusterError::Listen {
                node: name.clone(),
                addr: listen.clone(),
                reason: e.to_string(),
            })?;
            addr = probe.local_addr().map_err(|e| ClusterError::Listen {
                node: name.clone(),
                addr: listen.clone(),
                reason: e.to_string(),
            })?;
        }
        MAX_FRAME.store(self.max_frame, Ordering::Relaxed);
        let encryption = match &self.tls {
            Some(t) => IncomingEncryptionMode::Tls(t.acceptor.clone()),
            None => IncomingEncryptionMode::Raw,
        };
        let mode = if self.mesh {
            NodeConnectionMode::Transitive
        } else {
            NodeConnectionMode::Isolated
        };
        let server = NodeServer::new(
            addr.port(),
            cookie,
            name.clone(),
            addr.ip().to_string(),
            Some(encryption),
            Some(mode),
        )
        .with_listen_addr(addr.ip())
        .with_max_inbound_frame_size(self.max_frame);
        let (server, server_handle) =
            Actor::spawn(None, server, ())
                .await
                .map_err(|e| ClusterError::Listen {
                    node: name.clone(),
                    addr: addr.to_string(),
                    reason: e.to_string(),
                })?;
        let sessions = Arc::new(Sessions::default());
        if let Err(e) = server.cast(NodeServerMessage::SubscribeToEvents {
            id: "troupe".into(),
            subscription: Box::new(Subscription(sessions.clone())),
        }) {
            server.stop(None);
            return Err(ClusterError::Runtime {
                node: name,
                reason: format!("the node server is gone: {e}"),
            });
        }
        release.disarm();
        let node = Node {
            inner: Arc::new(Inner {
                name,
                addr,
                server,
                server_handle: Mutex::new(Some(server_handle)),
                hosts: Mutex::new(Vec::new()),
                sessions,
                tls: self.tls.map(|t| (t.connector, t.server_name)),
                connect_timeout: self.connect_timeout,
                keep: Mutex::new(Vec::new()),
                keeper: Mutex::new(None),
                keep_connected: self.keep_connected,
                stopped: AtomicBool::new(false),
            }),
        };
        for agent in self.agents {
            node.host_arc(agent).await?;
        }
        for peer in &self.peers {
            node.connect(peer).await?;
        }
        Ok(node)
    }
}

/// Gives the one-node-per-process slot back unless disarmed.
struct ReleaseOnError(bool);
impl ReleaseOnError {
    fn disarm(mut self) {
        self.0 = false;
    }
}
impl Drop for ReleaseOnError {
    fn drop(&mut self) {
        if self.0 {
            RUNNING.store(false, Ordering::SeqCst);
        }
    }
}

/// A running node: a `ractor_cluster` `NodeServer` listening for peers,
/// the agents it hosts, and its connections. Cheap to clone; the node
/// stops with [`Node::shutdown`] or when the last clone is dropped.
#[derive(Clone)]
pub struct Node {
    inner: Arc<Inner>,
}

struct Inner {
    name: String,
    addr: SocketAddr,
    server: ActorRef<NodeServerMessage>,
    server_handle: Mutex<Option<JoinHandle<()>>>,
    hosts: Mutex<Vec<(String, ActorRef<HostMsg>)>>,
    sessions: Arc<Sessions>,
    tls: Option<(TlsConnector, ServerName<'static>)>,
    connect_timeout: Duration,
    /// Peers to keep connected: (address, full name).
    keep: Mutex<Vec<(String, String)>>,
    keeper: Mutex<Option<JoinHandle<()>>>,
    keep_connected: bool,
    stopped: AtomicBool,
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node")
            .field("name", &self.inner.name)
            .field("addr", &self.inner.addr)
            .field("hosts", &self.hosted())
            .finish()
    }
}

impl Node {
    /// Starts describing a node.
    pub fn builder() -> NodeBuilder {
        NodeBuilder::default()
    }

    /// The node's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The address it listens on (with the port picked, if 0 was asked).
    pub fn addr(&self) -> SocketAddr {
        self.inner.addr
    }

    /// The agents it hosts.
    pub fn hosted(&self) -> Vec<String> {
        lock(&self.inner.hosts)
            .iter()
            .map(|(n, _)| n.clone())
            .collect()
    }

    /// Hosts another agent.
    pub async fn host(&self, agent: impl Agent) -> Result<(), ClusterError> {
        self.host_arc(Arc::new(agent)).await
    }

    /// Hosts another shared agent.
    pub async fn host_arc(&self, agent: Arc<dyn Agent>) -> Result<(), ClusterError> {
        let agent_name = agent.name().to_string();
        check_name("agent", &agent_name)?;
        if lock(&self.inner.hosts)
            .iter()
            .any(|(n, _)| *n == agent_name)
        {
            return Err(ClusterError::Host {
                agent: agent_name,
                reason: format!("node '{}' hosts it already", self.inner.name),
            });
        }
        let args = HostArgs {
            agent,
            node: self.inner.name.clone(),
            max_frame: max_frame(),
        };
        let (actor, _) = Actor::spawn(
            Some(host_actor_name(&agent_name, &self.inner.name)),
            HostActor,
            args,
        )
        .await
        .map_err(|e| ClusterError::Host {
            agent: agent_name.clone(),
            reason: e.to_string(),
        })?;
        ractor::pg::join(group_name(&agent_name), vec![actor.get_cell()]);
        lock(&self.inner.hosts).push((agent_name, actor));
        Ok(())
    }

    /// Stops hosting an agent: peers see the replica go; turns under way
    /// on it fail (and may be retried elsewhere).
    pub fn unhost(&self, agent: &str) -> bool {
        let mut hosts = lock(&self.inner.hosts);
        match hosts.iter().position(|(n, _)| n == agent) {
            Some(i) => {
                let (_, actor) = hosts.remove(i);
                actor.stop(None);
                true
            }
            None => false,
        }
    }

    /// Connects to the node listening at `addr` and waits until the
    /// handshake is done and its agents are known here. A peer with
    /// another cookie is refused with [`ClusterError::AuthRefused`].
    pub async fn connect(&self, addr: &str) -> Result<PeerInfo, ClusterError> {
        let peer = self.connect_once(addr).await?;
        if self.inner.keep_connected {
            let mut keep = lock(&self.inner.keep);
            if !keep.iter().any(|(a, _)| a == addr) {
                keep.push((addr.to_string(), peer.full_name.clone()));
            }
            drop(keep);
            self.start_keeper();
        }
        Ok(peer)
    }

    async fn connect_once(&self, addr: &str) -> Result<PeerInfo, ClusterError> {
        let sock = resolve(addr).await?;
        let sessions = &self.inner.sessions;
        let since = sessions.seq();
        let connected = match &self.inner.tls {
            None => ractor_cluster::client_connect(&self.inner.server, sock).await,
            Some((connector, server_name)) => {
                ractor_cluster::client_connect_enc(
                    &self.inner.server,
                    sock,
                    connector.clone(),
                    server_name.clone(),
                )
                .await
            }
        };
        connected.map_err(|e| ClusterError::Connect {
            addr: addr.to_string(),
            reason: describe_connect(&e),
        })?;
        let deadline = Instant::now() + self.inner.connect_timeout;
        let wanted = sock.to_string();
        loop {
            let changed = sessions.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            if let Some(outcome) = sessions.outcome(since, &wanted, addr) {
                return outcome;
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return Err(ClusterError::ConnectTimeout {
                    addr: addr.to_string(),
                    after: self.inner.connect_timeout,
                });
            }
        }
    }

    /// Reconnects kept peers whose connection dropped.
    fn start_keeper(&self) {
        let mut keeper = lock(&self.inner.keeper);
        if keeper.is_some() {
            return;
        }
        // The task holds a weak handle: the node stops when its users drop it.
        let weak = Arc::downgrade(&self.inner);
        *keeper = Some(tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_secs(1)).await;
                let Some(inner) = weak.upgrade() else { return };
                if inner.stopped.load(Ordering::SeqCst) {
                    return;
                }
                let node = Node { inner };
                let keep = lock(&node.inner.keep).clone();
                for (addr, full_name) in keep {
                    if node.inner.sessions.is_connected(&full_name) {
                        continue;
                    }
                    match node.connect_once(&addr).await {
                        Ok(_) => tracing::info!(node = %node.name(), peer = %addr, "reconnected"),
                        Err(e @ ClusterError::AuthRefused { .. }) => {
                            tracing::warn!(node = %node.name(), "{e}; no more reconnects to {addr}");
                            lock(&node.inner.keep).retain(|(a, _)| *a != addr);
                        }
                        Err(e) => tracing::debug!(node = %node.name(), "reconnect: {e}"),
                    }
                }
            }
        }));
    }

    /// The peers connected now.
    pub fn peers(&self) -> Vec<PeerInfo> {
        self.inner.sessions.peers()
    }

    /// Every agent known in the cluster now (hosted here or by a connected
    /// node), with the nodes hosting it.
    pub fn agents(&self) -> Vec<(String, Vec<String>)> {
        let mut out: Vec<(String, Vec<String>)> = ractor::pg::which_groups()
            .into_iter()
            .filter_map(|g| g.strip_prefix(GROUP_PREFIX).map(str::to_string))
            .map(|agent| {
                let nodes = replicas(&agent, None).into_iter().map(|r| r.node).collect();
                (agent, nodes)
            })
            .filter(|(_, nodes): &(String, Vec<String>)| !nodes.is_empty())
            .collect();
        out.sort();
        out
    }

    /// Waits until at least `count` nodes host `agent`; returns them.
    pub async fn wait_for_agent(
        &self,
        agent: &str,
        count: usize,
        timeout: Duration,
    ) -> Result<Vec<String>, ClusterError> {
        let deadline = Instant::now() + timeout;
        loop {
            let nodes: Vec<String> = replicas(agent, None).into_iter().map(|r| r.node).collect();
            if nodes.len() >= count {
                return Ok(nodes);
            }
            if Instant::now() >= deadline {
                return Err(ClusterError::NoReplica {
                    agent: agent.to_string(),
                    node: None,
                    waited: timeout,
                });
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }

    /// Stops hosting, closes every connection and stops listening.
    pub async fn shutdown(&self) {
        self.inner.stop();
        let handle = lock(&self.inner.server_handle).take();
        if let Some(h) = handle {
            // Bounded: shutting down must not hang on a stuck peer.
            let _ = tokio::time::timeout(Duration::from_secs(5), h).await;
        }
    }
}

impl Inner {
    fn stop(&self) {
        if self.stopped.swap(true, Ordering::SeqCst) {
            return;
        }
        if let Some(k) = lock(&self.keeper).take() {
            k.abort();
        }
        for (_, actor) in lock(&self.hosts).drain(..) {
            actor.stop(None);
        }
        self.server.stop_children(None);
        self.server.stop(None);
        RUNNING.store(false, Ordering::SeqCst);
    }
}

impl Drop for Inner {
    fn drop(&mut self) {
        self.stop();
    }
}

fn describe_connect(e: &ClientConnectErr) -> String {
    match e {
        ClientConnectErr::Socket(e) => e.to_string(),
        ClientConnectErr::Encryption(e) => format!("TLS handshake failed: {e}"),
        ClientConnectErr::Messaging(_) => "this node's server is gone".into(),
    }
}

/// `IP:PORT` or `host:port`, to one socket address.
async fn resolve(addr: &str) -> Result<SocketAddr, ClusterError> {
    if let Ok(a) = addr.parse() {
        return Ok(a);
    }
    let invalid = |reason: String| ClusterError::InvalidAddress {
        addr: addr.to_string(),
        reason,
    };
    let mut found = tokio::net::lookup_host(addr)
        .await
        .map_err(|e| invalid(e.to_string()))?;
    found
        .next()
        .ok_or_else(|| invalid("it resolves to no address".into()))
}
