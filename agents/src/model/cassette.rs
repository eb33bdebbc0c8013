//! Cassettes: every model call of a team recorded as JSON lines, keyed by
//! the agent that made it and its index among that agent's calls, and
//! played back offline and deterministically.
//!
//! [`Cassette::record`] and [`Cassette::replay`] open one over a directory
//! (`DIR/model_calls.jsonl`); [`Cassette::wrap`] puts a model behind it
//! for one agent. Recording, the model is called and each call written
//! (request, response, usage, latency), secrets taken out first. Replaying,
//! the model is never called: the recorded response of the agent's next
//! call comes back, and a request not in the cassette — no such call, or
//! one that differs (another prompt, instructions, tools) — fails with a
//! [`ModelError`] naming the agent and the call, with a diff of the
//! request.

mod diff;
mod file;
mod tool;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use async_trait::async_trait;

use super::{ChatModel, ChatRequest, ChatResponse, ChatStream, Pricing};
use crate::error::ModelError;
pub use file::{CALLS_FILE, CassetteError, Entry, TOOLS_FILE, ToolEntry};

/// Recording or replaying (`T`: what a call's entry is).
enum Mode<T> {
    Record(file::Writer),
    Replay(HashMap<(String, u64), T>),
}

impl<T> Mode<T> {
    /// Recording into `dir`'s file `name`.
    fn record(dir: &Path, name: &str) -> Result<Self, CassetteError> {
        Ok(Mode::Record(file::Writer::create(dir, name)?))
    }
}

/// One cassette, shared by every agent's model (see the module's doc).
pub struct Cassette {
    mode: Mode<Entry>,
    /// Its tool calls.
    tools: Mode<ToolEntry>,
    /// The next call index of each agent (model calls).
    next: Mutex<HashMap<String, u64>>,
    /// The next tool call index of each agent.
    next_tool: Mutex<HashMap<String, u64>>,
    /// Text taken out of what is recorded (secrets from the environment).
    secrets: Vec<String>,
}

impl std::fmt::Debug for Cassette {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mode = match self.mode {
            Mode::Record(_) => "record",
            Mode::Replay(_) => "replay",
        };
        f.debug_struct("Cassette").field("mode", &mode).finish()
    }
}

impl Cassette {
    /// A cassette recording into directory `dir` (made if need be; a
    /// cassette there already is replaced).
    pub fn record(dir: &Path) -> Result<Arc<Self>, CassetteError> {
        Ok(Arc::new(Cassette {
            mode: Mode::record(dir, CALLS_FILE)?,
            tools: Mode::record(dir, TOOLS_FILE)?,
            next: Mutex::default(),
            next_tool: Mutex::default(),
            secrets: file::secrets_from_env(),
        }))
    }

    /// The cassette recorded in directory `dir`, to replay.
    pub fn replay(dir: &Path) -> Result<Arc<Self>, CassetteError> {
        let entries = file::read::<Entry>(dir, CALLS_FILE, false)?
            .into_iter()
            .map(|e| ((e.agent.clone(), e.call), e))
            .collect();
        // A cassette of a team without tools may have no tool file.
        let tools = file::read::<ToolEntry>(dir, TOOLS_FILE, true)?
            .into_iter()
            .map(|e| ((e.agent.clone(), e.call), e))
            .collect();
        Ok(Arc::new(Cassette {
            mode: Mode::Replay(entries),
            tools: Mode::Replay(tools),
            next: Mutex::default(),
            next_tool: Mutex::default(),
            secrets: file::secrets_from_env(),
        }))
    }

    /// Whether it replays (rather than records).
    pub fn replays(&self) -> bool {
        matches!(self.mode, Mode::Replay(_))
    }

    /// `model` as agent `agent` calls it, through this cassette.
    pub fn wrap(self: &Arc<Self>, agent: &str, model: Arc<dyn ChatModel>) -> Arc<dyn ChatModel> {
        Arc::new(CassetteModel {
            inner: model,
            agent: agent.to_string(),
            cassette: self.clone(),
        })
    }

