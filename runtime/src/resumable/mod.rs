//! What a run carries across a checkpoint, as plain data: the scheduler's
//! part of a thread ([`SchedulerState`]), the replies it holds for a
//! superstep's barrier, the questions it waits on ([`InputRequest`]) and
//! how it ended ([`RunStatus`]).
//!
//! These types sit below both `workflow/` (which runs them) and
//! `checkpoint/` (which writes and reads them), so neither imports the
//! other's vocabulary upward, and the core files (`thread.rs`, `agent.rs`,
//! `telemetry.rs`, the errors) name them without importing `workflow/`.

pub(crate) mod held_reply;
pub(crate) mod request;
pub(crate) mod scheduler_state;
pub(crate) mod status;

pub use request::InputRequest;
pub use scheduler_state::{SchedulerState, SchedulerStateError};
pub use status::RunStatus;
