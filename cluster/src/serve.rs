//! The body of `troupe node`: start a node from settings, join the peers,
//! serve until told to stop.

use std::io::Write;
use std::sync::Arc;
use std::time::Duration;

use troupe_runtime::Agent;

use crate::{COOKIE_ENV, ClusterError, Node};

/// What `troupe node --name NAME --listen ADDR --connect ADDR...` says,
/// plus the cookie from [`COOKIE_ENV`].
///
/// ```
/// use troupe_cluster::NodeSettings;
/// let settings = NodeSettings::new("b", "127.0.0.1:7001")
///     .connect("127.0.0.1:7000")
///     .cookie("from-the-environment");
/// assert_eq!(settings.connect, ["127.0.0.1:7000"]);
/// assert!(!format!("{settings:?}").contains("from-the-environment"));
/// ```
#[derive(Clone)]
pub struct NodeSettings {
    /// The node's name.
    pub name: String,
    /// Where it listens (`IP:PORT`).
    pub listen: String,
    /// Peers to connect to (`IP:PORT` each).
    pub connect: Vec<String>,
    /// The cluster's cookie.
    pub cookie: String,
    /// How long to keep trying peers that are not up yet when starting
    /// (nodes of a cluster may start in any order). Default 30 s.
    pub startup_wait: Duration,
    /// Connect to the peers' peers too (see [`NodeBuilder::mesh`](crate::NodeBuilder::mesh)).
    pub mesh: bool,
}

impl std::fmt::Debug for NodeSettings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("NodeSettings")
            .field("name", &self.name)
            .field("listen", &self.listen)
            .field("connect", &self.connect)
            .field("startup_wait", &self.startup_wait)
            .field("mesh", &self.mesh)
            .finish_non_exhaustive()
    }
}

impl NodeSettings {
    /// A node named `name` listening on `listen`, with no peer and no
    /// cookie yet.
    pub fn new(name: impl Into<String>, listen: impl Into<String>) -> Self {
        NodeSettings {
            name: name.into(),
            listen: listen.into(),
            connect: Vec::new(),
            cookie: String::new(),
            startup_wait: Duration::from_secs(30),
            mesh: false,
        }
    }

    /// Adds a peer.
    pub fn connect(mut self, addr: impl Into<String>) -> Self {
        self.connect.push(addr.into());
        self
    }

    /// Sets the cookie.
    pub fn cookie(mut self, cookie: impl Into<String>) -> Self {
        self.cookie = cookie.into();
        self
    }

    /// Reads the cookie from [`COOKIE_ENV`].
    pub fn cookie_from_env(self) -> Result<Self, ClusterError> {
        match std::env::var(COOKIE_ENV) {
            Ok(c) if !c.is_empty() => Ok(self.cookie(c)),
            _ => Err(ClusterError::NoCookie(COOKIE_ENV.into())),
        }
    }

    /// Starts the node hosting `agents` and connects to the peers, trying
    /// again for [`NodeSettings::startup_wait`] while a peer is not up
    /// yet. A wrong cookie fails at once.
    pub async fn start(&self, agents: Vec<Arc<dyn Agent>>) -> Result<Node, ClusterError> {
        let mut builder = Node::builder()
            .name(&self.name)
            .listen(&self.listen)
            .cookie(&self.cookie)
            .mesh(self.mesh);
        for a in agents {
            builder = builder.host_arc(a);
        }
        let node = builder.start().await?;
        let until = tokio::time::Instant::now() + self.startup_wait;
        for peer in &self.connect {
            loop {
                match node.connect(peer).await {
                    Ok(_) => break,
                    Err(e @ ClusterError::AuthRefused { .. }) => return Err(e),
                    Err(e) if tokio::time::Instant::now() >= until => return Err(e),
                    Err(_) => tokio::time::sleep(Duration::from_millis(250)).await,
                }
            }
        }
        Ok(node)
    }
}

/// Runs a node until Ctrl-C (or SIGTERM): what `troupe node` does once it
/// has built the agents of its config.
///
/// Prints one line when it is up: `node NAME listening on ADDR (hosting:
/// ..., peers: ...)`.
pub async fn serve(
    settings: NodeSettings,
    agents: Vec<Arc<dyn Agent>>,
) -> Result<(), ClusterError> {
    let node = settings.start(agents).await?;
    let peers: Vec<String> = node.peers().into_iter().map(|p| p.name).collect();
    // Not `println!`, which panics on a closed stdout: the line is for
    // whoever watches; the node serves whether it is read or not.
    let _ = writeln!(
        std::io::stdout(),
        "node {} listening on {} (hosting: {}; peers: {})",
        node.name(),
        node.addr(),
        node.hosted().join(", "),
        if peers.is_empty() {
            "none yet".to_string()
        } else {
            peers.join(", ")
        }
    );
    let stopped = wait_for_stop().await;
    node.shutdown().await;
    stopped.map_err(|e| ClusterError::Runtime {
        node: settings.name,
        reason: format!("cannot wait for a stop signal: {e}"),
    })
}

#[cfg(unix)]
async fn wait_for_stop() -> std::io::Result<()> {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        r = tokio::signal::ctrl_c() => r,
        _ = term.recv() => Ok(()),
    }
}

#[cfg(not(unix))]
async fn wait_for_stop() -> std::io::Result<()> {
    tokio::signal::ctrl_c().await
}
