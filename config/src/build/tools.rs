//! An agent's tools: the built-in ones, and the tools of MCP servers
//! (started, or connected to, here — or, replaying a cassette, listed
//! from it), each waiting for approval when its entry says so, and agents
//! or workflows as tools. Through a cassette, built-in and MCP tools are
//! recorded or replayed; an agent as a tool runs (its own calls are). (`ask_user` is not among them: the agent itself answers
//! it.)

use std::sync::Arc;

use troupe_agents::{AgentTool, McpServerConfig, NeedsApproval, Tool};

use super::ctx::{Ctx, build_error};
use crate::builtin::builtin_tool;
use crate::error::ConfigError;
use crate::schema::{AgentSpec, AgentToolSpec, BuiltinTool, McpSpec, ToolSpec};
use crate::tool_memory::remembered;
use crate::tree::FieldPath;

impl Ctx<'_> {
    /// The tools of agent `agent`.
    pub(super) async fn tools(
        &mut self,
        agent: &str,
        spec: &AgentSpec,
    ) -> Result<Vec<Arc<dyn Tool>>, ConfigError> {
        let field = FieldPath::root().key("agents").key(agent).key("tools");
        self.tool_list(agent, &field, &spec.tools).await
    }

    /// The tools `tools` (written at `field`) of `agent`.
    pub(super) async fn tool_list(
        &mut self,
        agent: &str,
        field: &FieldPath,
        tools: &[ToolSpec],
    ) -> Result<Vec<Arc<dyn Tool>>, ConfigError> {
        let mut out = Vec::new();
        for (i, t) in tools.iter().enumerate() {
            match t {
                ToolSpec::Builtin(BuiltinTool::AskUser, _) => {}
                ToolSpec::Builtin(b, options) => {
                    let tool = builtin_tool(b.name()).ok_or_else(|| {
                        build_error(format!("agent `{agent}`: no built-in tool `{}`", b.name()))
                    })?;
                    let tool = remembered(tool, options.memory.as_ref());
                    let tool = approved(tool, options.approval == Some(true));
                    out.push(self.taped(agent, tool, None));
                }
                ToolSpec::Agent(a) => {
                    let tool = self.agent_tool(agent, &field.index(i), a).await?;
                    out.push(remembered(tool, a.memory.as_ref()));
                }
                ToolSpec::Mcp(m) => {
                    let field = field.index(i).key("mcp");
                    let server = m.name.as_deref().unwrap_or("mcp");
                    for tool in self.mcp_tools(agent, &field, m).await? {
                        out.push(self.taped(agent, tool, Some(server)));
                    }
                }
            }
        }
        Ok(out)
    }

    /// `tool` through the cassette, if there is one.
    fn taped(&self, agent: &str, tool: Arc<dyn Tool>, server: Option<&str>) -> Arc<dyn Tool> {
        match &self.options.cassette {
            Some(c) => c.wrap_tool(agent, tool, server),
            None => tool,
        }
    }

    /// An agent or named workflow as a tool of agent `agent` (the entry
    /// written at `field`). An agent that would call itself, through any
    /// chain of tools and workflows, is refused.
    async fn agent_tool(
        &mut self,
        agent: &str,
        field: &FieldPath,
        spec: &AgentToolSpec,
    ) -> Result<Arc<dyn Tool>, ConfigError> {
        let target = spec.target();
        if self.building_agents.iter().any(|a| a == target) {
            let kind = if spec.agent.is_some() {
                "agent"
            } else {
                "workflow"
            };
            return Err(self.invalid(
                &field.key(kind),
                format!(
                    "agent `{agent}` calls itself through its tools ({} -> {target})",
                    self.building_agents.join(" -> ")
                ),
            ));
        }
        let callee = self.participant(target).await?;
        let mut tool = AgentTool::from_arc(callee);
        if let Some(n) = &spec.name {
            tool = tool.named(n.clone());
        }
        if let Some(d) = &spec.description {
            tool = tool.described(d.clone());
        }
        if spec.shared_thread == Some(true) {
            tool = tool.shared_thread();
        }
        Ok(Arc::new(tool))
    }

    /// Connects to an MCP server (keeping the connection) and lists its
    /// tools; `field` is where it is written. When only checking, its
    /// strings are expanded but it is neither started nor connected to,
    /// and it gives no tools.
    async fn mcp_tools(
        &mut self,
        agent: &str,
        field: &FieldPath,
        m: &McpSpec,
    ) -> Result<Vec<Arc<dyn Tool>>, ConfigError> {
        let what = format!("agent `{agent}`: MCP server");
        let name = m.name.clone().unwrap_or_else(|| "mcp".into());
        let mut cfg = match (&m.command, &m.url) {
            (Some(cmd), _) => {
                let mut c = McpServerConfig::stdio(
                    name.clone(),
                    self.expand(&what, &field.key("command"), cmd)?,
                );
                for (j, a) in m.args.iter().enumerate() {
                    c = c.arg(self.expand(&what, &field.key("args").index(j), a)?);
                }
                for (k, v) in &m.env {
                    c = c.env(
                        k.clone(),
                        self.expand_secret(&what, &field.key("env").key(k.clone()), v)?,
                    );
                }
                c = c.inherit_env(m.inherit_env.iter().cloned());
                if let Some(n) = m.restarts {
                    c = c.restarts(n);
                }
                if let Some(dir) = &m.cwd {
                    c = c.current_dir(self.config.resolve_path(&self.expand(
                        &what,
                        &field.key("cwd"),
                        dir,
                    )?));
                }
                c
            }
            (None, Some(url)) => {
                let mut c = McpServerConfig::http(
                    name.clone(),
                    self.expand_secret(&what, &field.key("url"), url)?,
                );
                for (k, v) in &m.headers {
                    c = c.header(
                        k.clone(),
                        self.expand_secret(&what, &field.key("headers").key(k.clone()), v)?,
                    );
                }
                c
            }
            (None, None) => {
                return Err(build_error(format!("{what} has no command or url")));
            }
        };
        if self.options.check {
            return Ok(Vec::new());
        }
        if let Some(allow) = &m.tools {
            cfg = cfg.allow(allow.clone());
        }
        if let Some(p) = &m.prefix {
            cfg = cfg.tool_prefix(p.clone());
        }
        if let Some(t) = &m.timeout {
            cfg = cfg.timeout(t.duration);
        }
        if let Some(t) = &m.startup_timeout {
            cfg = cfg.startup_timeout(t.duration);
        }
        cfg = cfg.sampling(m.sampling);
        let tools = self.mcp_connect(&what, &name, agent, m, cfg).await?;
        if let Some(crate::schema::McpApproval::Tools(listed)) = &m.approval
            && let Some(missing) = listed
                .iter()
                .find(|l| !tools.iter().any(|(r, _)| r == l.as_str()))
        {
            let has: Vec<&str> = tools.iter().map(|(r, _)| r.as_str()).collect();
            return Err(build_error(format!(
                "{what} `{name}`: `approval` names `{missing}`, which the server does not offer (it has: {})",
                has.join(", ")
            )));
        }
        Ok(tools
            .into_iter()
            .map(|(remote, t)| {
                let asks = m.approval.as_ref().is_some_and(|a| a.covers(&remote));
                approved(t, asks)
            })
            .collect())
    }
}

/// `tool`, waiting for the user's approval before each call when `asks`.
fn approved(tool: Arc<dyn Tool>, asks: bool) -> Arc<dyn Tool> {
    if asks {
        Arc::new(NeedsApproval::new(tool))
    } else {
        tool
    }
}
