//! [`BuildOptions`]: how to build.

use std::path::PathBuf;

/// How to build.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Run every `auto` model scripted, even when an endpoint is configured.
    pub offline: bool,
    /// What `${TROUPE_EXE}` expands to (default: `$TROUPE_EXE`, else the
    /// running executable).
    pub troupe_exe: Option<PathBuf>,
    /// Build only to check the config (`troupe validate`,
    /// [`Config::check`](crate::Config::check)): MCP servers are neither
    /// started nor connected to (their strings are still expanded), the
    /// checkpoint store is not opened (a memory store stands in), and
    /// router warnings are collected in [`Built::warnings`](crate::Built::warnings).
    pub check: bool,
    /// Every chat agent's model and tool calls, MCP servers and remote
    /// (A2A) agents go through this cassette (recorded, or replayed
    /// without calling a model, running a tool, starting or connecting to
    /// an MCP server or reaching a remote agent), keyed by agent path.
    pub cassette: Option<std::sync::Arc<troupe_agents::model::Cassette>>,
}
