//! The two servers the `serve` workload drives, started as their users
//! start them and spoken to over their own HTTP APIs on 127.0.0.1:
//!
//! - `troupe serve` on a YAML team (3 agents in a round robin, one turn
//!   each, over a scripted model that waits L a call; `answer: c`) with a
//!   SQLite store: `POST /v1/chat/completions` with `X-Troupe-Session`,
//!   streamed (SSE chunks) or not;
//! - LangGraph's Agent Server in its in-memory dev mode (`langgraph dev
//!   --no-browser --no-reload`, from `langgraph-cli[inmem]` in the venv
//!   `benches/serve-peer-venv.sh` makes) on `benches/serve_peer/trio.py`:
//!   a thread per session (`POST /threads`, made before the clock starts),
//!   `POST /threads/{id}/runs/wait`, or `/runs/stream` with
//!   `stream_mode: messages-tuple`, whose first content chunk of node `c`
//!   is the answer's first token.

use std::error::Error;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::serve_proc::{start_listening, start_troupe_serve, troupe_bin};

/// A boxed error that crosses tasks.
pub(super) type SendError = Box<dyn Error + Send + Sync>;

/// Which server.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(super) enum Kind {
    /// `troupe serve`.
    Troupe,
    /// LangGraph's Agent Server, `langgraph dev` (in-memory).
    LangGraph,
    /// The floor: `bench serve_floor`, the least a server can do
    /// (`serve_floor.rs`).
    Floor,
}

impl Kind {
    pub(super) fn parse(name: &str) -> Result<Kind, String> {
        match name {
            "troupe" => Ok(Kind::Troupe),
            "langgraph" => Ok(Kind::LangGraph),
            "floor" => Ok(Kind::Floor),
            other => Err(format!("--server {other}: troupe, langgraph or floor")),
        }
    }
}

/// The answer every user turn must get: the last agent's reply.
pub(super) const ANSWER: &str = "gamma";

