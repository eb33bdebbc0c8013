//! An MCP server's tools: from the server (started, or connected to),
//! its list kept when recording a cassette; or, replaying one, from the
//! cassette alone — no process started, no connection made.

use std::sync::Arc;

use troupe_agents::model::{McpServerEntry, McpToolEntry};
use troupe_agents::{McpClient, McpServerConfig, Tool};

use super::ctx::{Ctx, build_error};
use crate::error::ConfigError;
use crate::schema::McpSpec;

impl Ctx<'_> {
    /// The tools of server `name` (written as `m`, configured as `cfg`)
    /// of agent `agent`, each with its name on the server; `what` names
    /// the server's owner in errors.
    pub(super) async fn mcp_connect(
        &mut self,
        what: &str,
        name: &str,
        agent: &str,
        m: &McpSpec,
        cfg: McpServerConfig,
    ) -> Result<Vec<(String, Arc<dyn Tool>)>, ConfigError> {
        let cassette = self.options.cassette.clone();
        if let Some(c) = cassette.as_ref().filter(|c| c.replays()) {
            let Some(tools) = c.mcp_server(agent, name) else {
                return Err(build_error(format!(
                    "{what} `{name}` is not in the cassette '{}' (it holds: [{}]); record the run again",
                    c.dir().display(),
                    c.mcp_servers().join(", ")
                )));
            };
            return Ok(tools
                .into_iter()
                .map(|t| (t.remote_name().to_string(), Arc::new(t) as Arc<dyn Tool>))
                .collect());
        }
        let client = McpClient::connect(cfg)
            .await
            .map_err(|e| build_error(format!("{what} `{name}`: {e}")))?;
        let tools = client
            .tools()
            .await
            .map_err(|e| build_error(format!("{what} `{name}`: {e}")))?;
        self.mcp.push(client);
        if let Some(c) = &cassette {
            c.record_mcp_server(McpServerEntry {
                agent: agent.to_string(),
                server: name.to_string(),
                transport: transport(m),
                tools: tools
                    .iter()
                    .map(|t| McpToolEntry {
                        remote_name: t.remote_name().to_string(),
                        definition: t.definition().clone(),
                    })
                    .collect(),
            })
            .map_err(|e| build_error(format!("{what} `{name}`: {e}")))?;
        }
        Ok(tools
            .into_iter()
            .map(|t| (t.remote_name().to_string(), Arc::new(t) as Arc<dyn Tool>))
            .collect())
    }
}

/// How server `m` is reached, as written (its `${VAR}`s unexpanded), the
/// values of its environment and headers left out.
fn transport(m: &McpSpec) -> serde_json::Value {
    let hidden = |keys: Vec<&String>| -> serde_json::Map<String, serde_json::Value> {
        keys.into_iter()
            .map(|k| (k.clone(), serde_json::Value::from("[REDACTED]")))
            .collect()
    };
    match (&m.command, &m.url) {
        (Some(cmd), _) => serde_json::json!({
            "command": cmd,
            "args": m.args,
            "env": hidden(m.env.keys().collect()),
        }),
        (None, url) => serde_json::json!({
            "url": url,
            "headers": hidden(m.headers.keys().collect()),
        }),
    }
}
