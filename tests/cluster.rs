//! Multi-process cluster tests on 127.0.0.1: a remote agent in a graph, a
//! MapReduce over three nodes (and its failover), a wrong cookie, a worker
//! node killed (SIGKILL) mid-run with and without retries, one frozen
//! (SIGSTOP) mid-run, a restarted node reconnected, TLS, and a killed
//! coordinator resumed from its checkpoint by a fresh one.
//!
//! Every node is a child process: this test binary run again as
//! `child_process_body` with a role in the environment. A node prints
//! `READY <addr>` once it listens; a coordinator prints `RUNNING` when its
//! run starts and `RESULT <json>` at the end. The parent only orchestrates
//! (ractor's process groups are process-wide, so one process holds one
//! node), kills and reaps every child in a guard's `Drop`, and bounds every
//! wait. Children also exit when their stdin closes (the parent died) and
//! after a minute whatever happens.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::HashMap;
use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use troupe_cluster::{NODE_METADATA, Node, NodeBuilder, RemoteAgent, Tls};
use troupe_presets::MapReduce;
use troupe_runtime::store::{CheckpointStore, FileStore};
use troupe_runtime::{
    Agent, ErrorKind, Event, FnAgent, Graph, RetryPolicy, RunContext, RunError, Thread, Workflow,
};

const ROLE: &str = "TROUPE_CLUSTER_ROLE";
const NAME: &str = "TROUPE_CLUSTER_NAME";
const HOSTS: &str = "TROUPE_CLUSTER_HOSTS";
const PEERS: &str = "TROUPE_CLUSTER_PEERS";
const WORK_MS: &str = "TROUPE_CLUSTER_WORK_MS";
const DIR: &str = "TROUPE_CLUSTER_DIR";
const COOKIE: &str = "TROUPE_COOKIE";
const NODE_TIMEOUT_MS: &str = "TROUPE_CLUSTER_NODE_TIMEOUT_MS";
const TLS_DIR: &str = "TROUPE_CLUSTER_TLS";
const LISTEN: &str = "TROUPE_CLUSTER_LISTEN";

// ---------------------------------------------------------------- children

/// Not a test of its own: the body of the child processes.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn child_process_body() {
    let Ok(role) = std::env::var(ROLE) else {
        return;
    };
    // Whatever happens, a child does not outlive a minute.
    std::thread::spawn(|| {
        std::thread::sleep(Duration::from_secs(60));
        std::process::exit(3);
    });
    // Nor its parent: stdin closes when the parent goes.
    std::thread::spawn(|| {
        let mut sink = String::new();
        while std::io::stdin().read_line(&mut sink).is_ok_and(|n| n > 0) {}
        std::process::exit(0);
    });
    match role.as_str() {
        "node" => node_role().await,
        "coord-graph" => coord_graph().await,
        "coord-mapreduce" => coord_mapreduce(false).await,
        "coord-mapreduce-failover" => coord_mapreduce(true).await,
        "coord-cookie" => coord_cookie().await,
        "coord-reconnect" => coord_reconnect().await,
        "coord-kill" => coord_kill(true).await,
        "coord-kill-noretry" | "coord-cut" => coord_kill(false).await,
        "coord-resume-a" => coord_resume(false).await,
        "coord-resume-b" => coord_resume(true).await,
        other => panic!("unknown role {other}"),
    }
}

fn env(key: &str) -> String {
    std::env::var(key).unwrap_or_default()
}

fn last_text(t: &Thread) -> String {
    t.last()
        .map(|m| m.text_content().into_owned())
        .unwrap_or_default()
}

/// The agents a node can host, by name.
fn catalog(name: &str, node: &str) -> Arc<dyn Agent> {
    let node = node.to_string();
    match name {
        // A workflow, so the remote turn has events of its own to report.
        "researcher" => Arc::new(
            Workflow::builder()
                .name("researcher")
                .participant(FnAgent::sync("search", move |t: &Thread| {
                    Ok(format!("notes on '{}' from {node}", last_text(t)))
                }))
                .build()
                .unwrap(),
        ),
        "worker" => {
            let ms: u64 = env(WORK_MS).parse().unwrap_or(0);
            Arc::new(FnAgent::new("worker", move |t: Arc<Thread>, _ctx| {
                let node = node.clone();
                async move {
                    tokio::time::sleep(Duration::from_millis(ms)).await;
                    Ok(format!("{} by {node}", last_text(&t).to_uppercase()))
                }
            }))
        }
        other => panic!("no agent {other} in the catalog"),
    }
}