/// The troupe team; `{delay}` is the scripted model's wait.
fn troupe_config(latency: Duration, store: &str) -> Result<String, String> {
    let delay = if latency.is_zero() {
        String::new()
    } else {
        format!(", delay: {}us", latency.as_micros())
    };
    let store = match store {
        "sqlite" => "checkpoint:\n  store: sqlite\n  path: trio.db\n",
        "memory" => "checkpoint:\n  store: memory\n",
        other => return Err(format!("--store {other}: sqlite or memory (serve)")),
    };
    Ok(format!(
        "version: 1
name: trio
models:
  m: {{provider: scripted, when_exhausted: cycle{delay}}}
agents:
  a: {{model: m, script: [\"alpha\"]}}
  b: {{model: m, script: [\"beta\"]}}
  c: {{model: m, script: [\"{ANSWER}\"]}}
workflow:
  round_robin:
    participants: [a, b, c]
  max_turns: 3
  answer: c
{store}"
    ))
}

/// A running server.
pub(super) struct Server {
    pub base: String,
    pub child: Child,
    /// What it is: `troupe 0.x` or `langgraph-api 0.y`.
    pub version: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The venv holding `langgraph-cli[inmem]`: `SERVE_PEER_VENV`, else
/// `target/serve-peer-venv` of this repository.
fn peer_venv() -> PathBuf {
    std::env::var_os("SERVE_PEER_VENV").map_or_else(
        || Path::new(env!("CARGO_MANIFEST_DIR")).join("target/serve-peer-venv"),
        PathBuf::from,
    )
}

/// Starts the server of `kind` for `sessions` sessions at once.
pub(super) async fn start(
    kind: Kind,
    latency: Duration,
    store: &str,
    sessions: usize,
) -> Result<Server, Box<dyn Error>> {
    let dir = tempfile::tempdir()?;
    match kind {
        Kind::Troupe => {
            let cfg = dir.path().join("trio.yaml");
            std::fs::write(&cfg, troupe_config(latency, store)?)?;
            let bin = troupe_bin();
            // Room for every session's run and connection at once (the
            // defaults, 512 connections, are below the larger K).
            let room = (sessions * 2 + 8).to_string();
            let runs = vec![
                "--max-runs".to_string(),
                room.clone(),
                "--max-connections".to_string(),
                room,
            ];
            let (child, base) = start_troupe_serve(&bin, &cfg, &runs, &[])?;
            let out = Command::new(&bin).arg("--version").output()?;
            let version = String::from_utf8_lossy(&out.stdout).trim().to_string();
            Ok(Server {
                base,
                child,
                version,
                _dir: dir,
            })
        }
        Kind::LangGraph => start_langgraph(latency, store, sessions, dir).await,
        Kind::Floor => {
            let mut cmd = Command::new(std::env::current_exe()?);
            cmd.args(["serve_floor", "--latency-ms"])
                .arg(format!("{}", latency.as_secs_f64() * 1e3))
                .stdin(Stdio::null())
                .stdout(Stdio::null());
            let (child, base) = start_listening(cmd)?;
            Ok(Server {
                base,
                child,
                version: "floor (axum, no workflow)".into(),
                _dir: dir,
            })
        }
    }
}

async fn start_langgraph(
    latency: Duration,
    store: &str,
    sessions: usize,
    dir: tempfile::TempDir,
) -> Result<Server, Box<dyn Error>> {
    if store != "memory" && store != "sqlite" {
        return Err(format!("--store {store}: sqlite or memory (serve)").into());
    }
    let venv = peer_venv();
    let cli = venv.join("bin/langgraph");
    if !cli.exists() {
        return Err(format!(
            "{} not found: run benches/serve-peer-venv.sh (or set SERVE_PEER_VENV)",
            cli.display()
        )
        .into());
    }
    let graph = Path::new(env!("CARGO_MANIFEST_DIR")).join("benches/serve_peer/trio.py");
    let config =
        json!({"dependencies": ["."], "graphs": {"trio": format!("{}:graph", graph.display())}});
    std::fs::write(dir.path().join("langgraph.json"), config.to_string())?;
    let port = std::net::TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port();
    let child = Command::new(&cli)
        .args([
            "dev",
            "--no-browser",
            "--no-reload",
            "--config",
            "langgraph.json",
        ])
        .args(["--port", &port.to_string(), "--server-log-level", "WARNING"])
        // As many runs at once as there are sessions (its default is 10).
        .args(["--n-jobs-per-worker", &sessions.max(10).to_string()])
        .current_dir(dir.path())
        .env(
            "SERVE_LATENCY_MS",
            format!("{}", latency.as_secs_f64() * 1e3),
        )
        .env("LANGSMITH_TRACING", "false")
        .env("LANGCHAIN_TRACING_V2", "false")
        .env("LANGGRAPH_CLI_NO_ANALYTICS", "1")
        .env_remove("LANGSMITH_API_KEY")
        .env_remove("LANGCHAIN_API_KEY")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", cli.display()))?;
    let version = Command::new(venv.join("bin/python"))
        .args(["-c", "import importlib.metadata as m; print('langgraph-api', m.version('langgraph-api'), '/ langgraph', m.version('langgraph'))"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let mut server = Server {
        base: format!("http://127.0.0.1:{port}"),
        child,
        version,
        _dir: dir,
    };
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Ok(r) = client.get(format!("{}/ok", server.base)).send().await
            && r.status().is_success()
        {
            return Ok(server);
        }
        if let Some(status) = server.child.try_wait()? {
            return Err(format!("langgraph dev exited ({status}) before serving").into());
        }
        if Instant::now() > deadline {
            return Err("langgraph dev did not answer /ok within 120 s".into());
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// One user turn's times at the client: from the request's first byte
/// to the whole answer, and (streamed) to the answer's first token.
pub(super) struct Timing {
    pub total: Duration,
    pub first: Option<Duration>,
}

/// Makes a session named `name`: LangGraph's thread (its id), or
/// troupe's name as it is (a session is stored on its first turn). Either
/// way the session's connection is opened here, before the clock: for
/// troupe by a `GET /v1/models`, as `POST /threads` does for LangGraph.
pub(super) async fn session(
    kind: Kind,
    client: &reqwest::Client,
    base: &str,
    name: &str,
) -> Result<String, SendError> {
    match kind {
        Kind::Troupe | Kind::Floor => {
            let r = client.get(format!("{base}/v1/models")).send().await?;
            if !r.status().is_success() {
                return Err(format!("GET /v1/models: {}", r.status()).into());
            }
            r.bytes().await?;
            Ok(name.to_string())
        }
        Kind::LangGraph => {
            let r = client
                .post(format!("{base}/threads"))
                .header("content-type", "application/json")
                .body("{}")
                .send()
                .await?;
            let v: Value = serde_json::from_str(&r.text().await?)?;
            Ok(v["thread_id"]
                .as_str()
                .ok_or_else(|| format!("POST /threads: no thread_id in {v}"))?
                .to_string())
        }
    }
}

/// One user turn of `session`, streamed or not; checks the answer.
pub(super) async fn turn(
    kind: Kind,
    client: &reqwest::Client,
    base: &str,
    session: &str,
    text: &str,
    stream: bool,
) -> Result<Timing, SendError> {
    let user = json!([{"role": "user", "content": text}]);
    let request = match kind {
        Kind::Troupe | Kind::Floor => client
            .post(format!("{base}/v1/chat/completions"))
            .header("x-troupe-session", session)
            .body(json!({"model": "trio", "messages": user, "stream": stream}).to_string()),
        Kind::LangGraph => {
            let mut body = json!({"assistant_id": "trio", "input": {"messages": user}});
            let path = if stream {
                body["stream_mode"] = json!(["messages-tuple"]);
                "stream"
            } else {
                "wait"
            };
            client
                .post(format!("{base}/threads/{session}/runs/{path}"))
                .body(body.to_string())
        }
    };
    let sent = Instant::now();
    let mut r = request
        .header("content-type", "application/json")
        .send()
        .await?;
    let status = r.status();
    if !stream {
        let text = r.text().await?;
        let total = sent.elapsed();
        let v: Value =
            serde_json::from_str(&text).map_err(|e| format!("{status}: {e}: {text:.300}"))?;
        let answer = match kind {
            Kind::Troupe | Kind::Floor => &v["choices"][0]["message"]["content"],
            Kind::LangGraph => v["messages"]
                .as_array()
                .and_then(|m| m.last())
                .map_or(&Value::Null, |m| &m["content"]),
        };
        if answer.as_str() != Some(ANSWER) {
            return Err(format!("{status}: answer is not {ANSWER:?}: {text:.300}").into());
        }
        return Ok(Timing { total, first: None });
    }
    let mut sse = Sse::default();
    while let Some(bytes) = r.chunk().await? {
        sse.feed(kind, &bytes, sent)?;
    }
    let total = sent.elapsed();
    if !status.is_success() || sse.answer != ANSWER {
        return Err(format!("{status}: streamed answer {:?}, not {ANSWER:?}", sse.answer).into());
    }
    Ok(Timing {
        total,
        first: sse.first,
    })
}

/// A streamed answer read as it comes: its text so far and when its
/// first content arrived.
#[derive(Default)]
struct Sse {
    pending: Vec<u8>,
    event: String,
    answer: String,
    first: Option<Duration>,
}

impl Sse {
    fn feed(&mut self, kind: Kind, bytes: &[u8], sent: Instant) -> Result<(), SendError> {
        self.pending.extend_from_slice(bytes);
        while let Some(end) = self.pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = self.pending.drain(..=end).collect();
            let line = String::from_utf8_lossy(&line);
            let line = line.trim_end();
            if line.is_empty() {
                self.event.clear();
            } else if let Some(name) = line.strip_prefix("event:") {
                self.event = name.trim().to_string();
                if self.event == "error" {
                    return Err("the stream sent an error event".into());
                }
            } else if let Some(data) = line.strip_prefix("data:") {
                let piece = self.content(kind, data.trim())?;
                if !piece.is_empty() {
                    self.first.get_or_insert_with(|| sent.elapsed());
                    self.answer.push_str(&piece);
                }
            }
        }
        Ok(())
    }

    /// The answer's text in one `data:` line (empty for other lines).
    fn content(&self, kind: Kind, data: &str) -> Result<String, SendError> {
        match kind {
            Kind::Troupe | Kind::Floor => {
                if data == "[DONE]" {
                    return Ok(String::new());
                }
                let v: Value = serde_json::from_str(data)?;
                if v.get("error").is_some() {
                    return Err(format!("the stream sent an error: {v}").into());
                }
                Ok(v["choices"][0]["delta"]["content"]
                    .as_str()
                    .unwrap_or("")
                    .to_string())
            }
            Kind::LangGraph if self.event == "messages" => {
                let v: Value = serde_json::from_str(data)?;
                if v[1]["langgraph_node"] != "c" {
                    return Ok(String::new());
                }
                Ok(v[0]["content"].as_str().unwrap_or("").to_string())
            }
            Kind::LangGraph => Ok(String::new()),
        }
    }
}

/// How many messages session `id` holds (the user's and the agents').
pub(super) async fn stored_messages(
    kind: Kind,
    client: &reqwest::Client,
    base: &str,
    id: &str,
) -> Result<u64, SendError> {
    let path = match kind {
        Kind::Troupe | Kind::Floor => format!("{base}/sessions/{id}"),
        Kind::LangGraph => format!("{base}/threads/{id}/state"),
    };
    let text = client.get(path).send().await?.text().await?;
    let v: Value = serde_json::from_str(&text).map_err(|e| format!("{e}: {text:.300}"))?;
    let messages = match kind {
        Kind::Troupe | Kind::Floor => &v["messages"],
        Kind::LangGraph => &v["values"]["messages"],
    };
    Ok(messages.as_array().map_or(0, |m| m.len() as u64))
}
