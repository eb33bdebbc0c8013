//! What the served configs declare beside their tools, gathered once when
//! the server starts: resources (with the config whose directory their
//! `file:` is relative to), resource templates and prompts. When two
//! configs declare the same URI or prompt name, the first (by team name)
//! is served and the other is said on stderr.

use std::collections::BTreeSet;

use troupe::config::{Config, McpPromptSpec, McpResourceSpec, McpResourceTemplateSpec};

use super::McpTeam;

/// A declared resource and the config that declares it.
pub(super) struct Declared<T> {
    /// What is declared.
    pub(super) spec: T,
    /// Where it is declared.
    pub(super) config: Config,
}

/// The resources, templates and prompts of every served config.
#[derive(Default)]
pub(super) struct Surface {
    /// Resources with fixed content.
    pub(super) resources: Vec<Declared<McpResourceSpec>>,
    /// Resource templates.
    pub(super) templates: Vec<McpResourceTemplateSpec>,
    /// Prompts.
    pub(super) prompts: Vec<McpPromptSpec>,
}

impl Surface {
    /// Gathers what `teams` declare.
    pub(super) fn of<'a>(teams: impl Iterator<Item = &'a McpTeam>) -> Self {
        let mut out = Surface::default();
        let (mut uris, mut templates, mut prompts) =
            (BTreeSet::new(), BTreeSet::new(), BTreeSet::new());
        for team in teams {
            let mcp = team.mcp();
            for r in mcp.resources {
                if uris.insert(r.uri.clone()) {
                    out.resources.push(Declared {
                        spec: r,
                        config: team.config.clone(),
                    });
                } else {
                    twice(&team.name, "resource", &r.uri);
                }
            }
            for t in mcp.resource_templates {
                if templates.insert(t.uri_template.clone()) {
                    out.templates.push(t);
                } else {
                    twice(&team.name, "resource template", &t.uri_template);
                }
            }
            for p in mcp.prompts {
                if prompts.insert(p.name.clone()) {
                    out.prompts.push(p);
                } else {
                    twice(&team.name, "prompt", &p.name);
                }
            }
        }
        out
    }

    /// Whether anything is declared of resources (templates included).
    pub(super) fn has_resources(&self) -> bool {
        !self.resources.is_empty() || !self.templates.is_empty()
    }
}

fn twice(team: &str, what: &str, name: &str) {
    eprintln!(
        "troupe: warning: the {what} `{name}` of `{team}` is declared by another served config \
         too; the first is served"
    );
}

/// `text` with each `{name}` replaced by its value in `values` (other
/// braces left as written).
pub(super) fn fill(text: &str, values: &dyn Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        match after.find('}') {
            Some(close) if is_name(&after[..close]) => {
                match values(&after[..close]) {
                    Some(v) => out.push_str(&v),
                    None => out.push_str(&rest[open..open + close + 2]),
                }
                rest = &after[close + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// Whether `s` reads as a placeholder's name.
pub(super) fn is_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_filled_and_json_braces_left_alone() {
        let v = |n: &str| (n == "id").then(|| "123".to_string());
        assert_eq!(fill("a/{id}/b", &v), "a/123/b");
        assert_eq!(
            fill(r#"{"id":"{id}","x":{missing}}"#, &v),
            r#"{"id":"123","x":{missing}}"#
        );
        assert_eq!(fill("{", &v), "{");
    }
}
