//! The team shapes, for a glob import beside the runtime's and the
//! agents' preludes:
//!
//! ```
//! use troupe_presets::prelude::*;
//!
//! let _builder = RoundRobinGroupChat::builder();
//! ```

pub use crate::{
    Magentic, MapReduce, PresetError, RoundRobinGroupChat, SelectorGroupChat, Sequential, Swarm,
};
