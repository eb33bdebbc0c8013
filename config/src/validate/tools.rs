//! An agent's `tools:`: each built-in tool once, `approval` where it
//! makes sense, MCP servers stdio (`command`) or HTTP (`url`) with the
//! options of their kind; and scripted calls of `ask_user` that the agent
//! can make, with a question.

use std::collections::BTreeSet;

use super::checker::Checker;
use crate::schema::{BuiltinTool, McpApproval, McpSpec, ReplyForm, ReplySpec, ToolSpec};
use crate::tree::FieldPath;

/// Checks the tools of the agent at `base`.
pub(super) fn check_tools(c: &mut Checker<'_>, base: &FieldPath, tools: &[ToolSpec]) {
    let mut seen = BTreeSet::new();
    for (i, tool) in tools.iter().enumerate() {
        let path = base.key("tools").index(i);
        match tool {
            ToolSpec::Mcp(m) => check_mcp(c, &path.key("mcp"), m),
            ToolSpec::Agent(_) => {}
            ToolSpec::Builtin(b, options) => {
                if !seen.insert(b.name()) {
                    c.value_error(
                        &path,
                        format!("`{}` is listed twice", b.name()),
                        Some("each tool once".into()),
                    );
                }
                if *b == BuiltinTool::AskUser && options.approval == Some(true) {
                    c.value_error(
                        &path.key("ask_user").key("approval"),
                        "`ask_user` asks the user already: approving a question makes no sense",
                        Some("no `approval` on `ask_user`".into()),
                    );
                }
            }
        }
    }
}

/// The scripted replies at `path`: every `ask_user` call carries a
/// question, and (with `tools`, an agent's own script) the agent has the
/// tool.
pub(super) fn check_script(
    c: &mut Checker<'_>,
    path: &FieldPath,
    replies: &[ReplySpec],
    tools: Option<&[ToolSpec]>,
) {
    let asks = tools.is_none_or(|tools| {
        tools
            .iter()
            .any(|t| matches!(t, ToolSpec::Builtin(BuiltinTool::AskUser, _)))
    });
    for (i, reply) in replies.iter().enumerate() {
        let calls: Vec<(FieldPath, &crate::schema::ToolCallSpec)> = match &reply.0 {
            ReplyForm::ToolCall(call) => vec![(path.index(i).key("tool_call"), call)],
            ReplyForm::ToolCalls(calls) => calls
                .iter()
                .enumerate()
                .map(|(j, call)| (path.index(i).key("tool_calls").index(j), call))
                .collect(),
            _ => Vec::new(),
        };
        for (at, call) in calls {
            if call.name != BuiltinTool::AskUser.name() {
                continue;
            }
            if !asks {
                c.value_error(
                    &at.key("name"),
                    "the script calls `ask_user`, which this agent does not have",
                    Some("`ask_user` in the agent's `tools`".into()),
                );
            }
            let question = call
                .arguments
                .as_ref()
                .and_then(|a| a.as_object())
                .filter(|a| a.len() == 1)
                .and_then(|a| a.get("question"))
                .and_then(|q| q.as_str());
            if question.is_none_or(|q| q.trim().is_empty()) {
                c.value_error(
                    &at.key("arguments"),
                    "`ask_user` takes one argument, `question`, a non-empty text",
                    Some("`arguments: {question: …}`".into()),
                );
            }
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
    if m.command.is_none()
        && (!m.args.is_empty()
            || !m.env.is_empty()
            || !m.inherit_env.is_empty()
            || m.restarts.is_some())
    {
        c.error(
            path,
            "`args`, `env`, `inherit_env` and `restarts` are for stdio servers (`command`)",
            None,
        );
    }
    for (i, name) in m.inherit_env.iter().enumerate() {
        let valid = !name.is_empty()
            && name
                .chars()
                .all(|ch| ch.is_ascii_alphanumeric() || ch == '_');
        if !valid {
            c.value_error(
                &path.key("inherit_env").index(i),
                format!("`{name}` is not an environment variable name"),
                Some("letters, digits and `_`".into()),
            );
        }
    }
    if m.tools.as_ref().is_some_and(Vec::is_empty) {
        c.error(
            &path.key("tools"),
            "an empty allow-list exposes no tool",
            Some("tool names, or no `tools:`".into()),
        );
    }
    if let Some(McpApproval::Tools(listed)) = &m.approval {
        if listed.is_empty() {
            c.value_error(
                &path.key("approval"),
                "an empty list asks approval for no tool",
                Some("`true` (every tool), or the server's tool names".into()),
            );
        }
        if let Some(allowed) = &m.tools {
            for (i, name) in listed.iter().enumerate() {
                if !allowed.contains(name) {
                    c.value_error(
                        &path.key("approval").index(i),
                        format!(
                            "`{name}` is not a tool of this server: `tools` exposes only {}",
                            allowed
                                .iter()
                                .map(|t| format!("`{t}`"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        ),
                        Some("names from `tools`".into()),
                    );
                }
            }
        }
    }
}
