//! The preset teams: round robin, selector, swarm, sequential and
//! map-reduce, each built by its troupe-presets builder.

use troupe_presets::{
    MapReduce, PresetError, RoundRobinGroupChat, SelectorGroupChat, Sequential, Swarm,
};
use troupe_runtime::{StopCondition, Workflow};

use super::ctx::{Ctx, build_error};
use crate::error::ConfigError;
use crate::refs::ref_id;
use crate::schema::{MapReduceSpec, SelectorSpec, SequentialSpec, TeamSpec, WorkflowSpec};

/// A preset's build, as a config error.
fn preset(built: Result<Workflow, PresetError>) -> Result<Workflow, ConfigError> {
    built.map_err(build_error)
}

impl Ctx<'_> {
    /// The preset team `w` is, if it is one.
    pub(super) async fn team(
        &mut self,
        name: &str,
        description: &str,
        w: &WorkflowSpec,
        stop: Option<StopCondition>,
    ) -> Result<Option<Workflow>, ConfigError> {
        let team = if let Some(t) = &w.round_robin {
            self.round_robin(name, description, t, stop).await?
        } else if let Some(s) = &w.selector {
            self.selector(name, description, s, stop).await?
        } else if let Some(t) = &w.swarm {
            self.swarm(name, description, t, stop).await?
        } else if let Some(s) = &w.sequential {
            self.sequential(name, description, s, stop).await?
        } else if let Some(m) = &w.map_reduce {
            self.map_reduce(name, description, m, stop).await?
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
        stop: Option<StopCondition>,
    ) -> Result<Workflow, ConfigError> {
        let mut b = RoundRobinGroupChat::builder()
            .name(name)
            .description(description)
            .participants(self.nodes(&t.participants).await?);
        if let Some(s) = stop {
            b = b.stop_condition(s);
        }
        preset(b.build())
    }

    async fn selector(
        &mut self,
        name: &str,
        description: &str,
        s: &SelectorSpec,
        stop: Option<StopCondition>,
    ) -> Result<Workflow, ConfigError> {
        let model = self.model(&s.model, "selector", None)?;
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
        if let Some(st) = stop {
            b = b.stop_condition(st);
        }
        preset(b.build())
    }

    async fn swarm(
        &mut self,
        name: &str,
        description: &str,
        t: &TeamSpec,
        stop: Option<StopCondition>,
    ) -> Result<Workflow, ConfigError> {
        let mut b = Swarm::builder()
            .name(name)
            .description(description)
            .participants(self.nodes(&t.participants).await?);
        if let Some(s) = stop {
            b = b.stop_condition(s);
        }
        preset(b.build())
    }

    async fn sequential(
        &mut self,
        name: &str,
        description: &str,
        s: &SequentialSpec,
        stop: Option<StopCondition>,
    ) -> Result<Workflow, ConfigError> {
        let mut b = Sequential::builder()
            .name(name)
            .description(description)
            .participants(self.nodes(&s.participants).await?)
            .flow(s.flow.unwrap_or_default());
        if let Some(st) = stop {
            b = b.stop_condition(st);
        }
        preset(b.build())
    }

    async fn map_reduce(
        &mut self,
        name: &str,
        description: &str,
        m: &MapReduceSpec,
        stop: Option<StopCondition>,
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
        if let Some(st) = stop {
            b = b.stop_condition(st);
        }
        preset(b.build())
    }
}