async fn node_role() {
    let name = env(NAME);
    let listen = match env(LISTEN) {
        l if l.is_empty() => "127.0.0.1:0".to_string(),
        l => l,
    };
    let mut builder = Node::builder()
        .name(&name)
        .listen(listen)
        .cookie(env(COOKIE));
    for agent in env(HOSTS).split(',').filter(|s| !s.is_empty()) {
        builder = builder.host_arc(catalog(agent, &name));
    }
    let node = with_tls(builder).start().await.unwrap();
    println!("READY {}", node.addr());
    std::future::pending::<()>().await;
}

/// A coordinator node connected to the peers in the environment.
async fn coordinator() -> Node {
    let mut builder = Node::builder()
        .name("coord")
        .listen("127.0.0.1:0")
        .cookie(env(COOKIE));
    for peer in env(PEERS).split(',').filter(|s| !s.is_empty()) {
        builder = builder.connect(peer);
    }
    with_tls(builder).start().await.unwrap()
}

/// ractor_cluster's TLS mode, with the self-signed certificate (DER files)
/// in the directory the environment names, if it names one.
fn with_tls(builder: NodeBuilder) -> NodeBuilder {
    use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName};
    let dir = env(TLS_DIR);
    if dir.is_empty() {
        return builder;
    }
    let dir = std::path::Path::new(&dir);
    let cert = CertificateDer::from(std::fs::read(dir.join("cert.der")).unwrap());
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(
        std::fs::read(dir.join("key.der")).unwrap(),
    ));
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let server = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(vec![cert.clone()], key)
        .unwrap();
    let mut roots = rustls::RootCertStore::empty();
    roots.add(cert).unwrap();
    let client = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    builder.tls(Tls {
        acceptor: Arc::new(server).into(),
        connector: Arc::new(client).into(),
        server_name: ServerName::try_from("localhost").unwrap(),
    })
}

fn result(value: Value) {
    println!("RESULT {value}");
}

/// writer (local) → researcher@b (remote) → editor (local).
async fn coord_graph() {
    let node = coordinator().await;
    node.wait_for_agent("researcher", 1, Duration::from_secs(5))
        .await
        .unwrap();
    let writer = FnAgent::sync("writer", |t: &Thread| {
        Ok(format!("draft: {}", last_text(t)))
    });
    let editor = FnAgent::sync("editor", |t: &Thread| {
        Ok(format!("final: {}", last_text(t)))
    });
    let graph = Graph::builder()
        .add_agent(writer)
        .add_agent(RemoteAgent::parse("researcher@b").unwrap())
        .add_agent(editor)
        .add_edge("writer", "researcher")
        .add_edge("researcher", "editor")
        .build()
        .unwrap();
    let workflow = Workflow::builder()
        .name("paper")
        .graph(graph)
        .build()
        .unwrap();
    let (ctx, mut events) = RunContext::stream();
    let r = workflow.run_task("actors", &ctx).await.unwrap();
    let remote_paths: Vec<String> = events
        .drain_ready()
        .iter()
        .map(|e| e.path().to_string())
        .filter(|p| p.contains("@b"))
        .collect();
    let researched = r
        .thread
        .messages()
        .iter()
        .find(|m| &*m.source == "researcher")
        .map(|m| m.metadata.get(NODE_METADATA).cloned());
    result(json!({
        "status": r.status.to_string(),
        "final": r.final_text(),
        "researcher_node": researched,
        "remote_paths": remote_paths,
        "agents": node.agents(),
    }));
    node.shutdown().await;
}

