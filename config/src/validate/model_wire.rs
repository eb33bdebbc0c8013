//! What a model's client would refuse when the run builds it, said by
//! `validate` at the field: a key variable that cannot be a variable's
//! name, header names and values HTTP cannot carry, prices below zero, a
//! scripted fallback with no replies.

use super::checker::{Checker, p};
use crate::schema::{ConfigFile, ModelSpec, Provider};

/// Checks the wire-level fields of model `name`.
pub(super) fn check_model_wire(c: &mut Checker<'_>, spec: &ConfigFile, name: &str, m: &ModelSpec) {
    let base = p(&["models", name]);
    if let Some(var) = &m.api_key_env
        && !is_env_name(var)
    {
        c.value_error(
            &base.key("api_key_env"),
            format!("`{var}` is not the name of an environment variable"),
            Some(
                "a variable's name: letters, digits and `_`, not starting with a digit (`OPENAI_API_KEY`)"
                    .into(),
            ),
        );
    }
    for (header, value) in &m.headers {
        let at = base.key("headers").key(header.clone());
        if !is_header_name(header) {
            c.error(
                &at,
                format!("`{header}` is not an HTTP header name"),
                Some("letters, digits and `-` (`X-Request-Source`), no spaces or `:`".into()),
            );
        } else if let Some(bad) = value.chars().find(|ch| is_forbidden_in_header(*ch)) {
            c.value_error(
                &at,
                format!(
                    "the value of header `{header}` holds {}, which a header cannot carry",
                    describe(bad)
                ),
                Some("one line of text, without control characters".into()),
            );
        }
    }
    if let Some(price) = m.pricing {
        for (field, amount) in [("input", price.input), ("output", price.output)] {
            if !(amount.is_finite() && amount >= 0.0) {
                c.value_error(
                    &base.key("pricing").key(field),
                    format!("{amount} is not a price"),
                    Some("USD per million tokens, 0 or more".into()),
                );
            }
        }
    }
    for (i, next) in m.fallback.iter().enumerate() {
        let Some(other) = spec.models.get(next) else {
            continue;
        };
        if other.provider == Provider::Scripted && other.replies.is_none() {
            c.value_error(
                &base.key("fallback").index(i),
                format!(
                    "fallback model `{next}` runs scripted but has no `replies`: it would have nothing to answer with"
                ),
                Some(format!(
                    "`replies:` on model `{next}` (an agent's `script` is its first model's only)"
                )),
            );
        }
    }
}

/// Whether `name` can name an environment variable: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_env_name(name: &str) -> bool {
    let mut chars = name.chars();
    chars
        .next()
        .is_some_and(|ch| ch.is_ascii_alphabetic() || ch == '_')
        && chars.all(|ch| ch.is_ascii_alphanumeric() || ch == '_')
}

/// Whether `name` is an HTTP header name (an RFC 9110 token).
fn is_header_name(name: &str) -> bool {
    !name.is_empty()
        && name
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(ch))
}

/// A character no header value may hold: a control character (a tab
/// aside), CR and LF among them.
fn is_forbidden_in_header(ch: char) -> bool {
    (ch.is_ascii_control() && ch != '\t') || ch == '\u{7f}'
}

fn describe(ch: char) -> String {
    match ch {
        '\r' => "a carriage return (CR)".into(),
        '\n' => "a line feed (LF)".into(),
        other => format!("the control character U+{:04X}", u32::from(other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_of_variables_and_headers() {
        assert!(is_env_name("OPENAI_API_KEY") && is_env_name("_k1"));
        assert!(!is_env_name("A B=") && !is_env_name("1A") && !is_env_name(""));
        assert!(is_header_name("X-Request-Source"));
        assert!(!is_header_name("X A") && !is_header_name("X:") && !is_header_name(""));
        assert!(is_forbidden_in_header('\r') && is_forbidden_in_header('\n'));
        assert!(!is_forbidden_in_header('\t') && !is_forbidden_in_header('é'));
    }
}