    /// Agent `agent`'s next call index.
    fn take_index(&self, agent: &str) -> u64 {
        take(&self.next, agent)
    }

    /// `value` with every secret replaced.
    fn redact(&self, value: serde_json::Value) -> serde_json::Value {
        file::redact(value, &self.secrets)
    }
}

/// The next index of `agent` in `counters`.
fn take(counters: &Mutex<HashMap<String, u64>>, agent: &str) -> u64 {
    {
        let mut next = counters.lock().unwrap_or_else(|p| p.into_inner());
        let n = next.entry(agent.to_string()).or_insert(0);
        let i = *n;
        *n += 1;
        i
    }
}

/// A model behind a cassette, for one agent.
struct CassetteModel {
    inner: Arc<dyn ChatModel>,
    agent: String,
    cassette: Arc<Cassette>,
}

#[async_trait]
impl ChatModel for CassetteModel {
    fn model_name(&self) -> &str {
        self.inner.model_name()
    }
    fn provider_name(&self) -> &str {
        self.inner.provider_name()
    }
    fn context_window(&self) -> Option<usize> {
        self.inner.context_window()
    }
    fn pricing(&self) -> Option<Pricing> {
        self.inner.pricing()
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        let call = self.cassette.take_index(&self.agent);
        let wire =
            self.cassette
                .redact(serde_json::to_value(request).map_err(|e| {
                    ModelError::Other(format!("cassette: cannot encode the request: {e}"))
                })?);
        match &self.cassette.mode {
            Mode::Replay(entries) => {
                let Some(entry) = entries.get(&(self.agent.clone(), call)) else {
                    return Err(ModelError::Other(format!(
                        "cassette: agent `{}` made call {call}, which is not in the cassette (it holds {} call(s) of `{}`)",
                        self.agent,
                        entries.keys().filter(|(a, _)| *a == self.agent).count(),
                        self.agent
                    )));
                };
                if entry.request != wire {
                    return Err(ModelError::Other(format!(
                        "cassette: agent `{}` call {call}: the request differs from the recorded one:\n{}",
                        self.agent,
                        diff::lines(&entry.request, &wire)
                    )));
                }
                match (&entry.response, &entry.error) {
                    (Some(r), _) => Ok(r.clone()),
                    (None, Some(e)) => Err(ModelError::Other(e.clone())),
                    (None, None) => Err(ModelError::Other(format!(
                        "cassette: agent `{}` call {call} has neither a response nor an error",
                        self.agent
                    ))),
                }
            }
            Mode::Record(writer) => {
                let started = std::time::SystemTime::now();
                let t0 = Instant::now();
                let result = self.inner.complete(request).await;
                let latency = t0.elapsed();
                let entry = Entry {
                    agent: self.agent.clone(),
                    call,
                    model: self.inner.model_name().to_string(),
                    started_unix_s: started
                        .duration_since(std::time::SystemTime::UNIX_EPOCH)
                        .map_or(0.0, |d| d.as_secs_f64()),
                    latency_ms: latency.as_secs_f64() * 1000.0,
                    request: wire,
                    usage: result.as_ref().ok().and_then(|r| r.usage),
                    response: result.as_ref().ok().cloned(),
                    error: result.as_ref().err().map(ToString::to_string),
                };
                writer
                    .append(&entry, &self.cassette.secrets)
                    .map_err(|e| ModelError::Other(e.to_string()))?;
                result
            }
        }
    }

    // A recorded call is one whole response: a stream is made from it.
    async fn stream(&self, request: &ChatRequest) -> Result<ChatStream, ModelError> {
        let response = self.complete(request).await?;
        Ok(Box::pin(futures::stream::iter(
            super::response_deltas(&response).into_iter().map(Ok),
        )))
    }
}