/// MapReduce whose workers are spread over b and c (with `failover`, a
/// worker whose node is lost runs again on the other).
async fn coord_mapreduce(failover: bool) {
    let node = coordinator().await;
    node.wait_for_agent("worker", 2, Duration::from_secs(5))
        .await
        .unwrap();
    let team = MapReduce::builder()
        .name("team")
        .split(|t: &Thread| last_text(t).split(',').map(str::to_string).collect())
        .worker(
            RemoteAgent::new("worker")
                .unwrap()
                .failover(if failover { 2 } else { 0 }),
        )
        .reducer(FnAgent::sync("join", |t: &Thread| {
            Ok(t.messages()
                .iter()
                .filter(|m| m.metadata.contains_key("worker"))
                .map(|m| m.text_content().into_owned())
                .collect::<Vec<_>>()
                .join("; "))
        }))
        .build()
        .unwrap();
    let (ctx, mut events) = RunContext::stream();
    println!("RUNNING");
    let r = team.run_task("a,b,c,d,e,f", &ctx).await.unwrap();
    let worker_paths: Vec<String> = events
        .drain_ready()
        .iter()
        .filter(|e| matches!(&e.event, Event::AgentStarted { .. }))
        .map(|e| e.path().to_string())
        .filter(|p| p.contains("worker#"))
        .collect();
    result(json!({
        "status": r.status.to_string(),
        "final": r.final_text(),
        "worker_paths": worker_paths,
    }));
    node.shutdown().await;
}

/// Joins a node with the wrong cookie.
async fn coord_cookie() {
    let node = Node::builder()
        .name("coord")
        .listen("127.0.0.1:0")
        .cookie("not-the-cookie")
        .start()
        .await
        .unwrap();
    let started = Instant::now();
    let err = node.connect(&env(PEERS)).await.unwrap_err();
    result(json!({
        "error": err.to_string(),
        "elapsed_ms": started.elapsed().as_millis() as u64,
        "peers": node.peers().len(),
    }));
    node.shutdown().await;
}

