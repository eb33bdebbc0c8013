//! Who speaks under a step's id: a cagent-style step with an `id` of its
//! own (`{id: draft, agent: writer}`) runs under its id, but a person
//! reading the console expects the agent's name.

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
