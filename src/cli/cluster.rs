//! The cluster side of the CLI: `troupe node` (host a config's agents
//! until stopped) and `--listen` / `--connect` on `run` and `chat` (join
//! the nodes as the coordinator before running).
//!
//! The cookie comes only from the `TROUPE_COOKIE` environment variable,
//! never from a flag: flags show in `ps`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use troupe::cluster::{COOKIE_ENV, ClusterError, Node, NodeSettings, serve};
use troupe::config::{BuildOptions, Config, RemoteRef, valid_name};

use super::{FAILED, INVALID, OK, report};

/// How long a coordinator waits, once connected, for the agents it uses to
/// show up on the nodes.
const AGENT_WAIT: Duration = Duration::from_secs(10);

/// How long past `--connect-wait` a connection attempt under way may take.
const ATTEMPT_GRACE: Duration = Duration::from_secs(1);

/// For an error after which the peers were tried again until `wait` ran
/// out, a note that says so (and `hint`); else nothing.
fn retried(e: &ClusterError, wait: Duration, hint: &str) -> String {
    match e {
        ClusterError::Connect { .. } | ClusterError::ConnectTimeout { .. } => {
            format!(" (kept trying for {}{hint})", seconds(wait))
        }
        _ => String::new(),
    }
}

/// A duration in seconds as a user wrote it: `10s`, `2.5s`.
fn seconds(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

/// `--listen`, `--connect`, `--node-name`: joining a cluster to run a
/// workflow whose participants live on other nodes.
#[derive(clap::Args, Clone, Debug, Default)]
pub(crate) struct ClusterArgs {
    /// Join a cluster through this node (`IP:PORT`; repeatable). Needed
    /// when the config runs agents on other nodes (`node:`, `agent@node`,
    /// `placement: spread`). The cookie comes from `TROUPE_COOKIE`.
    #[arg(long, value_name = "ADDR")]
    connect: Vec<String>,
    /// Where this process listens as a cluster node (default
    /// `127.0.0.1:0`, a free port).
    #[arg(long, value_name = "ADDR")]
    listen: Option<String>,
    /// This process's node name in the cluster (default `run-<pid>`).
    #[arg(long, value_name = "NAME")]
    node_name: Option<String>,
    /// Seconds to keep trying the `--connect` nodes (they may still be
    /// starting) before giving up.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    connect_wait: f64,
}

/// What `troupe node` says.
#[derive(clap::Args, Clone, Debug)]
pub(crate) struct NodeArgs {
    /// The config file.
    #[arg(long)]
    pub(crate) config: PathBuf,
    /// The node's name (as `node:` and `agent@node` write it).
    #[arg(long)]
    pub(crate) name: String,
    /// Where to listen (`IP:PORT`; port 0 picks a free one).
    #[arg(long, value_name = "ADDR")]
    pub(crate) listen: String,
    /// A node to connect to (`IP:PORT`; repeatable).
    #[arg(long, value_name = "ADDR")]
    pub(crate) connect: Vec<String>,
    /// Host this agent or named workflow instead (repeatable).
    #[arg(long = "host", value_name = "AGENT")]
    pub(crate) host: Vec<String>,
    /// Run every `provider: auto` model scripted, even with an endpoint set.
    #[arg(long)]
    pub(crate) offline: bool,
}

fn no_cookie() -> String {
    format!(
        "no cookie: set the {COOKIE_ENV} environment variable to the cluster's shared secret (the same on every node; never a flag: flags show in `ps`)"
    )
}

/// The exit code of a cluster error: the user's settings (2) or the
/// cluster (1).
fn code_of(e: &ClusterError) -> u8 {
    match e {
        ClusterError::InvalidName { .. }
        | ClusterError::NoCookie(_)
        | ClusterError::InvalidAddress { .. }
        | ClusterError::Config(_) => INVALID,
        _ => FAILED,
    }
}

/// `troupe node`: builds the agents the config places on this node (or
/// those `--host` names) and serves them until Ctrl-C or SIGTERM (exit 0).
pub(crate) async fn node(args: NodeArgs) -> u8 {
    let config = match Config::load(&args.config) {
        Ok(c) => c,
        Err(e) => return report(&e),
    };
    if !valid_name(&args.name) {
        eprintln!(
            "troupe node: `{}` is not a valid node name (letters, digits, `_` and `-`)",
            args.name
        );
        return INVALID;
    }
    let mut settings = NodeSettings::new(args.name.clone(), args.listen.clone());
    for peer in &args.connect {
        settings = settings.connect(peer.clone());
    }
    let Ok(settings) = settings.cookie_from_env() else {
        eprintln!("troupe node: {}", no_cookie());
        return INVALID;
    };
    let wait = settings.startup_wait;
    let names = match hosted_names(&config, &args) {
        Ok(n) => n,
        Err(message) => {
            eprintln!("troupe node: {message}");
            return INVALID;
        }
    };
    let options = BuildOptions {
        offline: args.offline,
        troupe_exe: std::env::current_exe().ok(),
        ..BuildOptions::default()
    };
    let hosted = match config.build_hosted(&names, &args.name, &options).await {
        Ok(h) => h,
        Err(e) => return report(&e),
    };
    for note in super::console_text::distinct(&hosted.notes) {
        eprintln!("{note}");
    }
    // Prints `node NAME listening on ADDR (hosting: …; peers: …)` once up.
    let served = serve(settings, hosted.agents.clone()).await;
    hosted.close().await;
    match served {
        Ok(()) => OK,
        Err(e) => {
            eprintln!("troupe node: {e}{}", retried(&e, wait, ""));
            code_of(&e)
        }
    }
}

/// The agents a node hosts: `--host` names, else the config's rule
/// ([`Config::hosted_by`]).
fn hosted_names(config: &Config, args: &NodeArgs) -> Result<Vec<String>, String> {
    let spec = config.spec();
    if !args.host.is_empty() {
        for name in &args.host {
            if !spec.agents.contains_key(name) && !spec.workflows.contains_key(name) {
                return Err(format!(
                    "`{}` declares no agent or workflow `{name}` to host",
                    args.config.display()
                ));
            }
        }
        return Ok(args.host.clone());
    }
    let names = config.hosted_by(&args.name);
    if names.is_empty() {
        let nodes = config.nodes();
        return Err(format!(
            "`{}` places no agent on node `{}`{}; name one with `node: {}` on an agent, or `--host AGENT`",
            args.config.display(),
            args.name,
            if nodes.is_empty() {
                String::new()
            } else {
                format!(" (it places agents on: {})", nodes.join(", "))
            },
            args.name,
        ));
    }
    Ok(names)
}

/// Joins the cluster as the coordinator of a run when the flags or the
/// config ask for it: `None` when the workflow runs in this process only.
/// A config with remote participants needs `--connect` (exit 2 otherwise),
/// and the run waits until the nodes host them (exit 1 if they do not
/// show up) rather than failing midway.
pub(crate) async fn join(
    file: &Path,
    config: &Config,
    args: &ClusterArgs,
    chatty: bool,
) -> Result<Option<Node>, u8> {
    let remote = config.remote_agents();
    if args.connect.is_empty() {
        if !remote.is_empty() {
            eprintln!(
                "troupe: `{}` runs agents on other nodes ({}): join their cluster with `--connect ADDR` (the cookie in TROUPE_COOKIE), after starting them with `troupe node`",
                file.display(),
                list(&remote)
            );
            return Err(INVALID);
        }
        if args.listen.is_none() {
            return Ok(None);
        }
    }
    let name = args
        .node_name
        .clone()
        .unwrap_or_else(|| format!("run-{}", std::process::id()));
    if !valid_name(&name) {
        eprintln!("troupe: `{name}` is not a valid node name (letters, digits, `_` and `-`)");
        return Err(INVALID);
    }
    let listen = args.listen.as_deref().unwrap_or("127.0.0.1:0");
    let mut settings = NodeSettings::new(name, listen);
    for peer in &args.connect {
        settings = settings.connect(peer.clone());
    }
    let mut settings = settings.cookie_from_env().map_err(|_| {
        eprintln!("troupe: {}", no_cookie());
        INVALID
    })?;
    let Ok(wait) = Duration::try_from_secs_f64(args.connect_wait) else {
        eprintln!(
            "troupe: --connect-wait takes a number of seconds, 0 or more (got {})",
            args.connect_wait
        );
        return Err(INVALID);
    };
    settings.startup_wait = wait;
    if chatty && !args.connect.is_empty() {
        eprintln!("joining the cluster at {}", args.connect.join(", "));
    }
    // Retries stop at the wait; the bound covers an attempt under way then.
    let started = tokio::time::timeout(wait + ATTEMPT_GRACE, settings.start(Vec::new())).await;
    let node = match started {
        Ok(Ok(node)) => node,
        Ok(Err(e)) => {
            eprintln!(
                "troupe: cannot join the cluster: {e}{}",
                retried(&e, wait, "; --connect-wait sets how long")
            );
            return Err(code_of(&e));
        }
        Err(_) => {
            eprintln!(
                "troupe: cannot join the cluster at {}: no answer within {} (--connect-wait sets how long)",
                args.connect.join(", "),
                seconds(wait)
            );
            return Err(FAILED);
        }
    };
    if chatty {
        let peers: Vec<String> = node.peers().into_iter().map(|p| p.name).collect();
        eprintln!(
            "cluster node `{}` on {} (peers: {})",
            node.name(),
            node.addr(),
            if peers.is_empty() {
                "none yet".to_string()
            } else {
                peers.join(", ")
            }
        );
    }
    if let Err(missing) = wait_for(&node, &remote).await {
        let seen: Vec<String> = node
            .agents()
            .into_iter()
            .map(|(agent, nodes)| format!("{agent} on {}", nodes.join(", ")))
            .collect();
        eprintln!(
            "troupe: no node hosts {missing} (waited {AGENT_WAIT:?}; agents in the cluster: {})",
            if seen.is_empty() {
                "none".to_string()
            } else {
                seen.join("; ")
            }
        );
        node.shutdown().await;
        return Err(FAILED);
    }
    if chatty && !remote.is_empty() {
        eprintln!("remote agents: {}", list(&remote));
    }
    Ok(Some(node))
}

fn list(remote: &[RemoteRef]) -> String {
    remote
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

/// Waits until every remote agent has a replica where it must run; the
/// first one missing after [`AGENT_WAIT`] is the error.
async fn wait_for(node: &Node, remote: &[RemoteRef]) -> Result<(), String> {
    let until = tokio::time::Instant::now() + AGENT_WAIT;
    loop {
        let agents = node.agents();
        let missing = remote.iter().find(|r| {
            !agents.iter().any(|(agent, nodes)| {
                *agent == r.agent
                    && match &r.node {
                        Some(n) => nodes.contains(n),
                        None => !nodes.is_empty(),
                    }
            })
        });
        let Some(missing) = missing else {
            return Ok(());
        };
        if tokio::time::Instant::now() >= until {
            return Err(match &missing.node {
                Some(n) => format!("agent `{}` on node `{n}`", missing.agent),
                None => format!("agent `{}`", missing.agent),
            });
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
