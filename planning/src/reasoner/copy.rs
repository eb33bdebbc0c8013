//! One copy of the reasoner (the agent itself, or a branched copy) and
//! what it starts from: the types `drive.rs` runs and `batch.rs` branches,
//! below both.

use std::sync::Arc;

use troupe_agents::placeholders::TaskStateItem;

use super::Core;
use super::actions::Action;
use super::answer::ActionCall;

/// What a branched copy starts from: the states and conversation of the
/// agent it branched from (empty for a fresh copy).
#[derive(Debug, Clone, Default)]
pub(crate) struct Seed {
    pub(crate) inherit: bool,
    pub(crate) states: Vec<TaskStateItem>,
    pub(crate) conversation: Vec<String>,
}

/// A branched copy's action: run first, its result the copy's input.
pub(crate) struct BranchAction<'a> {
    pub(crate) id: &'a str,
    pub(crate) call: &'a ActionCall,
    pub(crate) action: &'a Action,
}

/// One copy of the reasoner (the agent itself at depth 0).
pub(crate) struct Loop<'a> {
    pub(crate) core: &'a Arc<Core>,
    pub(crate) depth: u32,
    /// The branch's path (`B`, `D/X`); empty for the agent itself.
    pub(crate) path: String,
    pub(crate) seed: Seed,
}
