//! A workflow section: a preset team, or a workflow of its own (a graph
//! or steps, a router, or both), with its threads, stop condition and
//! checkpoints.

use troupe_runtime::{RouterBuilder, StopCondition, Workflow, WorkflowBuilder};

use super::ctx::{BoxFuture, Ctx};
use super::router::router;
use super::stop::stop_condition;
use super::store::Store;
use crate::error::ConfigError;
use crate::plan::Plan;
use crate::schema::{TurnLimit, WorkflowSpec};
use crate::tree::FieldPath;

impl Ctx<'_> {
    /// Builds a workflow section; `store` is given for the main workflow.
    pub(super) fn workflow<'s>(
        &'s mut self,
        name: &'s str,
        w: &'s WorkflowSpec,
        store: Option<&'s Store>,
    ) -> BoxFuture<'s, Result<Workflow, ConfigError>> {
        Box::pin(async move {
            match self.workflow_section(name, w, store).await {
                // Checking starts and connects to nothing, so whatever
                // fails is the config's fault: placed at the section.
                Err(ConfigError::Build(m)) if self.options.check => {
                    Err(self.invalid(&self.field_of(w), m))
                }
                built => built,
            }
        })
    }

    /// Builds a workflow section (as [`Ctx::workflow`], unplaced).
    async fn workflow_section(
        &mut self,
        name: &str,
        w: &WorkflowSpec,
        store: Option<&Store>,
    ) -> Result<Workflow, ConfigError> {
        let answer: &[String] = w.answer.as_ref().map_or(&[], |a| &a.0);
        let answering = |this: &Self, built: Workflow| {
            if answer.is_empty() {
                return Ok(built);
            }
            built.with_answer(answer.iter().cloned()).map_err(|e| {
                this.invalid(
                    &this.field_of(w).key("answer"),
                    format!("workflow `{name}`: {e}"),
                )
            })
        };
        let stop = self.with_ceiling(
            w,
            stop_condition(w.stop.as_ref(), w.max_turns.and_then(TurnLimit::turns)),
        );
        let description = w
            .description
            .clone()
            .or_else(|| self.config.spec().description.clone())
            .unwrap_or_default();
        if let Some(r) = &w.reasoner {
            let built = self
                .reasoner_workflow(name, description, r, w, stop, store)
                .await?;
            return answering(self, built);
        }
        if let Some(plan) = &w.plan {
            let planned = self
                .plan_workflow(
                    name,
                    description,
                    plan,
                    stop,
                    (w.max_concurrency, w.max_history),
                )
                .await?;
            let planned = answering(self, planned)?;
            // A compiled plan has no store of its own: nested in a workflow
            // that has one, it checkpoints through it.
            return match store {
                Some(s) => {
                    let b = Workflow::builder().name(name).participant(planned);
                    self.checkpointing(b, s).build().map_err(|e| {
                        self.invalid(&self.field_of(w), format!("workflow `{name}`: {e}"))
                    })
                }
                None => Ok(planned),
            };
        }
        // A preset checkpoints itself, after each of its turns or
        // supersteps.
        if let Some(team) = self
            .team(name, &description, w, stop.clone(), store)
            .await?
        {
            return answering(self, team);
        }
        let own = self.own_workflow(name, description, w, stop, store).await?;
        answering(self, own)
    }

    /// A workflow that is not a preset: a graph (or steps) and a router,
    /// one of them or both.
    async fn own_workflow(
        &mut self,
        name: &str,
        description: String,
        w: &WorkflowSpec,
        stop: Option<StopCondition>,
        store: Option<&Store>,
    ) -> Result<Workflow, ConfigError> {
        let mut b = Workflow::builder().name(name).description(description);
        let plan = match (&w.graph, &w.steps) {
            (Some(g), _) => Some((Plan::of_graph(g), g.scheduler, g.max_supersteps)),
            (None, Some(steps)) => Some((Plan::of_steps(steps), None, None)),
            (None, None) => None,
        };
        let has_graph = plan.is_some();
        if let Some((plan, scheduler, max_supersteps)) = plan {
            let graph = self
                .graph(
                    name,
                    &plan,
                    scheduler,
                    max_supersteps,
                    w.max_loop_iterations,
                )
                .await?;
            b = b.graph(graph);
            if w.steps.is_some() && w.router.is_none() {
                // Every step sees the task and everything produced
                // before it (and, in a loop, the feedback that sent
                // the flow back), as cagent injects prior outputs.
                b = b.router(RouterBuilder::default());
            }
        }
        if let Some(r) = &w.router {
            if w.graph.is_none() {
                let members = match &r.participants {
                    Some(list) => list.clone(),
                    None => r.route_members(|_| true),
                };
                b = b.participants(self.nodes(&members).await?);
            }
            b = b.router(router(r));
        }
        for (group, members) in &w.shared_threads {
            b = b.shared_thread(group.clone(), members.clone());
        }
        let unstopped = stop.is_none();
        if let Some(s) = stop {
            b = b.stop_condition(s);
        }
        if let Some(n) = w.max_concurrency {
            b = b.max_concurrency(n);
        }
        if let Some(n) = w.max_history {
            b = b.max_history(n);
        }
        if let Some(s) = store {
            b = self.checkpointing(b, s);
        }
        let at = self.field_of(w);
        let at = if w.router.is_some() {
            at.key("router")
        } else {
            at
        };
        let workflow = b.build().map_err(|e| {
            self.invalid(
                &at,
                format!("workflow `{name}`: {}", yaml_advice(&e.to_string())),
            )
        })?;
        if !has_graph
            && unstopped
            && w.router.as_ref().is_some_and(|r| !r.allow_cycles)
            && let Some(cycle) = workflow
                .warnings()
                .into_iter()
                .find(|w| w.contains("cascade without end"))
        {
            return Err(self.invalid(
                &at,
                format!(
                    "workflow `{name}`: {cycle}, and nothing stops the run (no `stop:`, budget or turn ceiling: `max_turns: unbounded`); add `stop:` or `max_turns: N` to the workflow, or `allow_cycles: true` to the router to let it run unbounded"
                ),
            ));
        }
        // Routes that form a cycle can cascade only where inboxes decide
        // who runs: with a graph (or steps), the graph does, and its loops
        // are checked for an exit already.
        if !has_graph {
            for warning in workflow.warnings() {
                let d = self
                    .config
                    .locate(&at, format!("workflow `{name}`: {warning}"));
                self.warnings.push(d);
            }
        }
        Ok(workflow)
    }

    /// `stop` with the default turn ceiling of `w`'s kind added, when
    /// `max_turns:` is not written and `stop` bounds no turns already.
    fn with_ceiling(&self, w: &WorkflowSpec, stop: Option<StopCondition>) -> Option<StopCondition> {
        if w.max_turns.is_some() || stop.as_ref().is_some_and(StopCondition::bounds_turns) {
            return stop;
        }
        let Some(turns) = w.default_turn_ceiling() else {
            return stop;
        };
        let kind = w.ceiling_kind().unwrap_or("workflow");
        let at = self.field_of(w);
        let ceiling = StopCondition::turn_ceiling(
            turns,
            format!(
                "the default for a `{kind}` workflow; raise it with `max_turns: N` on `{at}` (or `max_turns: unbounded` for none)"
            ),
        );
        Some(match stop {
            Some(s) => s | ceiling,
            None => ceiling,
        })
    }

    /// Where workflow section `w` is written: `workflow`, or
    /// `workflows.NAME`.
    pub(super) fn field_of(&self, w: &WorkflowSpec) -> FieldPath {
        let spec = self.config.spec();
        if spec
            .workflow
            .as_ref()
            .is_some_and(|main| std::ptr::eq(main, w))
        {
            return FieldPath::root().key("workflow");
        }
        spec.workflows
            .iter()
            .find(|(_, named)| std::ptr::eq(*named, w))
            .map_or_else(
                || FieldPath::root().key("workflow"),
                |(name, _)| FieldPath::root().key("workflows").key(name.clone()),
            )
    }

    /// `b` checkpointing to `store`, as often as the config says.
    pub(super) fn checkpointing(&self, mut b: WorkflowBuilder, store: &Store) -> WorkflowBuilder {
        b = b.checkpoint_store(store.checkpoints.clone());
        if let Some(n) = self.config.spec().checkpoint.as_ref().and_then(|c| c.every) {
            b = b.checkpoint_every(n);
        }
        b
    }
}

/// A router's message as a YAML user acts on it: the builder call it
/// advises (`.output("c")`) said as the config's field.
fn yaml_advice(message: &str) -> String {
    let mut out = String::with_capacity(message.len());
    let mut rest = message;
    while let Some(at) = rest.find("with `.output(\"") {
        out.push_str(&rest[..at]);
        let after = &rest[at + "with `.output(\"".len()..];
        match after.find("\")`") {
            Some(end) => {
                out.push_str(&format!(
                    "by adding `{}` to the router's `output:`",
                    &after[..end]
                ));
                rest = &after[end + "\")`".len()..];
            }
            None => {
                out.push_str(&rest[at..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::yaml_advice;

    #[test]
    fn a_router_error_advises_the_yaml_field() {
        let said = yaml_advice(
            "agent \"c\" reaches nobody: no inbox accepts its messages; add a route from it, or declare it a result with `.output(\"c\")`",
        );
        assert!(
            said.ends_with("declare it a result by adding `c` to the router's `output:`"),
            "{said}"
        );
    }
}
