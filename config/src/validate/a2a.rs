//! `a2a:` agents: a remote agent answers their turns, so they take nothing
//! a model would need; a URL that is http(s) (unless it is built from the
//! environment), header names HTTP allows, a retry policy that retries.

use super::checker::Checker;
use super::model_limits::check_retry;
use crate::schema::{A2aSpec, AgentSpec};
use crate::tree::FieldPath;

/// Checks an `a2a:` agent at `base`: only `description` (and `node`) go
/// with it.
pub(super) fn check_a2a_agent(
    c: &mut Checker<'_>,
    base: &FieldPath,
    agent: &AgentSpec,
    a2a: &A2aSpec,
) {
    let given = [
        ("model", agent.model.is_some()),
        ("user", agent.user.is_some()),
        ("instructions", agent.instructions.is_some()),
        ("tools", !agent.tools.is_empty()),
        ("handoffs", !agent.handoffs.is_empty()),
        ("context", agent.context.is_some()),
        ("max_tool_iterations", agent.max_tool_iterations.is_some()),
        ("structured_output", agent.structured_output.is_some()),
        ("temperature", agent.temperature.is_some()),
        ("max_tokens", agent.max_tokens.is_some()),
        ("tool_timeout", agent.tool_timeout.is_some()),
        ("script", agent.script.is_some()),
    ];
    for (field, _) in given.iter().filter(|(_, given)| *given) {
        c.error(
            &base.key(*field),
            format!(
                "an `a2a` agent is answered by the remote agent, not a model: it takes no `{field}`"
            ),
            Some("`a2a:` with only `description` beside it".into()),
        );
    }
    let at = base.key("a2a");
    let url = a2a.url.trim();
    if url.is_empty() {
        c.value_error(
            &at.key("url"),
            "the remote agent's URL is empty",
            Some("its base URL, such as `http://127.0.0.1:9999`".into()),
        );
    } else if !url.contains("${") && !is_http_url(url) {
        c.value_error(
            &at.key("url"),
            format!("`{url}` is not an http(s) URL"),
            Some("its base URL, such as `http://127.0.0.1:9999`".into()),
        );
    }
    for name in a2a.headers.keys() {
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !valid {
            c.value_error(
                &at.key("headers").key(name.clone()),
                format!("`{name}` is not a valid HTTP header name"),
                Some("letters, digits and `-`, such as `Authorization`".into()),
            );
        }
    }
    if let Some(r) = &a2a.retry {
        check_retry(c, &at.key("retry"), r);
    }
}

/// Whether `url` is `http://` or `https://` followed by a host.
fn is_http_url(url: &str) -> bool {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    rest.is_some_and(|r| {
        let host = r.split(['/', '?', '#']).next().unwrap_or("");
        !host.is_empty() && !host.contains(char::is_whitespace)
    })
}

#[cfg(test)]
mod tests {
    use super::is_http_url;

    #[test]
    fn only_http_urls_with_a_host_pass() {
        assert!(is_http_url("http://127.0.0.1:9999"));
        assert!(is_http_url(
            "https://agents.example/a/.well-known/agent-card.json"
        ));
        assert!(!is_http_url("ftp://x"));
        assert!(!is_http_url("http://"));
        assert!(!is_http_url("127.0.0.1:9999"));
        assert!(!is_http_url("http://a b/"));
    }
}
