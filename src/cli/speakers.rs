//! Who speaks under a step's id: a cagent-style step with an `id` of its
//! own (`{id: draft, agent: writer}`) or a plan's action
//! (`ORDER_STARBUCKS: {agent: starbucks}`) runs under that id, but a
//! person reading the console expects the agent's name.

use std::collections::BTreeMap;

use troupe::config::Config;
use troupe::config::{Branch, Shorthand, StepSpec};

/// The agents that step ids stand for, across the config's workflows:
/// `draft` → `writer`. Steps named after their agent are left out.
pub(crate) fn step_agents(config: &Config) -> BTreeMap<String, String> {
    let spec = config.spec();
    let mut names = BTreeMap::new();
    for workflow in spec.workflow.iter().chain(spec.workflows.values()) {
        collect(workflow.steps.as_deref().unwrap_or_default(), &mut names);
        if let Some(plan) = &workflow.plan {
            // A plan's actions run their agents under the action's name;
            // a group of actions is merged by the summarizer under the
            // names joined (`A+B`).
            for (action, step) in &plan.steps {
                if action != &step.agent {
                    names.insert(action.clone(), step.agent.clone());
                }
            }
            if let (Some(groups), Some(summarizer)) = (&plan.groups, &plan.summarizer) {
                for group in groups.iter().filter(|g| g.len() > 1) {
                    names.insert(group.join("+"), summarizer.clone());
                }
            }
        }
    }
    names
}

fn collect(steps: &[StepSpec], names: &mut BTreeMap<String, String>) {
    for step in steps {
        if let (Some(id), Some(agent)) = (&step.id, &step.agent) {
            // `agent@node` speaks as `agent`.
            let agent = agent.split('@').next().unwrap_or(agent);
            if id != agent {
                names.insert(id.clone(), agent.to_string());
            }
        }
        collect(step.steps.as_deref().unwrap_or_default(), names);
        for branch in [&step.when_true, &step.when_false].into_iter().flatten() {
            if let Shorthand(Branch::Steps(steps)) = branch {
                collect(steps, names);
            }
        }
    }
}
