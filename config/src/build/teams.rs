//! The preset teams: round robin, selector, swarm, sequential and
//! map-reduce, each built by its troupe-presets builder — checkpointing
//! to the config's store itself, per turn or superstep, when it is the
//! main workflow.

use troupe_agents::model::ScriptPosition;
use troupe_presets::{
    MapReduce, PresetError, RoundRobinGroupChat, SelectorGroupChat, Sequential, Swarm,
};
use troupe_runtime::{StopCondition, Workflow};

use super::ctx::{Ctx, build_error};
use super::store::Store;
use crate::error::ConfigError;
use crate::refs::ref_id;
use crate::schema::{MapReduceSpec, SelectorSpec, SequentialSpec, TeamSpec, WorkflowSpec};

/// A preset's build, as a config error.
fn preset(built: Result<Workflow, PresetError>) -> Result<Workflow, ConfigError> {
    built.map_err(build_error)
}

/// What every preset builder is given besides its participants: the stop
/// condition, the history limit, and the checkpoint store with how often
/// to save.
pub(super) struct Common<'s> {
    pub(super) stop: Option<StopCondition>,
    pub(super) store: Option<&'s Store>,
    pub(super) every: Option<u64>,
    pub(super) max_history: Option<usize>,
}

/// Builder `$b` with `$common`'s stop condition and checkpoints (every
/// preset builder has the same methods for them).
macro_rules! common {
    ($b:expr, $common:expr) => {{
        let mut b = $b;
        let common: Common<'_> = $common;
        if let Some(s) = common.stop {
            b = b.stop_condition(s);
        }
        if let Some(n) = common.max_history {
            b = b.max_history(n);
        }
        if let Some(store) = common.store {
            b = b.checkpoint_store(store.checkpoints.clone());
            if let Some(n) = common.every {
                b = b.checkpoint_every(n);
            }
        }
        b
    }};
}

impl Ctx<'_> {
    /// The preset team `w` is, if it is one; `store` is given for the
    /// main workflow.
    pub(super) async fn team(
        &mut self,
        name: &str,
        description: &str,
        w: &WorkflowSpec,
        stop: Option<StopCondition>,
        store: Option<&Store>,
    ) -> Result<Option<Workflow>, ConfigError> {
        let common = Common {
            stop,
            store,
            every: self.config.spec().checkpoint.as_ref().and_then(|c| c.every),
            max_history: w.max_history,
        };
        let team = if let Some(t) = &w.round_robin {
            self.round_robin(name, description, t, common).await?
        } else if let Some(s) = &w.selector {
            self.selector(name, description, s, common).await?
        } else if let Some(t) = &w.swarm {
            self.swarm(name, description, t, common).await?
        } else if let Some(s) = &w.sequential {
            self.sequential(name, description, s, common).await?
        } else if let Some(m) = &w.map_reduce {
            self.map_reduce(name, description, m, common).await?
        } else if let Some(m) = &w.magentic {
            self.magentic(name, description, m, common).await?
        } else {
            return Ok(None);
        };
        Ok(Some(team))
    }

    async fn round_robin(
        &mut self,
        name: &str,
        description: &str,
        t: &TeamSpec,
        common: Common<'_>,
    ) -> Result<Workflow, ConfigError> {
        let b = RoundRobinGroupChat::builder()
            .name(name)
            .description(description)
            .participants(self.nodes(&t.participants).await?);
        preset(common!(b, common).build())
    }

    async fn selector(
        &mut self,
        name: &str,
        description: &str,
        s: &SelectorSpec,
        common: Common<'_>,
    ) -> Result<Workflow, ConfigError> {
        // The selector's request shows its earlier picks as its own
        // answers, so its script goes by the conversation too.
        let model = self.model(&s.model, "selector", None, ScriptPosition::Conversation)?;
        let mut b = SelectorGroupChat::builder()
            .name(name)
            .description(description)
            .participants(self.nodes(&s.participants).await?)
            .model(model);
        if let Some(p) = &s.prompt {
            b = b.prompt(p.clone());
        }
        if let Some(a) = s.allow_repeated_speaker {
            b = b.allow_repeated_speaker(a);
        }
        if let Some(n) = s.max_selector_attempts {
            b = b.max_selector_attempts(n);
        }
        if let Some(f) = s.fallback {
            b = b.fallback(f);
        }
        preset(common!(b, common).build())
    }

    async fn swarm(
        &mut self,
        name: &str,
        description: &str,
        t: &TeamSpec,
        common: Common<'_>,
    ) -> Result<Workflow, ConfigError> {
        let b = Swarm::builder()
            .name(name)
            .description(description)
            .participants(self.nodes(&t.participants).await?);
        preset(common!(b, common).build())
    }

    async fn sequential(
        &mut self,
        name: &str,
        description: &str,
        s: &SequentialSpec,
        common: Common<'_>,
    ) -> Result<Workflow, ConfigError> {
        let b = Sequential::builder()
            .name(name)
            .description(description)
            .participants(self.nodes(&s.participants).await?)
            .flow(s.flow.unwrap_or_default());
        preset(common!(b, common).build())
    }

    async fn map_reduce(
        &mut self,
        name: &str,
        description: &str,
        m: &MapReduceSpec,
        common: Common<'_>,
    ) -> Result<Workflow, ConfigError> {
        let mapper = self.node(ref_id(&m.mapper), &m.mapper).await?;
        let worker = self.worker(&m.worker, m.placement, m.failover).await?;
        let reducer = self.node(ref_id(&m.reducer), &m.reducer).await?;
        let mut b = MapReduce::builder()
            .name(name)
            .description(description)
            .mapper(mapper)
            .worker_arc(worker)
            .reducer(reducer);
        if let Some(i) = m.isolation {
            b = b.isolation(i);
        }
        if let Some(n) = m.max_concurrency {
            b = b.max_concurrency(n);
        }
        preset(common!(b, common).build())
    }
}
