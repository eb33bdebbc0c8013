//! A workflow's `plan:`, built by the planning crate: a text plan or
//! action groups compiled into a graph workflow, or a planning agent whose
//! model writes the plan at run time. Stop flags wrap the step agents.

use std::sync::Arc;

use async_trait::async_trait;
use troupe_agents::model::ScriptPosition;
use troupe_planning::{
    ActionGroups, CompileOptions, Plan, PlanFormat, PlanGraph, PlanStep, PlanningAgent,
    ResultPassing, ResultScope, StopFlag, Summarizer,
};
use troupe_runtime::{Agent, AgentError, Reply, RunContext, StopCondition, Thread, Workflow};

use super::ctx::{Ctx, build_error};
use crate::error::ConfigError;
use crate::schema::{PassingMode, PlanFlagsSpec, PlanFormatSpec, PlanSectionSpec, ScopeMode};

/// The name of the planning agent of a `planner:` plan.
const PLANNER: &str = "planner";

impl Ctx<'_> {
    /// The workflow of `plan`, named `name`.
    pub(super) async fn plan_workflow(
        &mut self,
        name: &str,
        description: String,
        plan: &PlanSectionSpec,
        stop: Option<StopCondition>,
        limits: (Option<usize>, Option<usize>),
    ) -> Result<Workflow, ConfigError> {
        let (max_concurrency, max_history) = limits;
        let failed = |e: &dyn std::fmt::Display| build_error(format!("plan of `{name}`: {e}"));
        let mut options = CompileOptions::new()
            .name(name)
            .description(description.clone());
        if let Some(p) = &plan.passing {
            options = options.passing(match p {
                PassingMode::Nothing => ResultPassing::Nothing,
                PassingMode::Attachments => ResultPassing::Attachments,
                PassingMode::Messages => ResultPassing::Messages,
                PassingMode::LeadingArgs => ResultPassing::LeadingArgs,
                PassingMode::Key(key) => ResultPassing::Key(key.as_str().into()),
            });
        }
        if let Some(m) = &plan.merge {
            let merge = super::merge::plan_merge(&m.template, &format!("plan of `{name}`"))?;
            options = options.passing(ResultPassing::Custom(merge));
        }
        if let Some(s) = plan.scope {
            options = options.scope(match s {
                ScopeMode::Predecessors => ResultScope::Predecessors,
                ScopeMode::AllEarlier => ResultScope::AllEarlier,
            });
        }
        if let Some(s) = stop.clone() {
            options = options.stop_condition(s);
        }
        if let Some(n) = max_concurrency {
            options = options.max_concurrency(n);
        }
        if let Some(n) = max_history {
            options = options.max_history(n);
        }
        if let Some(planner) = &plan.planner {
            let model = self.model(
                &planner.model,
                PLANNER,
                planner.script.as_ref(),
                ScriptPosition::Conversation,
            )?;
            let mut agents = Vec::new();
            for a in &planner.agents {
                let agent = self.participant_ref(a).await?;
                agents.push(flagged(agent, plan.flags.as_ref()));
            }
            let mut b = PlanningAgent::builder(PLANNER)
                .description(description)
                .model_arc(model)
                .agents(agents)
                .compile_options(options);
            if let Some(f) = planner.format {
                b = b.format(match f {
                    PlanFormatSpec::Text => PlanFormat::Text,
                    PlanFormatSpec::Json => PlanFormat::Json,
                });
            }
            if let Some(n) = planner.max_attempts {
                b = b.max_attempts(n);
            }
            if let Some(i) = &planner.instructions {
                b = b.instructions(i.clone());
            }
            let agent = b.build().map_err(|e| failed(&e))?;
            // The planner's turn holds its planning calls and the plan's
            // run: judged at its end, a budget counts them all.
            let mut w = Workflow::builder().name(name).participant(agent);
            if let Some(s) = stop {
                w = w.stop_condition(s);
            }
            return w.build().map_err(|e| failed(&e));
        }
        let compiled = if let Some(text) = &plan.text {
            let graph = PlanGraph::parse(text).map_err(|e| failed(&e))?;
            let mut steps = Vec::new();
            for id in graph.ids() {
                steps.push(self.plan_step(id, plan).await?);
            }
            Plan::from_graph(&graph, steps).map_err(|e| failed(&e))?
        } else if let Some(groups) = &plan.groups {
            let mut b = ActionGroups::new();
            for group in groups {
                let mut steps = Vec::new();
                for id in group {
                    steps.push(self.plan_step(id, plan).await?);
                }
                b = b.group(steps);
            }
            if let Some(s) = &plan.summarizer {
                b = b.summarizer(Summarizer::Agent(self.participant_ref(s).await?));
            }
            b.build().map_err(|e| failed(&e))?
        } else {
            return Err(failed(&"a plan needs `text`, `groups` or `planner`"));
        };
        compiled.compile_with(&options).map_err(|e| failed(&e))
    }

    /// Step `id` of `plan`: its `steps` entry, or the agent of that name
    /// asked to carry out its step.
    async fn plan_step(
        &mut self,
        id: &str,
        plan: &PlanSectionSpec,
    ) -> Result<PlanStep, ConfigError> {
        let (agent, request, description) = match plan.steps.get(id) {
            Some(s) => (s.agent.as_str(), s.request.clone(), s.description.clone()),
            None => (id, None, None),
        };
        let agent = flagged(self.participant_ref(agent).await?, plan.flags.as_ref());
        let request = request.unwrap_or_else(|| format!("Carry out step {id} of the task."));
        let mut step = PlanStep::shared(id, agent, request);
        if let Some(d) = description {
            step = step.with_description(d);
        }
        Ok(step)
    }
}

/// `agent`, raising the plan's stop flags when its reply says their words.
fn flagged(agent: Arc<dyn Agent>, flags: Option<&PlanFlagsSpec>) -> Arc<dyn Agent> {
    match flags {
        Some(f) if f.stop.is_some() || f.abort.is_some() => Arc::new(Flagged {
            inner: agent,
            stop: f.stop.clone(),
            abort: f.abort.clone(),
        }),
        _ => agent,
    }
}

/// A step agent whose reply raises a stop flag: `stop` ends the plan
/// early and successfully, `abort` fails it (the seed's
/// `WorkGraphStopFlags`).
struct Flagged {
    inner: Arc<dyn Agent>,
    stop: Option<String>,
    abort: Option<String>,
}

#[async_trait]
impl Agent for Flagged {
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
        let mut reply = self.inner.run(thread, ctx).await?;
        let said = reply
            .messages()
            .last()
            .map(|m| m.text_content().into_owned())
            .unwrap_or_default();
        if let Some(word) = &self.abort
            && said.contains(word.as_str())
        {
            return Err(StopFlag::abort_error(said));
        }
        if let Some(word) = &self.stop
            && said.contains(word.as_str())
        {
            reply.messages_mut().push(StopFlag::stop_message(said));
        }
        Ok(reply)
    }
}
