//! `models:` entries: a server model needs a name, scripted-only and
//! server-only options stay where they apply, values in range.

use super::checker::{Checker, p};
use crate::schema::{ModelSpec, Provider};
use crate::tree::FieldPath;

/// Checks model `name`.
pub(super) fn check_model(c: &mut Checker<'_>, name: &str, m: &ModelSpec) {
    let base = p(&["models", name]);
    if m.provider != Provider::Scripted && m.model.is_none() {
        c.error(
            &base,
            format!("model `{name}` has no `model` name for its server"),
            Some("`model:` such as `gpt-4o-mini` (or `provider: scripted`)".into()),
        );
    }
    if m.provider.is_server() {
        for (field, given) in [
            ("replies", m.replies.is_some()),
            ("when_exhausted", m.when_exhausted.is_some()),
            ("delay", m.delay.is_some()),
        ] {
            if given {
                c.error(
                    &base.key(field),
                    format!("`{field}` is only used by scripted models"),
                    Some("`provider: scripted` or `provider: auto`".into()),
                );
            }
        }
    }
    if m.provider == Provider::Scripted {
        for (field, given) in [
            ("base_url", m.base_url.is_some()),
            ("api_key_env", m.api_key_env.is_some()),
            ("rate_limit", m.rate_limit.is_some()),
            ("retry", m.retry.is_some()),
        ] {
            if given {
                c.error(
                    &base.key(field),
                    format!("`{field}` is not used by a scripted model"),
                    Some("`provider: openai` or `provider: auto`".into()),
                );
            }
        }
    }
    if let Some(url) = &m.base_url
        && !(url.starts_with("http://") || url.starts_with("https://") || url.starts_with("${"))
    {
        c.value_error(
            &base.key("base_url"),
            format!("`{url}` is not an http(s) URL"),
            Some("a URL such as `http://localhost:11434/v1`".into()),
        );
    }
    if let Some(t) = m.temperature {
        check_temperature(c, &base.key("temperature"), t);
    }
    if m.context_window == Some(0) {
        super::checker::at_least_one(c, &base.key("context_window"));
    }
    if m.retries == Some(0) {
        c.value_error(
            &base.key("retries"),
            "must be at least 1 (attempts, the first included)",
            Some("1 or more".into()),
        );
    }
    if m.replies.as_ref().is_some_and(Vec::is_empty) {
        c.value_error(
            &base.key("replies"),
            "an empty script answers nothing",
            Some("at least one reply".into()),
        );
    }
    if let Some(replies) = &m.replies {
        super::tools::check_script(c, &base.key("replies"), replies, None);
    }
}

/// A sampling temperature, 0 to 2 (a model's or an agent's).
pub(super) fn check_temperature(c: &mut Checker<'_>, path: &FieldPath, t: f32) {
    if !(0.0..=2.0).contains(&t) {
        c.value_error(
            path,
            format!("temperature {t} is out of range"),
            Some("a number from 0 to 2".into()),
        );
    }
}
