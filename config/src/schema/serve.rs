//! `serve:`: how `troupe serve` holds its connections and what it does
//! with a message to a session whose run is still going. Flags on the
//! command line win over these.

use schemars::JsonSchema;
use serde::Deserialize;

use super::mcp_serve::McpServeSpec;
use crate::duration::HumanDuration;

/// `troupe serve`'s settings for this team (its command-line flags win).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ServeSpec {
    /// The largest request body accepted, in bytes (larger: 413, refused
    /// from its `Content-Length` before it is read). Default 1048576.
    #[serde(default)]
    pub max_body: Option<u64>,
    /// How many runs may be under way at once (more: 429). Default 64.
    #[serde(default)]
    pub max_runs: Option<u64>,
    /// How many connections may be open at once; one more is answered 503
    /// and closed. Default 512.
    #[serde(default)]
    pub max_connections: Option<u64>,
    /// How long a request's head (request line and headers) may take to
    /// arrive. Default `10s`.
    #[serde(default)]
    pub header_timeout: Option<HumanDuration>,
    /// How long a request's body may take to arrive (more: 408). Default
    /// `30s`.
    #[serde(default)]
    pub body_timeout: Option<HumanDuration>,
    /// How long a keep-alive connection may wait idle for its next request.
    /// Default `60s`.
    #[serde(default)]
    pub idle_timeout: Option<HumanDuration>,
    /// What a message to a session whose run is still going does (a
    /// request may say otherwise). Default `enqueue`.
    #[serde(default)]
    pub double_texting: Option<DoubleTexting>,
    /// What `troupe mcp` and `/mcp` offer for this team beside the team as
    /// a tool: the tool's input and result, resources, prompts.
    #[serde(default)]
    pub mcp: Option<McpServeSpec>,
}

/// What a message to a session whose run is still going does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DoubleTexting {
    /// Refused with 409; the run under way goes on.
    Reject,
    /// Waits for the run under way to end, then runs.
    Enqueue,
    /// Stops the run under way gracefully (its turns under way finish and
    /// what it did is kept in the session), then runs.
    Interrupt,
    /// Cancels the run under way and drops what it did (the session is as
    /// before it), then runs.
    Rollback,
}

impl DoubleTexting {
    /// As configs and requests write it.
    pub fn as_str(self) -> &'static str {
        match self {
            DoubleTexting::Reject => "reject",
            DoubleTexting::Enqueue => "enqueue",
            DoubleTexting::Interrupt => "interrupt",
            DoubleTexting::Rollback => "rollback",
        }
    }
}
