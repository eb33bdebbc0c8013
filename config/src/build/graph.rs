//! A planned graph (from a `graph` section or from steps) as the runtime's
//! [`Graph`]: nodes that record their outputs, transitions with their
//! conditions, loops and limits.

use std::sync::Arc;

use async_trait::async_trait;
use troupe_runtime::{
    Agent, AgentError, Graph, Message, Reply, RouterBuilder, RunContext, Thread, Workflow,
    graph::NodeInput, graph::Scheduler, message::MessageId, message::USER,
};

use super::ctx::{Ctx, build_error};
use super::merge::node_merge;
use super::node_cache::{CachedNode, config_hash, key_error};
use super::retry::retry_policy;
use crate::error::ConfigError;
use crate::plan::{Plan, PlanNode};
use crate::refs::ref_id;
use crate::template::CacheKey;

impl Ctx<'_> {
    /// The graph of workflow `name` from its plan.
    pub(super) async fn graph(
        &mut self,
        name: &str,
        plan: &Plan,
        scheduler: Option<Scheduler>,
        max_supersteps: Option<u64>,
        loop_limit: Option<u32>,
    ) -> Result<Graph, ConfigError> {
        let mut g = Graph::builder();
        for n in &plan.nodes {
            match plan.blocks.get(&n.id) {
                Some(block) => {
                    let inner = self.block(name, &n.id, block, loop_limit).await?;
                    g = g.add_agent(Block(inner));
                }
                None => {
                    let node = self.node(&n.id, &n.target).await?;
                    g = g.add_agent_arc(match &n.cache {
                        Some(c) => self.cached(name, n, &c.key, node)?,
                        None => node,
                    });
                }
            }
            if let Some(j) = n.join {
                g = g.join(n.id.clone(), j);
            }
            if let Some(m) = &n.merge {
                let what = format!("workflow `{name}`, node `{}`", n.id);
                g = g.input(
                    n.id.clone(),
                    NodeInput::Merge(node_merge(&m.template, &self.blocks, &what)?),
                );
            } else if let Some(i) = &n.input {
                g = g.input(n.id.clone(), i.clone());
            }
            if let Some(f) = n.fan_out {
                g = g.fan_out(n.id.clone(), f);
            }
            if let Some(r) = &n.retry {
                g = g.retry(n.id.clone(), retry_policy(r));
            }
            if n.first_match {
                g = g.first_match(n.id.clone());
            }
        }
        for e in &plan.edges {
            let from = plan.nodes[e.from].id.clone();
            let to = plan.nodes[e.to].id.clone();
            let cond = e
                .cond
                .runtime(&self.blocks)
                .map_err(|m| build_error(format!("workflow `{name}`: {m}")))?;
            g = match (e.is_loop, e.limit) {
                (_, Some(limit)) => g.add_loop_with_limit(from, to, cond, limit),
                (true, None) => g.add_loop(from, to, cond),
                (false, None) => g.add_transition(from, to, cond),
            };
        }
        for &s in &plan.starts {
            g = g.start(plan.nodes[s].id.clone());
        }
        if let Some(s) = scheduler {
            g = g.scheduler(s);
        }
        if let Some(n) = max_supersteps {
            g = g.max_supersteps(n);
        }
        if let Some(n) = loop_limit {
            g = g.loop_limit(n);
        }
        g.build()
            .map_err(|e| build_error(format!("workflow `{name}`: {e}")))
    }

    /// Node `n` of workflow `name` (built as `node`) behind its result
    /// cache, keyed by `key`.
    fn cached(
        &mut self,
        name: &str,
        n: &PlanNode,
        key: &str,
        node: Arc<dyn Agent>,
    ) -> Result<Arc<dyn Agent>, ConfigError> {
        let what = format!("workflow `{name}`, node `{}`", n.id);
        let key = CacheKey::parse(key).map_err(|e| key_error(&what, e))?;
        let cache = self
            .cache
            .get_or_insert_with(|| Arc::new(troupe_runtime::store::MemoryStore::new()))
            .clone();
        let agent = ref_id(&n.target).to_string();
        Ok(Arc::new(CachedNode {
            id: n.id.clone(),
            config_hash: config_hash(self.config, &agent),
            agent,
            inner: node,
            key,
            cache,
            blocks: self.blocks.clone(),
        }))
    }

    /// A parallel block with `retry:` as a nested workflow named by the
    /// block's id: its steps see what its caller saw, as steps do.
    async fn block(
        &mut self,
        name: &str,
        id: &str,
        plan: &Plan,
        loop_limit: Option<u32>,
    ) -> Result<Workflow, ConfigError> {
        let inner_name = format!("{name}/{id}");
        let graph = Box::pin(self.graph(&inner_name, plan, None, None, loop_limit)).await?;
        Workflow::builder()
            .name(id)
            .graph(graph)
            .router(RouterBuilder::default())
            .build()
            .map_err(|e| build_error(format!("workflow `{name}`, block `{id}`: {e}")))
    }
}

/// A retried parallel block's nested workflow, replying with every message
/// its steps produced (as the steps after a block that is not retried see
/// them), the whole run's usage on the last.
struct Block(Workflow);

#[async_trait]
impl Agent for Block {
    fn name(&self) -> &str {
        Agent::name(&self.0)
    }
    fn description(&self) -> &str {
        Agent::description(&self.0)
    }
    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError> {
        let before = thread.len();
        let mut reply = Agent::run(&self.0, thread, ctx).await?;
        let (Some(inner), [_]) = (reply.thread(), reply.messages()) else {
            return Ok(reply);
        };
        // The inner thread: the input, what the steps produced, then the
        // final response again (recorded as the block's answer).
        let all = inner.messages();
        let end = all.len().saturating_sub(1);
        let mut produced: Vec<Message> = all
            .get(before..end)
            .unwrap_or_default()
            .iter()
            .filter(|m| *m.source != *USER)
            .map(|m| {
                let mut own = (**m).clone();
                own.id = MessageId::new();
                own.usage = None;
                own.metadata
                    .insert("inner_source".into(), m.source.to_string());
                own
            })
            .collect();
        if produced.len() > 1 {
            produced.pop();
            produced.append(reply.messages_mut());
            *reply.messages_mut() = produced;
        }
        Ok(reply)
    }
}
