//! What every session of the MCP server shares: the teams by tool name, the
//! runs waiting for a stateless client's answers, the declared resources
//! and prompts, and the run limit. Its own
//! file so the handler (`handler.rs`) and a call (`call.rs`) both read it
//! without importing each other.

use std::collections::BTreeMap;

use super::record::Records;
use super::surface::Surface;
use super::waiting::Waiting;
use super::{Admit, McpTeam};

/// What every session of the server shares.
pub(super) struct Inner {
    /// The teams by tool name (the team's name in MCP's characters).
    pub(super) teams: BTreeMap<String, McpTeam>,
    /// The resources, templates and prompts the configs declare.
    pub(super) surface: Surface,
    /// Runs waiting for a stateless client's answers.
    pub(super) waiting: Waiting,
    /// The host's records of the runs, if it keeps them.
    pub(super) records: Records,
    /// The run limit, if the host has one.
    pub(super) admit: Option<Admit>,
}
