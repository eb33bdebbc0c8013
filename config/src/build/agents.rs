//! Agents: a [`ChatAgent`] from an agent's section, or one made afresh
//! each turn when its instructions read `{{ $steps… }}` templates; a
//! `user:` agent is a [`UserProxy`] asking the caller; an `a2a:` agent is
//! built in `a2a.rs`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use troupe_agents::model::ScriptPosition;
use troupe_agents::{ChatAgent, ChatModel, ContextPolicy, OnLength, Pricing, Tool, UserProxy};
use troupe_runtime::{Agent, AgentError, Reply, RunContext, Thread};

use super::ctx::{Ctx, build_error};
use crate::error::ConfigError;
use crate::plan::Blocks;
use crate::schema::{AgentSpec, BuiltinTool, OnLengthSpec, ToolSpec};
use crate::template::{Board, Template};

impl Ctx<'_> {
    /// Agent `name` as its section describes it.
    pub(super) async fn agent(
        &mut self,
        name: &str,
        spec: &AgentSpec,
    ) -> Result<Arc<dyn Agent>, ConfigError> {
        if let Some(a2a) = &spec.a2a {
            return self.a2a_agent(name, spec, a2a);
        }
        if let Some(user) = &spec.user {
            let mut proxy = UserProxy::ask(name);
            if let Some(d) = &spec.description {
                proxy = proxy.with_description(d.clone());
            }
            if let Some(p) = &user.prompt {
                proxy = proxy.with_prompt(p.clone());
            }
            return Ok(Arc::new(proxy));
        }
        let Some(model_name) = spec.model.as_deref() else {
            return Err(build_error(format!(
                "agent `{name}` has no `model` (nor `user`, nor `a2a`)"
            )));
        };
        let model = self.model(
            model_name,
            name,
            spec.script.as_ref(),
            ScriptPosition::Conversation,
        )?;
        let model = match &self.options.cassette {
            Some(cassette) => cassette.wrap(name, model),
            None => model,
        };
        let model_spec = self.model_spec(model_name)?;
        let pricing = super::models::pricing_of(model_name, model_spec)?;
        let tools = self.tools(name, spec).await?;
        let recipe = Arc::new(Recipe {
            name: name.to_string(),
            description: spec.description.clone().unwrap_or_default(),
            model,
            tools,
            ask_user: spec
                .tools
                .iter()
                .any(|t| matches!(t, ToolSpec::Builtin(BuiltinTool::AskUser, _))),
            handoffs: spec.handoffs.clone(),
            max_tool_iterations: spec.max_tool_iterations,
            structured: spec.structured_output.clone(),
            temperature: spec.temperature.or(model_spec.temperature),
            max_tokens: spec.max_tokens.or(model_spec.max_tokens),
            stream: model_spec.stream,
            on_length: match model_spec.on_length.unwrap_or_default() {
                OnLengthSpec::Error => OnLength::Error,
                OnLengthSpec::Continue => OnLength::continue_up_to_3(),
            },
            tool_timeout: spec.tool_timeout.as_ref().map(|d| d.duration),
            pricing,
            context: spec.context.map(|c| match (c.last, c.max_tokens) {
                (Some(n), _) => ContextPolicy::LastN(n),
                (None, Some(n)) => ContextPolicy::TokenBudget(n),
                (None, None) => ContextPolicy::WholeThread,
            }),
        });
        let template = match &spec.instructions {
            Some(text) => Some(
                Template::parse(text).map_err(|e| build_error(format!("agent `{name}`: {e}")))?,
            ),
            None => None,
        };
        match template {
            Some(t) if t.has_references() => {
                // Checked once here, so a turn cannot fail on the recipe.
                recipe
                    .build(Some(String::new()))
                    .map_err(|e| build_error(format!("agent `{name}`: {e}")))?;
                Ok(Arc::new(Templated {
                    recipe,
                    template: t,
                    blocks: self.blocks.clone(),
                }))
            }
            _ => {
                Ok(Arc::new(recipe.build(spec.instructions.clone()).map_err(
                    |e| build_error(format!("agent `{name}`: {e}")),
                )?))
            }
        }
    }
}

/// What a chat agent is made of, so one with templated instructions can
/// be made afresh for each turn.
struct Recipe {
    name: String,
    description: String,
    model: Arc<dyn ChatModel>,
    tools: Vec<Arc<dyn Tool>>,
    ask_user: bool,
    handoffs: Vec<String>,
    max_tool_iterations: Option<usize>,
    structured: Option<serde_json::Value>,
    temperature: Option<f32>,
    max_tokens: Option<u32>,
    stream: Option<bool>,
    tool_timeout: Option<Duration>,
    pricing: Option<Pricing>,
    context: Option<ContextPolicy>,
    on_length: OnLength,
}

impl Recipe {
    fn build(
        &self,
        instructions: Option<String>,
    ) -> Result<ChatAgent, troupe_agents::ChatAgentBuildError> {
        let mut b = ChatAgent::builder(self.name.clone())
            .description(self.description.clone())
            .model_arc(self.model.clone())
            .handoffs(self.handoffs.iter().cloned());
        if let Some(i) = instructions {
            b = b.instructions(i);
        }
        for t in &self.tools {
            b = b.tool_arc(t.clone());
        }
        if self.ask_user {
            b = b.ask_user();
        }
        if let Some(n) = self.max_tool_iterations {
            b = b.max_tool_iterations(n);
        }
        if let Some(s) = &self.structured {
            b = b.structured_output(s.clone());
        }
        if let Some(t) = self.temperature {
            b = b.temperature(t);
        }
        if let Some(n) = self.max_tokens {
            b = b.max_tokens(n);
        }
        if let Some(s) = self.stream {
            b = b.streaming(s);
        }
        if let Some(t) = self.tool_timeout {
            b = b.tool_timeout(t);
        }
        if let Some(c) = self.context {
            b = b.context(c);
        }
        if let Some(p) = self.pricing {
            b = b.pricing(p);
        }
        b.on_length(self.on_length).build()
    }
}

/// A chat agent whose instructions hold `{{ $steps… }}` references:
/// rendered at the start of each turn from the run's state as the turn
/// sees it.
struct Templated {
    recipe: Arc<Recipe>,
    template: Template,
    blocks: Blocks,
}

#[async_trait]
impl Agent for Templated {
    fn name(&self) -> &str {
        &self.recipe.name
    }
    fn description(&self) -> &str {
        &self.recipe.description
    }
    fn handoffs(&self) -> Vec<String> {
        self.recipe.handoffs.clone()
    }
    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError> {
        let board = Board::with_blocks(ctx.state(), &self.blocks);
        let agent = self
            .recipe
            .build(Some(self.template.render(&board)))
            .map_err(|e| AgentError::failed(e.to_string()))?;
        agent.run(thread, ctx).await
    }
}
