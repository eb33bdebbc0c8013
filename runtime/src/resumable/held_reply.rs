//! [`HeldReply`]: the reply of a turn that finished in a superstep still
//! under way, as a checkpoint keeps it until the superstep's barrier — so
//! that a run resumed from that checkpoint applies it there instead of
//! running the turn again.

use serde::{Deserialize, Serialize};

use super::request::InputRequest;
use crate::message::Message;
use crate::state::StateDelta;

/// A finished turn's reply, held for its superstep's barrier: every part
/// of a [`Reply`](crate::Reply), under the node's name (the conversions
/// both ways are the run's: `run/held.rs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct HeldReply {
    /// The node whose turn it is.
    pub(crate) node: String,
    /// [`Reply::messages`](crate::Reply::messages).
    pub(crate) messages: Vec<Message>,
    /// [`Reply::thread`](crate::Reply::thread), encoded (`codec`): a
    /// thread holds its scheduler state, which holds held replies, so the
    /// thread is kept as bytes here rather than as a type of its file.
    pub(crate) thread: Option<Vec<u8>>,
    /// [`Reply::next`](crate::Reply::next).
    pub(crate) next: Option<Vec<String>>,
    /// [`Reply::request`](crate::Reply::request).
    pub(crate) request: Option<String>,
    /// [`Reply::private`](crate::Reply::private).
    pub(crate) private: Vec<Message>,
    /// [`Reply::inner_requests`](crate::Reply::inner_requests).
    pub(crate) inner_requests: Vec<InputRequest>,
    /// [`Reply::state`](crate::Reply::state).
    pub(crate) state: StateDelta,
}
