//! `merge: {template}` as the runtime's and the planner's custom merges:
//! the results being merged become a [`Board`] (each result under its step
//! id, as the run's state keeps them) and the template is rendered over it.

use std::collections::BTreeMap;
use std::sync::Arc;

use troupe_planning::{MergeFn, ResultContent, StepInput, StepResult};
use troupe_runtime::graph::{INPUT_KEY, InputMerge};
use troupe_runtime::{Message, message::USER};

use super::ctx::build_error;
use crate::error::ConfigError;
use crate::plan::Blocks;
use crate::template::{Board, StepRecord, Template};

/// Metadata key a message moved out of a retried parallel block keeps its
/// step's id under (see `graph.rs`'s `Block`).
const INNER_SOURCE: &str = "inner_source";

/// The template of a `merge:`, parsed (`what` names it in errors).
fn parse(template: &str, what: &str) -> Result<Template, ConfigError> {
    Template::parse(template).map_err(|e| build_error(format!("{what}: merge template: {e}")))
}

/// The run-state view of `results`: each under `steps.<id>.output`.
fn values<'a>(results: impl Iterator<Item = (&'a str, String)>) -> BTreeMap<String, String> {
    let mut state = BTreeMap::new();
    for (step, text) in results {
        for (key, value) in StepRecord::new(step, text).delta(step).iter() {
            if let Some(v) = value {
                state.insert(key.to_string(), v.to_string());
            }
        }
    }
    state
}

/// A graph node's merge: its predecessors' last outputs rendered through
/// `template` (a retried block's messages under their own steps' ids).
pub(super) fn node_merge(
    template: &str,
    blocks: &Blocks,
    what: &str,
) -> Result<InputMerge, ConfigError> {
    let t = parse(template, what)?;
    let blocks = blocks.clone();
    Ok(InputMerge::new(move |results| {
        let state = values(results.iter().map(|(step, m)| {
            let step = m.metadata.get(INNER_SOURCE).map_or(*step, String::as_str);
            (step, m.text_content().into_owned())
        }));
        t.render(&Board::with_blocks(&state, &blocks))
    }))
}

/// Each result of `results` as (id, text), a merged group's branches too.
fn flatten(results: &[StepResult], out: &mut Vec<(String, String)>) {
    for r in results {
        if let ResultContent::Merged(parts) = &r.content {
            flatten(parts, out);
        }
        out.push((r.id.clone(), r.content_text()));
    }
}

/// A plan's merge: the task, the results rendered through `template` as
/// one message, then the step's request.
pub(super) fn plan_merge(template: &str, what: &str) -> Result<MergeFn, ConfigError> {
    let t = parse(template, what)?;
    Ok(Arc::new(move |input: &StepInput| {
        let mut thread: Vec<Message> = input.task.iter().map(|m| (**m).clone()).collect();
        if !input.results.is_empty() {
            let mut pairs = Vec::new();
            flatten(&input.results, &mut pairs);
            let state = values(pairs.iter().map(|(s, t)| (s.as_str(), t.clone())));
            let text = t.render(&Board::new(&state));
            thread.push(Message::text(USER, text).with_metadata(INPUT_KEY, "merge"));
        }
        thread.extend(input.request_message());
        thread
    }))
}