/// One turn on b; then, once the parent restarted b, another.
async fn coord_reconnect() {
    let node = coordinator().await;
    let worker = RemoteAgent::new("worker").unwrap();
    let turn = |text: &str| {
        let thread = Arc::new(Thread::from_messages([troupe_runtime::Message::user(text)]));
        worker.run(thread, RunContext::new().child("solo"))
    };
    println!(
        "FIRST {}",
        turn("one").await.unwrap().messages()[0].text_content()
    );
    let deadline = Instant::now() + Duration::from_secs(10);
    while !worker.replica_nodes().is_empty() {
        assert!(Instant::now() < deadline, "b never went away");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    println!("GONE");
    // The node reconnects by itself once b listens again.
    node.wait_for_agent("worker", 1, Duration::from_secs(15))
        .await
        .unwrap();
    let second = turn("two").await.unwrap();
    result(json!({ "second": second.messages()[0].text_content() }));
    node.shutdown().await;
}

/// split → worker#1..worker#4 (remote, spread over b and c) → join; the
/// parent kills (or freezes) b while the workers work.
async fn coord_kill(retry: bool) {
    let node = coordinator().await;
    node.wait_for_agent("worker", 2, Duration::from_secs(5))
        .await
        .unwrap();
    let split = FnAgent::sync("split", |_: &Thread| Ok("go"));
    let join = FnAgent::sync("join", |t: &Thread| {
        let mut parts: Vec<String> = t
            .messages()
            .iter()
            .filter(|m| m.source.starts_with("worker#"))
            .map(|m| format!("{}={}", m.source, m.text_content()))
            .collect();
        parts.sort();
        Ok(parts.join("; "))
    });
    let mut graph = Graph::builder().add_agent(split).add_agent(join);
    let mut worker = RemoteAgent::new("worker").unwrap();
    if let Ok(ms) = env(NODE_TIMEOUT_MS).parse() {
        worker = worker
            .node_timeout(Duration::from_millis(ms))
            .heartbeat(Duration::from_millis(250));
    }
    for w in worker.replicate(4) {
        let name = w.name().to_string();
        graph = graph
            .add_agent_arc(w)
            .add_edge("split", name.clone())
            .add_edge(name.clone(), "join");
        if retry {
            graph = graph.retry(
                name,
                RetryPolicy::fixed(3, Duration::from_millis(100)).on([ErrorKind::Node]),
            );
        }
    }
    let workflow = Workflow::builder()
        .name("fan")
        .graph(graph.build().unwrap())
        .build()
        .unwrap();
    let (ctx, mut events) = RunContext::stream();
    println!("RUNNING");
    let started = Instant::now();
    let outcome = workflow.run_task("work", &ctx).await;
    let elapsed = started.elapsed().as_millis() as u64;
    let retries = events
        .drain_ready()
        .iter()
        .filter(|e| matches!(&e.event, Event::Retry { .. }))
        .count();
    match outcome {
        Ok(r) => {
            let root = &r.thread;
            let mut ids: Vec<_> = root.messages().iter().map(|m| m.id).collect();
            let total = ids.len();
            ids.sort();
            ids.dedup();
            let mut per_worker: HashMap<String, usize> = HashMap::new();
            for m in root.messages() {
                if m.source.starts_with("worker#") {
                    *per_worker.entry(m.source.to_string()).or_default() += 1;
                }
            }
            result(json!({
                "ok": true,
                "final": r.final_text(),
                "messages": total,
                "unique_ids": ids.len(),
                "per_worker": per_worker,
                "retries": retries,
                "elapsed_ms": elapsed,
            }));
        }
        Err(e) => {
            let (kind, node_name) = match &e {
                RunError::AgentFailed { source, .. } => (
                    format!("{:?}", source.kind()),
                    source
                        .downcast_source::<troupe_cluster::NodeLost>()
                        .map(|lost| lost.node().to_string())
                        .unwrap_or_default(),
                ),
                other => (format!("{other:?}"), String::new()),
            };
            result(json!({
                "ok": false,
                "error": e.to_string(),
                "agent": e.agent(),
                "kind": kind,
                "node": node_name,
                "elapsed_ms": elapsed,
            }));
        }
    }
    node.shutdown().await;
}

/// s#1 → … → s#6, each step remote, checkpointed after every superstep.
fn chain(store: Arc<dyn CheckpointStore>) -> Workflow {
    // Says which process ran it: a resumed run must not run it again.
    let start = FnAgent::sync("start", |_: &Thread| {
        Ok(format!("go from {}", std::process::id()))
    });
    let mut graph = Graph::builder().add_agent(start);
    let mut prev = "start".to_string();
    for i in 1..=6 {
        let name = format!("s#{i}");
        graph = graph
            .add_agent(RemoteAgent::new("worker").unwrap().named(name.clone()))
            .add_edge(prev, name.clone())
            .retry(
                name.clone(),
                RetryPolicy::fixed(3, Duration::from_millis(100)).on([ErrorKind::Node]),
            );
        prev = name;
    }
    Workflow::builder()
        .name("chain")
        .graph(graph.build().unwrap())
        .checkpoint_store(store)
        .build()
        .unwrap()
}

async fn coord_resume(resume: bool) {
    let node = coordinator().await;
    node.wait_for_agent("worker", 2, Duration::from_secs(5))
        .await
        .unwrap();
    let store: Arc<dyn CheckpointStore> = Arc::new(FileStore::open(env(DIR)).unwrap());
    let workflow = chain(store.clone());
    println!("RUNNING");
    let r = if resume {
        workflow.resume("resume", &RunContext::new()).await.unwrap()
    } else {
        workflow
            .run_task("begin", &RunContext::new().with_run_id("resume"))
            .await
            .unwrap()
    };
    let sources: Vec<String> = r
        .thread
        .messages()
        .iter()
        .map(|m| m.source.to_string())
        .collect();
    let mut ids: Vec<_> = r.thread.messages().iter().map(|m| m.id).collect();
    let total = ids.len();
    ids.sort();
    ids.dedup();
    result(json!({
        "status": r.status.to_string(),
        "sources": sources,
        "messages": total,
        "unique_ids": ids.len(),
        "final": r.final_text(),
        "start": r.thread.messages().iter().find(|m| &*m.source == "start").map(|m| m.text_content().into_owned()),
        "pid": std::process::id(),
    }));
    node.shutdown().await;
}

// ------------------------------------------------------------------ parent

/// A child process, killed and reaped when dropped.
struct Proc {
    name: String,
    child: Child,
    lines: Receiver<String>,
    seen: Vec<String>,
}

impl Proc {
    fn spawn(name: &str, role: &str, envs: &[(&str, &str)]) -> Proc {
        let mut cmd = Command::new(std::env::current_exe().unwrap());
        cmd.args([
            "--exact",
            "child_process_body",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(ROLE, role)
        .env(NAME, name)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().unwrap();
        let out = child.stdout.take().unwrap();
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(out).lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Proc {
            name: name.to_string(),
            child,
            lines: rx,
            seen: Vec::new(),
        }
    }

    /// What follows `prefix` on the first line holding it, within `timeout`.
    fn expect(&mut self, prefix: &str, timeout: Duration) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.lines.recv_timeout(left) {
                Ok(line) => {
                    // The test harness may have begun the line
                    // (`test child_process_body ... `).
                    if let Some(at) = line.find(prefix) {
                        return line[at + prefix.len()..].trim().to_string();
                    }
                    self.seen.push(line);
                }
                Err(RecvTimeoutError::Timeout) => panic!(
                    "{}: no '{prefix}' line within {timeout:?}; output so far:\n{}",
                    self.name,
                    self.seen.join("\n")
                ),
                Err(RecvTimeoutError::Disconnected) => panic!(
                    "{}: exited before a '{prefix}' line; output:\n{}",
                    self.name,
                    self.seen.join("\n")
                ),
            }
        }
    }

    fn result(&mut self, timeout: Duration) -> Value {
        serde_json::from_str(&self.expect("RESULT ", timeout)).unwrap()
    }

    fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, and reap.
    fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A node hosting `hosts`, up and listening; returns it and its address.
fn node(name: &str, hosts: &str, work_ms: u64, cookie: &str) -> (Proc, String) {
    let ms = work_ms.to_string();
    let mut p = Proc::spawn(
        name,
        "node",
        &[(HOSTS, hosts), (WORK_MS, &ms), (COOKIE, cookie)],
    );
    let addr = p.expect("READY ", Duration::from_secs(15));
    (p, addr)
}

fn coord(role: &str, peers: &[&str], extra: &[(&str, &str)]) -> Proc {
    let peers = peers.join(",");
    let mut envs = vec![(PEERS, peers.as_str()), (COOKIE, "sesame")];
    envs.extend_from_slice(extra);
    Proc::spawn("coord", role, &envs)
}

fn as_strs(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

#[test]
fn a_remote_agent_takes_part_in_a_graph_workflow() {
    let (_b, b) = node("b", "researcher", 0, "sesame");
    let mut c = coord("coord-graph", &[&b], &[]);
    let r = c.result(Duration::from_secs(20));
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(r["final"], "final: notes on 'draft: actors' from b", "{r}");
    assert_eq!(r["researcher_node"], "b", "{r}");
    // The remote workflow's own events came back, the node in their path.
    let paths = as_strs(&r["remote_paths"]);
    assert!(
        paths.iter().any(|p| p == "paper/researcher@b/search"),
        "{paths:?}"
    );
    assert!(
        paths.iter().all(|p| p.starts_with("paper/researcher@b")),
        "{paths:?}"
    );
}

#[test]
fn nodes_talk_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
    std::fs::write(dir.path().join("cert.der"), cert.cert.der()).unwrap();
    std::fs::write(dir.path().join("key.der"), cert.signing_key.serialize_der()).unwrap();
    let tls = dir.path().to_string_lossy().to_string();
    let mut b_proc = Proc::spawn(
        "b",
        "node",
        &[(HOSTS, "researcher"), (COOKIE, "sesame"), (TLS_DIR, &tls)],
    );
    let b = b_proc.expect("READY ", Duration::from_secs(15));
    let mut c = coord("coord-graph", &[&b], &[(TLS_DIR, &tls)]);
    let r = c.result(Duration::from_secs(20));
    assert_eq!(r["status"], "completed", "{r}");
    assert_eq!(r["final"], "final: notes on 'draft: actors' from b", "{r}");
}

#[test]
fn a_map_reduce_spreads_its_workers_over_two_nodes() {
    let (_b, b) = node("b", "worker", 50, "sesame");
    let (_c, c) = node("c", "worker", 50, "sesame");
    let mut co = coord("coord-mapreduce", &[&b, &c], &[]);
    let r = co.result(Duration::from_secs(20));
    assert_eq!(r["status"], "completed", "{r}");
    let text = r["final"].as_str().unwrap_or_default().to_string();
    let answers: Vec<&str> = text.split("; ").collect();
    assert_eq!(answers.len(), 6, "{text}");
    for (i, task) in ["A", "B", "C", "D", "E", "F"].iter().enumerate() {
        assert!(answers[i].starts_with(&format!("{task} by ")), "{text}");
    }
    let on_b = answers.iter().filter(|a| a.ends_with(" by b")).count();
    let on_c = answers.iter().filter(|a| a.ends_with(" by c")).count();
    assert_eq!((on_b, on_c), (3, 3), "round robin spreads evenly: {text}");
    assert_eq!(as_strs(&r["worker_paths"]).len(), 6, "{r}");
}

#[test]
fn a_map_reduce_fails_over_to_the_other_node_when_one_is_killed() {
    let (mut b_proc, b) = node("b", "worker", 1500, "sesame");
    let (_c, c) = node("c", "worker", 1500, "sesame");
    let mut co = coord("coord-mapreduce-failover", &[&b, &c], &[]);
    co.expect("RUNNING", Duration::from_secs(15));
    std::thread::sleep(Duration::from_millis(500));
    b_proc.kill();
    let r = co.result(Duration::from_secs(20));
    assert_eq!(r["status"], "completed", "{r}");
    let text = r["final"].as_str().unwrap_or_default().to_string();
    let answers: Vec<&str> = text.split("; ").collect();
    assert_eq!(answers.len(), 6, "{text}");
    for (i, task) in ["A", "B", "C", "D", "E", "F"].iter().enumerate() {
        // Once each, and from c: b died before finishing any.
        assert_eq!(answers[i], format!("{task} by c"), "{text}");
    }
}

#[test]
fn a_restarted_node_is_reconnected_and_used_again() {
    let (mut b_proc, b) = node("b", "worker", 0, "sesame");
    let mut co = coord("coord-reconnect", &[&b], &[]);
    assert_eq!(co.expect("FIRST ", Duration::from_secs(15)), "ONE by b");
    b_proc.kill();
    co.expect("GONE", Duration::from_secs(15));
    let mut again = Proc::spawn(
        "b",
        "node",
        &[(HOSTS, "worker"), (COOKIE, "sesame"), (LISTEN, &b)],
    );
    assert_eq!(again.expect("READY ", Duration::from_secs(15)), b);
    let r = co.result(Duration::from_secs(20));
    assert_eq!(r["second"], "TWO by b", "{r}");
}

#[test]
fn a_wrong_cookie_is_refused_with_a_clear_error() {
    let (_b, b) = node("b", "worker", 0, "sesame");
    let mut c = coord("coord-cookie", &[&b], &[]);
    let r = c.result(Duration::from_secs(20));
    let error = r["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("refused the connection during authentication"),
        "{error}"
    );
    assert!(error.contains("cookie"), "{error}");
    assert!(error.contains(&b), "{error}");
    assert!(r["elapsed_ms"].as_u64().unwrap_or(u64::MAX) < 5_000, "{r}");
    assert_eq!(r["peers"], 0, "{r}");
}

#[test]
fn a_worker_killed_mid_run_is_retried_on_the_replica_without_duplicates() {
    let (mut b_proc, b) = node("b", "worker", 1500, "sesame");
    let (_c, c) = node("c", "worker", 1500, "sesame");
    let mut co = coord("coord-kill", &[&b, &c], &[]);
    co.expect("RUNNING", Duration::from_secs(15));
    std::thread::sleep(Duration::from_millis(500));
    b_proc.kill();
    let r = co.result(Duration::from_secs(20));
    assert_eq!(r["ok"], true, "{r}");
    // Every worker answered once, all from c in the end.
    let per_worker = r["per_worker"].as_object().cloned().unwrap_or_default();
    assert_eq!(per_worker.len(), 4, "{r}");
    assert!(per_worker.values().all(|n| n == 1), "{r}");
    assert_eq!(r["messages"], r["unique_ids"], "{r}");
    let text = r["final"].as_str().unwrap_or_default();
    assert_eq!(text.matches(" by c").count(), 4, "{text}");
    // The two turns that were on b were retried.
    assert_eq!(r["retries"], 2, "{r}");
}

#[test]
fn a_worker_killed_mid_run_without_retries_fails_fast_naming_node_and_agent() {
    let (mut b_proc, b) = node("b", "worker", 3000, "sesame");
    let (_c, c) = node("c", "worker", 3000, "sesame");
    let mut co = coord("coord-kill-noretry", &[&b, &c], &[]);
    co.expect("RUNNING", Duration::from_secs(15));
    std::thread::sleep(Duration::from_millis(500));
    let killed = Instant::now();
    b_proc.kill();
    let r = co.result(Duration::from_secs(20));
    let after_kill = killed.elapsed();
    assert_eq!(r["ok"], false, "{r}");
    assert_eq!(r["kind"], "Node", "{r}");
    assert_eq!(r["node"], "b", "{r}");
    let error = r["error"].as_str().unwrap_or_default();
    assert!(
        error.contains("fan/worker#") && error.contains("'worker'") && error.contains("'b'"),
        "{error}"
    );
    // Well within the default 5 s bound: the dead node's socket closed, and
    // the workers on c (3 s of work) were not waited for.
    assert!(
        after_kill < Duration::from_millis(2500),
        "{after_kill:?} {r}"
    );
}

#[test]
fn a_killed_coordinator_resumes_from_its_checkpoint_on_a_fresh_one() {
    let dir = tempfile::tempdir().unwrap();
    let dir_s = dir.path().to_string_lossy().to_string();
    let (_b, b) = node("b", "worker", 300, "sesame");
    let (_c, c) = node("c", "worker", 300, "sesame");
    let mut first = coord("coord-resume-a", &[&b, &c], &[(DIR, &dir_s)]);
    first.expect("RUNNING", Duration::from_secs(15));
    // Let a few steps finish (a checkpoint after each), then kill it.
    let store = FileStore::open(dir.path()).unwrap();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let n = rt
            .block_on(store.list("resume"))
            .map(|l| l.len())
            .unwrap_or(0);
        if n >= 3 {
            break;
        }
        assert!(Instant::now() < deadline, "no checkpoints appeared");
        std::thread::sleep(Duration::from_millis(20));
    }
    first.kill();
    let saved = rt.block_on(store.list("resume")).unwrap().len();
    assert!(
        saved < 8,
        "the first coordinator got too far ({saved} checkpoints)"
    );

    let mut second = coord("coord-resume-b", &[&b, &c], &[(DIR, &dir_s)]);
    let r = second.result(Duration::from_secs(25));
    assert_eq!(r["status"], "completed", "{r}");
    let sources = as_strs(&r["sources"]);
    let steps: Vec<&String> = sources.iter().filter(|s| s.starts_with("s#")).collect();
    assert_eq!(
        steps,
        ["s#1", "s#2", "s#3", "s#4", "s#5", "s#6"],
        "each step once, in order: {sources:?}"
    );
    assert_eq!(r["messages"], r["unique_ids"], "{r}");
    // It went on from the checkpoint: the first steps are the first
    // coordinator's, not run again.
    let start = r["start"].as_str().unwrap_or_default();
    assert!(start.starts_with("go from "), "{r}");
    assert_ne!(start, format!("go from {}", r["pid"]), "{r}");
}

#[test]
fn a_worker_cut_off_mid_run_fails_the_step_within_the_node_timeout() {
    // SIGSTOP: the node's sockets stay open but nothing answers, which
    // ractor_cluster alone never notices.
    let (b_proc, b) = node("b", "worker", 5000, "sesame");
    let (_c, c) = node("c", "worker", 5000, "sesame");
    let mut co = coord("coord-cut", &[&b, &c], &[(NODE_TIMEOUT_MS, "1500")]);
    co.expect("RUNNING", Duration::from_secs(15));
    std::thread::sleep(Duration::from_millis(500));
    let frozen = Instant::now();
    let stopped = Command::new("kill")
        .args(["-STOP", &b_proc.pid().to_string()])
        .status()
        .unwrap();
    assert!(stopped.success());
    let r = co.result(Duration::from_secs(20));
    let after = frozen.elapsed();
    assert_eq!(r["ok"], false, "{r}");
    assert_eq!(r["kind"], "Node", "{r}");
    assert_eq!(r["node"], "b", "{r}");
    let error = r["error"].as_str().unwrap_or_default();
    assert!(error.contains("did not answer for 1.5s"), "{error}");
    // The bound: the node timeout from the last answer, plus scheduling.
    assert!(
        after >= Duration::from_millis(1000) && after < Duration::from_millis(3000),
        "{after:?}"
    );
    // (b is SIGKILLed, stopped or not, when its guard drops.)
}
