//! `troupe mcp FILE|DIR`: the team (or every config of a directory) as an
//! MCP server on stdio, each team one tool (`src/mcp/`). Logs and
//! warnings go to stderr; stdout carries the protocol only.

use std::path::PathBuf;

use rmcp::ServiceExt;

use crate::mcp::{McpTeam, TeamServer};
use crate::serve::team::load_all;

/// `troupe mcp`'s arguments.
#[derive(clap::Args, Clone)]
pub(crate) struct McpArgs {
    /// A config file, or a directory of them (each team one tool, named
    /// after the team).
    pub(crate) path: PathBuf,
    /// Runs every `provider: auto` model scripted, even with an endpoint set.
    #[arg(long)]
    pub(crate) offline: bool,
}

/// Serves the teams on stdio until the client closes it; the exit code.
pub(crate) async fn mcp(args: McpArgs) -> u8 {
    let teams = match load_all(&args.path, args.offline, None).await {
        Ok(t) => t,
        Err(e) => {
            eprintln!("{}", e.message.replacen("troupe serve", "troupe mcp", 1));
            return e.code;
        }
    };
    let tools = teams
        .values()
        .map(|t| McpTeam {
            name: t.name.clone(),
            description: t.config.spec().description.clone(),
            workflow: t.built.workflow.clone(),
        })
        .collect();
    let code = match TeamServer::new(tools, None)
        .serve(rmcp::transport::stdio())
        .await
    {
        Ok(service) => {
            let _ = service.waiting().await;
            super::OK
        }
        Err(e) => {
            eprintln!("troupe mcp: {e}");
            super::FAILED
        }
    };
    for t in teams.values() {
        t.built.close().await;
    }
    // A pending stdin read would hold the runtime's shutdown: leave now.
    std::process::exit(i32::from(code))
}
