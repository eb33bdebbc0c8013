//! Remote (A2A) agents through a cassette: each turn's exchange with the
//! remote agent recorded in `a2a_calls.jsonl` — what it was sent (the
//! thread's messages since the agent last spoke) and what came back (its
//! messages, its question when it asked one) — or answered from the
//! recording without a connection. Keyed by the turn's path; matched as
//! model calls are.

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use troupe_runtime::{Agent, AgentError, Message, Reply, RunContext, Thread, message::MessageId};

use super::Cassette;
use super::matching::Recorded;
use super::tape::Kind;

/// One recorded turn of a remote agent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentEntry {
    /// The turn's path (`team/agent`).
    pub agent: String,
    /// Its index among that path's turns, from 0.
    pub call: u64,
    /// How long it took, in milliseconds.
    pub latency_ms: f64,
    /// What the remote agent was sent: `{"messages": [{source,
    /// content}…]}`, the thread since the agent last spoke.
    pub request: serde_json::Value,
    /// The messages it answered with.
    #[serde(default)]
    pub messages: Vec<Message>,
    /// Messages for its own thread only (an A2A task waiting for input
    /// keeps its ids there).
    #[serde(default)]
    pub private: Vec<Message>,
    /// The question it asked, if it waits for input.
    #[serde(default)]
    pub question: Option<String>,
    /// Why the turn failed, if it did.
    #[serde(default)]
    pub error: Option<String>,
}

impl Recorded for AgentEntry {
    fn agent(&self) -> &str {
        &self.agent
    }
    fn call(&self) -> u64 {
        self.call
    }
    fn request(&self) -> serde_json::Value {
        self.request.clone()
    }
}

impl Cassette {
    /// The remote agent `agent` through this cassette.
    pub fn wrap_agent(self: &Arc<Self>, agent: Arc<dyn Agent>) -> Arc<dyn Agent> {
        Arc::new(CassetteAgent {
            inner: agent,
            cassette: self.clone(),
        })
    }
}

struct CassetteAgent {
    inner: Arc<dyn Agent>,
    cassette: Arc<Cassette>,
}

/// What the agent is sent in a turn over `thread`, as recorded.
fn request_of(name: &str, thread: &Thread) -> serde_json::Value {
    let messages = thread.messages();
    let since = messages
        .iter()
        .rposition(|m| *m.source == *name)
        .map_or(0, |i| i + 1);
    let sent: Vec<serde_json::Value> = messages[since..]
        .iter()
        .map(|m| serde_json::json!({"source": &*m.source, "content": m.content}))
        .collect();
    serde_json::json!({ "messages": sent })
}

/// `m` as a new message (a fresh id and time, the rest as recorded).
fn fresh(mut m: Message) -> Message {
    m.id = MessageId::new();
    m.created_at = SystemTime::now();
    m
}

#[async_trait]
impl Agent for CassetteAgent {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn description(&self) -> &str {
        self.inner.description()
    }

    fn handoffs(&self) -> Vec<String> {
        self.inner.handoffs()
    }

    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError> {
        let path = match ctx.path() {
            p if p.is_empty() => self.inner.name().to_string(),
            p => p.to_string(),
        };
        let tape = self
            .cassette
            .tape(ctx.run_id().map(|r| &**r))
            .map_err(|e| AgentError::failed(e.to_string()))?;
        let call = tape.take_index(Kind::Agents, &path);
        let request = self.cassette.redact(request_of(self.inner.name(), &thread));
        if let Some((mode, recorded)) = &self.cassette.replay {
            let entry = tape
                .pick(
                    Kind::Agents,
                    &recorded.agents,
                    &path,
                    self.inner.name(),
                    call,
                    &request,
                    *mode,
                )
                .map_err(AgentError::failed)?;
            if let Some(e) = &entry.error {
                return Err(AgentError::failed(e.clone()));
            }
            let reply = Reply::from(
                entry
                    .messages
                    .iter()
                    .cloned()
                    .map(fresh)
                    .collect::<Vec<_>>(),
            )
            .with_private(entry.private.iter().cloned().map(fresh).collect());
            return Ok(match &entry.question {
                Some(question) => reply.with_request(question.clone()),
                None => reply,
            });
        }
        let t0 = Instant::now();
        let result = self.inner.run(thread, ctx).await;
        // A cancelled turn runs again on resume: nothing to record.
        if matches!(&result, Err(e) if e.kind() == troupe_runtime::ErrorKind::Cancelled) {
            return result;
        }
        let entry = AgentEntry {
            agent: path,
            call,
            latency_ms: t0.elapsed().as_secs_f64() * 1000.0,
            request,
            messages: result
                .as_ref()
                .map(|r| r.messages().to_vec())
                .unwrap_or_default(),
            private: result
                .as_ref()
                .map(|r| r.private().to_vec())
                .unwrap_or_default(),
            question: result
                .as_ref()
                .ok()
                .and_then(|r| r.request().map(str::to_string)),
            error: result.as_ref().err().map(ToString::to_string),
        };
        tape.append(Kind::Agents, &entry, &self.cassette.secrets())
            .map_err(|e| AgentError::failed(e.to_string()))?;
        result
    }
}
