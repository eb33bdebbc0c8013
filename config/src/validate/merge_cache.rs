//! `merge:`, `input: {key}` and `cache:` (seed 000's pass-down modes and
//! per-node result cache): templates that parse and name known steps, a
//! merge on what merges (a graph node, a parallel block, a plan) and not
//! beside another input mode, a cache on what runs (an agent or workflow
//! node or step), keys that are not empty.

use super::block_index::check_block_indexes;
use super::checker::{Checker, expected_names};
use super::field_paths::check_field_path;
use crate::schema::{CacheSpec, MergeSpec, StepKind, StepSpec, WorkflowSpec};
use crate::template::{CacheKey, Template};
use crate::tree::FieldPath;

/// Checks the merges, keys and caches of workflow `w` at `base`, whose
/// templates may name `ids` (its nodes or steps).
pub(super) fn check_merges_and_caches(
    c: &mut Checker<'_>,
    base: &FieldPath,
    w: &WorkflowSpec,
    ids: &[String],
) {
    if let Some(g) = &w.graph {
        for (i, n) in g.nodes.iter().enumerate() {
            let np = base.key("graph").key("nodes").index(i);
            let n = &n.0;
            if let Some(m) = &n.merge {
                if n.input.is_some() {
                    c.error(
                        &np.key("merge"),
                        "`merge` and `input` both say what the node reads",
                        Some("one of them".into()),
                    );
                }
                check_merge(c, &np.key("merge"), m, ids);
            }
            if let Some(troupe_runtime::graph::NodeInput::Key(key)) = &n.input {
                check_key_name(c, &np.key("input").key("key"), key);
            }
            if let Some(cache) = &n.cache {
                check_cache(c, &np.key("cache"), cache, ids);
            }
        }
    }
    if let Some(steps) = &w.steps {
        check_steps(c, &base.key("steps"), steps, ids);
    }
    if let Some(plan) = &w.plan
        && let Some(m) = &plan.merge
    {
        let mp = base.key("plan").key("merge");
        if plan.passing.is_some() {
            c.error(
                &mp,
                "`merge` and `passing` both say what a step receives",
                Some("one of them".into()),
            );
        }
        if let Err(e) = Template::parse(&m.template) {
            c.value_error(&mp.key("template"), e.message, None);
        }
    }
}

/// The steps of `steps` at `base`, nested ones included.
fn check_steps(c: &mut Checker<'_>, base: &FieldPath, steps: &[StepSpec], ids: &[String]) {
    for (i, s) in steps.iter().enumerate() {
        let sp = base.index(i);
        let kind = s.step_kind();
        if let Some(m) = &s.merge {
            if kind == Some(StepKind::Parallel) {
                check_merge(c, &sp.key("merge"), m, ids);
            } else {
                c.error(
                    &sp.key("merge"),
                    "`merge` belongs on a parallel step: it merges the block's results for the step after it",
                    Some("`merge:` on the parallel block before this step".into()),
                );
            }
        }
        if let Some(cache) = &s.cache {
            if matches!(kind, Some(StepKind::Agent | StepKind::Workflow)) {
                check_cache(c, &sp.key("cache"), cache, ids);
            } else {
                c.error(
                    &sp.key("cache"),
                    "`cache` belongs on an agent or workflow step: only what runs has a result to keep",
                    Some("`cache:` on the steps of the block".into()),
                );
            }
        }
        if let Some(children) = &s.steps {
            check_steps(c, &sp.key("steps"), children, ids);
        }
        for (field, branch) in [("true", &s.when_true), ("false", &s.when_false)] {
            if let Some(crate::shorthand::Shorthand(crate::schema::Branch::Steps(list))) = branch {
                check_steps(c, &sp.key(field), list, ids);
            }
        }
    }
}

/// A `merge:` at `path`: its template parses and names known steps.
fn check_merge(c: &mut Checker<'_>, path: &FieldPath, m: &MergeSpec, ids: &[String]) {
    let tp = path.key("template");
    match Template::parse(&m.template) {
        Err(e) => c.value_error(&tp, e.message, None),
        Ok(t) => check_references(c, &tp, &t, ids),
    }
}

/// A `cache:` at `path`: a key that is not empty, parses and names known
/// steps.
fn check_cache(c: &mut Checker<'_>, path: &FieldPath, cache: &CacheSpec, ids: &[String]) {
    let kp = path.key("key");
    if cache.key.trim().is_empty() {
        return c.value_error(
            &kp,
            "an empty key: every run would share one result",
            Some("a template such as `{{ $input }}` or `{{ $steps.<id>.output }}`".into()),
        );
    }
    match CacheKey::parse(&cache.key) {
        Err(e) => c.value_error(&kp, e, None),
        Ok(k) => {
            for t in k.templates() {
                check_references(c, &kp, t, ids);
            }
        }
    }
}

/// `{NAME}` of `input: {key: NAME}`: a name.
fn check_key_name(c: &mut Checker<'_>, path: &FieldPath, key: &str) {
    if key.trim().is_empty() || key.contains(['{', '}']) {
        c.value_error(
            path,
            format!("{key:?} cannot name the key the results are passed under"),
            Some("a name such as `findings`".into()),
        );
    }
}

/// The references of template `t` (written at `path`) name steps of `ids`
/// and fields their outputs have.
fn check_references(c: &mut Checker<'_>, path: &FieldPath, t: &Template, ids: &[String]) {
    for r in t.references() {
        check_block_indexes(c, path, r);
        check_field_path(c, path, r);
        // A block's `.outputs.<id>` is checked with the field path.
        if !ids.contains(&r.step) {
            c.value_error(
                path,
                format!("`{r}` names no step or node `{}`", r.step),
                expected_names(ids.iter().map(String::as_str).collect()),
            );
        }
    }
}
