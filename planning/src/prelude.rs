//! The names a program with a planning agent uses, for a glob import:
//!
//! ```
//! use troupe_planning::prelude::*;
//!
//! let _builder = PlanningAgent::builder("planner");
//! ```

pub use crate::{CompileOptions, Plan, PlanError, PlanStep, PlanningAgent};
