//! An agent's `tools:`: MCP servers are stdio (`command`) or HTTP (`url`),
//! with the options of their kind.

use super::checker::Checker;
use crate::schema::{McpSpec, ToolSpec};
use crate::tree::FieldPath;

/// Checks the tools of the agent at `base`.
pub(super) fn check_tools(c: &mut Checker<'_>, base: &FieldPath, tools: &[ToolSpec]) {
    for (i, tool) in tools.iter().enumerate() {
        if let ToolSpec::Mcp(m) = tool {
            check_mcp(c, &base.key("tools").index(i).key("mcp"), m);
        }
    }
}

fn check_mcp(c: &mut Checker<'_>, path: &FieldPath, m: &McpSpec) {
    match (&m.command, &m.url) {
        (Some(_), Some(_)) => c.error(
            &path.key("url"),
            "an MCP server has either `command` (stdio) or `url` (HTTP), not both",
            None,
        ),
        (None, None) => c.error(
            path,
            "an MCP server needs `command` (stdio) or `url` (HTTP)",
            Some("`command:` or `url:`".into()),
        ),
        _ => {}
    }
    if m.url.is_none() && !m.headers.is_empty() {
        c.error(
            &path.key("headers"),
            "`headers` are for HTTP servers (`url`)",
            None,
        );
    }
    if m.command.is_none() && (!m.args.is_empty() || !m.env.is_empty()) {
        c.error(
            path,
            "`args` and `env` are for stdio servers (`command`)",
            None,
        );
    }
    if m.tools.as_ref().is_some_and(Vec::is_empty) {
        c.error(
            &path.key("tools"),
            "an empty allow-list exposes no tool",
            Some("tool names, or no `tools:`".into()),
        );
    }
}
