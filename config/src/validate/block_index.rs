//! Indexes into parallel blocks in templates (`$steps.<block>.outputs[n]`):
//! an index past the block's last step names nothing, and would render
//! as nothing at run time; it is an error where it is written.

use std::collections::BTreeMap;

use super::checker::Checker;
use crate::template::{Access, Reference};
use crate::tree::FieldPath;

/// Reports at `path` an `.outputs[n]` of `r` past the end of its block.
pub(super) fn check_block_indexes(c: &mut Checker<'_>, path: &FieldPath, r: &Reference) {
    if let Some((message, expected)) = past_end(r, &c.blocks) {
        c.value_error(path, message, Some(expected));
    }
}

/// What is wrong with an `.outputs[n]` of `r` past the end of its block,
/// and what was expected; `blocks` are the parallel blocks, by id, with
/// their steps' ids.
fn past_end(r: &Reference, blocks: &BTreeMap<String, Vec<String>>) -> Option<(String, String)> {
    let mut step = r.step.as_str();
    let mut rest = r.path.as_slice();
    while let [Access::Field(f), next, after @ ..] = rest
        && f == "outputs"
        && let Some(children) = blocks.get(step)
    {
        step = match next {
            Access::Field(id) => id,
            Access::Index(i) => match children.get(*i) {
                Some(id) => id,
                None => {
                    let last = children.len().saturating_sub(1);
                    return Some((
                        format!(
                            "`{r}`: index [{i}] is past the end of parallel block `{step}`, which has {} step(s)",
                            children.len()
                        ),
                        format!("an index from 0 to {last}, or `.outputs.<id>`"),
                    ));
                }
            },
        };
        rest = after;
    }
    None
}
