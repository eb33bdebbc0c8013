//! `magentic:`: known participants that do not take the manager's names,
//! a manager model that can answer, and counters of at least one.

use super::checker::{Checker, Defined, at_least_one};
use super::participants::check_participants;
use crate::refs::ref_id;
use crate::schema::{ConfigFile, MagenticSpec};
use crate::tree::FieldPath;

/// Checks the Magentic team `m` at `path`.
pub(super) fn check_magentic(
    c: &mut Checker<'_>,
    names: &Defined,
    spec: &ConfigFile,
    path: &FieldPath,
    m: &MagenticSpec,
) {
    let participants = path.key("participants");
    check_participants(c, names, spec, &participants, &m.participants);
    for (i, p) in m.participants.iter().enumerate() {
        let id = ref_id(p);
        if id == troupe_presets::Magentic::MANAGER || id == troupe_runtime::message::USER {
            c.value_error(
                &participants.index(i),
                format!("a Magentic team keeps the name `{id}` for itself"),
                Some(format!("another name for `{id}`")),
            );
        }
    }
    if !names.model(&m.model) {
        c.value_error(
            &path.key("model"),
            format!("unknown model `{}`", m.model),
            names.expected_models(),
        );
    } else if let Some(model) = spec.models.get(&m.model)
        && !model.provider.is_server()
        && model.replies.is_none()
    {
        c.error(
            &path.key("model"),
            format!(
                "the Magentic manager's model `{}` runs scripted but has no `replies`",
                m.model
            ),
            Some(format!(
                "`replies:` on model `{}`: the task ledger, the progress ledgers and the final answer, in turn",
                m.model
            )),
        );
    }
    for (field, zero) in [
        ("max_turns", m.max_turns == Some(0)),
        ("max_stalls", m.max_stalls == Some(0)),
        ("max_attempts", m.max_attempts == Some(0)),
    ] {
        if zero {
            at_least_one(c, &path.key(field));
        }
    }
}
