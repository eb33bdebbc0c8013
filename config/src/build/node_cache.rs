//! `cache: {key}`: a node (graph node or step) whose result is kept in the
//! run's store under its key and used, when found, instead of running it
//! (the seed's per-node result cache: `load_result`, "save result if
//! configured").
//!
//! The stored key is the node's id, a hash of its config (its agent's
//! spec with instructions, model and tools, and that model's spec: a
//! changed config misses) and a hash of the key template rendered over the
//! run's state (`{{ $steps… }}`) and the node's input (`{{ $input }}`: what
//! it reads this turn, the messages after its own last one).
//! The value keeps the full key text, so two keys with one hash miss
//! rather than mix. A found result comes back as the node's messages, new
//! ids, no usage (nothing was spent).

use std::sync::Arc;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use troupe_runtime::store::{ResultCache, stable_hash};
use troupe_runtime::{Agent, AgentError, Message, Reply, RunContext, Thread, message::MessageId};

use super::ctx::build_error;
use crate::error::ConfigError;
use crate::plan::Blocks;
use crate::template::{Board, CacheKey, StepRecord};

/// What is kept under a key.
#[derive(Serialize, Deserialize)]
struct Entry {
    /// The full key text (checked on a hit).
    key: String,
    /// The node's messages.
    messages: Vec<Message>,
}

/// A node with a result cache (see the module's documentation).
pub(super) struct CachedNode {
    pub(super) id: String,
    /// The agent the node runs (its outputs are recorded under the node's
    /// id on a hit, as a run records them).
    pub(super) agent: String,
    pub(super) inner: Arc<dyn Agent>,
    pub(super) key: CacheKey,
    /// The hash of the node's config.
    pub(super) config_hash: u64,
    pub(super) cache: Arc<dyn ResultCache>,
    pub(super) blocks: Blocks,
}

impl CachedNode {
    /// The full key text of this turn: id, config hash, rendered key.
    fn key_text(&self, thread: &Thread, ctx: &RunContext) -> String {
        let input = input_text(thread, &self.id);
        let board = Board::with_blocks(ctx.state(), &self.blocks);
        let rendered = self.key.render(&board, &input);
        format!("{}\n{:016x}\n{rendered}", self.id, self.config_hash)
    }
}

/// What node `id` reads this turn: the text of the messages of its thread
/// after its own last one (all of them on its first turn).
fn input_text(thread: &Thread, id: &str) -> String {
    let ms = thread.messages();
    let start = ms
        .iter()
        .rposition(|m| *m.source == *id)
        .map_or(0, |i| i + 1);
    ms.get(start..)
        .unwrap_or_default()
        .iter()
        .map(|m| m.text_content().into_owned())
        .collect::<Vec<_>>()
        .join("\n")
}

#[async_trait]
impl Agent for CachedNode {
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
        let key = self.key_text(&thread, &ctx);
        let stored = format!("node:{:016x}", stable_hash(key.as_bytes()));
        let fail = |e: Box<dyn std::error::Error + Send + Sync>| {
            AgentError::failed(format!("node `{}`: result cache: {e}", self.id)).with_source(e)
        };
        let found = self
            .cache
            .cached(&stored)
            .await
            .map_err(|e| fail(e.into()))?;
        if let Some(entry) = found.and_then(|b| serde_json::from_slice::<Entry>(&b).ok())
            && entry.key == key
            && !entry.messages.is_empty()
        {
            let messages: Vec<Message> = entry
                .messages
                .into_iter()
                .map(|mut m| {
                    m.id = MessageId::new();
                    m.usage = None;
                    m
                })
                .collect();
            let mut reply = Reply::from(messages);
            if let Some(last) = reply.messages().last() {
                let record = StepRecord::new(self.agent.clone(), last.text_content());
                reply = reply.with_state_delta(record.delta(&self.id));
            }
            return Ok(reply);
        }
        let reply = self.inner.run(thread, ctx).await?;
        let complete = reply.request().is_none() && reply.inner_requests().is_empty();
        if complete && !reply.messages().is_empty() {
            let entry = Entry {
                key,
                messages: reply.messages().to_vec(),
            };
            let bytes = serde_json::to_vec(&entry).map_err(|e| fail(e.into()))?;
            self.cache
                .save_cached(&stored, &bytes)
                .await
                .map_err(|e| fail(e.into()))?;
        }
        Ok(reply)
    }
}

/// The hash of what node target `agent` is configured as: its agent spec
/// (instructions, tools, …) and its model's spec, or its workflow's spec.
pub(super) fn config_hash(config: &crate::load::Config, agent: &str) -> u64 {
    let spec = config.spec();
    let text = match spec.agents.get(agent) {
        Some(a) => {
            let model = a.model.as_deref().and_then(|m| spec.models.get(m));
            format!("{a:?}\n{model:?}")
        }
        None => format!("{:?}", spec.workflows.get(agent)),
    };
    stable_hash(text.as_bytes())
}

/// A parse error of a cache key, for the build.
pub(super) fn key_error(what: &str, e: String) -> ConfigError {
    build_error(format!("{what}: cache key: {e}"))
}
