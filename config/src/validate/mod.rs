//! Checks what types alone cannot: names that must exist, steps referenced
//! before they exist, loops with no exit, options that do not go together.
//! Every problem is collected, with the position of the field at fault.
//!
//! One file per topic; each checks its part of the config with a
//! [`Checker`](checker::Checker), and [`check`] walks the whole file.

mod a2a;
mod agent_tools;
mod agents;
mod block_index;
mod checker;
mod checkpoint;
mod conditions;
mod context;
mod field_paths;
mod graph;
mod graph_flow;
mod graph_switch;
mod humans;
mod loops;
mod magentic;
mod mcp_serve;
mod merge_cache;
mod model_limits;
mod model_wire;
mod models;
mod participants;
mod plan;
mod plan_text;
mod producers;
mod reasoner;
mod retry;
mod router;
mod schedules;
mod serve;
mod steps;
mod stop;
mod stop_sources;
mod teams;
mod tools;
mod workflows;

use std::collections::BTreeSet;
use std::path::Path;

use agents::check_agent;
use checker::{Checker, Defined, p};
use checkpoint::check_checkpoint;
use mcp_serve::check_mcp_serve;
use models::check_model;
use schedules::check_schedules;
use serve::check_serve;
use workflows::check_workflow;

use crate::error::Diagnostic;
use crate::refs::valid_name;
use crate::schema::{CONFIG_VERSION, ConfigFile, WorkflowSpec, collect_step_ids, parallel_blocks};
use crate::tree::{FieldPath, Node, Seg};
use troupe_runtime::message::USER;

/// What checking a config found: errors, and warnings (said before a run
/// starts, which they do not stop).
pub(crate) struct Checked {
    /// Problems that refuse the config.
    pub(crate) errors: Vec<Diagnostic>,
    /// Problems a run goes ahead with.
    pub(crate) warnings: Vec<Diagnostic>,
}

/// Checks a deserialized config (`source` is its text). `removed` are the paths dropped while
/// deserializing (their errors are already reported).
pub(crate) fn check(
    spec: &ConfigFile,
    tree: &Node,
    file: &Path,
    source: &str,
    removed: &[FieldPath],
) -> Checked {
    let mut c = Checker::new(file, source, tree, removed);
    c.producers = producers::producers(spec);
    let names = Defined::of(spec, removed);

    if spec.version != CONFIG_VERSION {
        c.value_error(
            &p(&["version"]),
            format!("unsupported config version {}", spec.version),
            Some(format!("{CONFIG_VERSION}")),
        );
    }

    for (name, model) in &spec.models {
        check_model(&mut c, name, model);
        model_limits::check_model_limits(&mut c, &names, name, model);
        model_wire::check_model_wire(&mut c, spec, name, model);
    }

    // Every id a template may name: steps, graph nodes, participants.
    let mut ids: BTreeSet<String> = names.participants().iter().map(|s| s.to_string()).collect();
    for w in spec.workflow.iter().chain(spec.workflows.values()) {
        collect_ids(w, &mut ids);
        if let Some(steps) = &w.steps {
            parallel_blocks(steps, &mut c.blocks);
        }
    }

    for (name, agent) in &spec.agents {
        check_agent(&mut c, &names, spec, &ids, name, agent);
    }
    agent_tools::check_agent_tools(&mut c, &names, spec);

    for (name, w) in &spec.workflows {
        let base = p(&["workflows", name]);
        if name == USER || !valid_name(name) {
            c.error(
                &base,
                format!("`{name}` is not a valid workflow name"),
                Some("letters, digits, `_` and `-`, not `user`".into()),
            );
        }
        if w.file.is_some() {
            let others: Vec<&str> = w.kinds().into_iter().filter(|k| *k != "file").collect();
            if !others.is_empty() || w.router.is_some() {
                c.error(
                    &base.key("file"),
                    "a workflow from a file takes nothing else but `name` and `description`",
                    None,
                );
            }
            continue;
        }
        check_workflow(&mut c, &names, spec, &base, w);
    }

    match &spec.workflow {
        Some(w) => {
            let base = p(&["workflow"]);
            if w.file.is_some() {
                c.error(
                    &base.key("file"),
                    "the main workflow cannot come from a file",
                    Some("`workflows: {name: {file: …}}` and a workflow using `name`".into()),
                );
            } else if !c.was_removed(&base) {
                check_workflow(&mut c, &names, spec, &base, w);
            }
        }
        None if agent_count(spec, removed) == 1 || c.was_removed(&p(&["workflow"])) => {}
        None => c.error(
            &FieldPath::root(),
            "the config has no `workflow`",
            Some("a `workflow:` section (or exactly one agent)".into()),
        ),
    }

    if let Some(cp) = &spec.checkpoint {
        check_checkpoint(&mut c, cp);
    }
    if let Some(s) = &spec.serve {
        check_serve(&mut c, s);
        if let Some(m) = &s.mcp {
            check_mcp_serve(&mut c, m);
        }
    }
    check_schedules(&mut c, &spec.schedules);

    Checked {
        errors: c.diagnostics,
        warnings: c.warnings,
    }
}

/// How many agents the config names, those dropped for errors inside
/// them included (an agent with a bad field is still one agent).
fn agent_count(spec: &ConfigFile, removed: &[FieldPath]) -> usize {
    let dropped = removed.iter().filter_map(|r| match r.0.as_slice() {
        [Seg::Key(section), Seg::Key(name), ..] if section == "agents" => Some(name),
        _ => None,
    });
    spec.agents
        .keys()
        .chain(dropped)
        .collect::<BTreeSet<_>>()
        .len()
}

/// The ids a workflow defines: its graph's nodes and its steps.
fn collect_ids(w: &WorkflowSpec, ids: &mut BTreeSet<String>) {
    if let Some(g) = &w.graph {
        for n in &g.nodes {
            ids.insert(n.id().to_string());
        }
    }
    if let Some(steps) = &w.steps {
        collect_step_ids(steps, ids);
    }
}
