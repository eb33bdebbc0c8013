//! A workflow's `reasoner:`: the reasoning agent of the planning crate,
//! its reasoner an agent of the config whose instructions get the answer's
//! rules and the actions, its actions agents, workflows and tools.

use std::sync::Arc;

use troupe_planning::{Action, CompileOptions, ReasonerAgent, reasoner_rules};
use troupe_runtime::{Agent, StopCondition, Workflow};

use super::ctx::{Ctx, build_error};
use super::store::Store;
use crate::builtin::builtin_tool;
use crate::error::ConfigError;
use crate::schema::{ReasonerSpec, WorkflowSpec};

impl Ctx<'_> {
    /// The workflow of `r`, named `name`: one participant, the reasoning
    /// agent, checkpointing into `store` when given.
    pub(super) async fn reasoner_workflow(
        &mut self,
        name: &str,
        description: String,
        r: &ReasonerSpec,
        w: &WorkflowSpec,
        stop: Option<StopCondition>,
        store: Option<&Store>,
    ) -> Result<Workflow, ConfigError> {
        let failed = |e: &dyn std::fmt::Display| build_error(format!("reasoner of `{name}`: {e}"));
        let field = self.field_of(w).key("reasoner");
        let mut actions = Vec::new();
        for a in &r.actions {
            actions.push(match builtin_tool(a) {
                Some(tool) => Action::Tool(tool),
                None => Action::Agent(self.participant_ref(a).await?),
            });
        }
        let tools = self.tool_list(name, &field.key("tools"), &r.tools).await?;
        actions.extend(tools.into_iter().map(Action::Tool));
        let spec = self
            .config
            .spec()
            .agents
            .get(&r.agent)
            .cloned()
            .ok_or_else(|| failed(&format!("no agent `{}`", r.agent)))?;
        self.used.insert(format!("agents.{}", r.agent));
        let rules = reasoner_rules(&actions);
        let mut spec = spec;
        spec.instructions = Some(match &spec.instructions {
            Some(i) => format!("{i}\n\n{rules}"),
            None => rules,
        });
        let reasoner = self.agent(&r.agent, &spec).await?;
        let mut b = ReasonerAgent::builder(r.agent.clone())
            .description(description)
            .reasoner(reasoner);
        for (path, script) in &r.branch_scripts {
            let mut copy = spec.clone();
            copy.script = Some(script.clone());
            let agent: Arc<dyn Agent> = self.agent(&r.agent, &copy).await?;
            b = b.branch_reasoner(path.clone(), agent);
        }
        for a in actions {
            b = b.action(a);
        }
        if let Some(s) = &r.summarizer {
            b = b.summarizer(self.participant_ref(s).await?);
        }
        if let Some(f) = r.branching_agent_start_as_new {
            b = b.branching_agent_start_as_new(f);
        }
        if let Some(d) = r.max_depth {
            b = b.max_depth(d);
        }
        if let Some(n) = r.max_iterations {
            b = b.max_iterations(n);
        }
        // The workflow's stop condition judges each batch too: a batch it
        // stops ends the loop.
        let mut options = CompileOptions::new().name("actions");
        if let Some(s) = stop.clone() {
            options = options.stop_condition(s);
        }
        if let Some(n) = w.max_concurrency {
            options = options.max_concurrency(n);
        }
        b = b.compile_options(options);
        let agent = b.build().map_err(|e| failed(&e))?;
        let mut wb = Workflow::builder().name(name).participant(agent);
        if let Some(s) = stop {
            wb = wb.stop_condition(s);
        }
        if let Some(s) = store {
            wb = self.checkpointing(wb, s);
        }
        wb.build().map_err(|e| failed(&e))
    }
}
