//! The agents a stop condition names as sources (`source_match`,
//! `text_message`, `text_mention … from`): each one the config defines,
//! or the condition could never hold.

use troupe_runtime::{StopCondition, message::USER};

use super::checker::{Checker, Defined, expected_names};
use crate::schema::{StopForm, StopSpec};
use crate::tree::FieldPath;

/// Checks the sources named by the stop condition at `path`.
pub(super) fn check_stop_sources(
    c: &mut Checker<'_>,
    names: &Defined,
    path: &FieldPath,
    s: &StopSpec,
) {
    match &s.0 {
        StopForm::Expr(text) => {
            // An expression that does not parse is reported elsewhere.
            let Ok(cond) = StopCondition::parse(text) else {
                return;
            };
            let mut named = Vec::new();
            sources(&cond, &mut named);
            for name in named {
                if !known(names, &name) {
                    unknown(c, names, path, &name);
                }
            }
        }
        StopForm::Fields(f) => {
            for (field, list) in [
                ("source_match", &f.source_match),
                ("text_message", &f.text_message),
            ] {
                for (i, name) in list.iter().flatten().enumerate() {
                    if !known(names, name) {
                        unknown(c, names, &path.key(field).index(i), name);
                    }
                }
            }
            for (field, list) in [("all", &f.all), ("any", &f.any)] {
                for (i, sub) in list.iter().flatten().enumerate() {
                    check_stop_sources(c, names, &path.key(field).index(i), sub);
                }
            }
        }
    }
}

/// Whether messages can come from `name`: the caller, a participant the
/// config defines, or a path inside one (`team/agent`).
fn known(names: &Defined, name: &str) -> bool {
    name == USER || name.contains('/') || names.participant(name) || names.broken.contains(name)
}

fn unknown(c: &mut Checker<'_>, names: &Defined, path: &FieldPath, name: &str) {
    let mut expected = names.participants();
    expected.push(USER);
    c.value_error(
        path,
        format!("stop condition names `{name}`, which no agent or workflow of the config is: it could never hold"),
        expected_names(expected),
    );
}

/// Every source the condition names, in order.
fn sources(cond: &StopCondition, out: &mut Vec<String>) {
    match cond {
        StopCondition::TextMention {
            sources: Some(s), ..
        }
        | StopCondition::SourceMatch(s)
        | StopCondition::TextMessage(Some(s)) => out.extend(s.iter().cloned()),
        StopCondition::Any(v) | StopCondition::All(v) => v.iter().for_each(|x| sources(x, out)),
        _ => {}
    }
}
