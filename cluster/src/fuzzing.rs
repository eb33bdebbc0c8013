//! The entry point for the fuzz targets in `fuzz/` (the `fuzzing`
//! feature; not a public API): any bytes a peer sends, read as each
//! payload of the wire format, give a value or a
//! refusal, never a panic; a reply read off the wire turns into the
//! runtime's reply or error as a caller's node would turn it.

use crate::wire::{
    CallReply, CallRequest, CancelRequest, Outcome, StatusReply, StatusRequest, unpack,
};

/// Reads `data` as every payload of the wire format.
pub fn wire(data: &[u8]) {
    if let Ok(request) = unpack::<CallRequest>(data) {
        let _ = (request.thread.len(), request.path.len());
    }
    let _ = unpack::<StatusRequest>(data);
    let _ = unpack::<StatusReply>(data);
    let _ = unpack::<CancelRequest>(data);
    if let Ok(reply) = unpack::<CallReply>(data) {
        match reply.outcome {
            Outcome::Done(reply) => {
                let reply: troupe_runtime::Reply = (*reply).into();
                let _ = reply.messages().len();
            }
            Outcome::Failed(e) => {
                let _ = e.into_agent("fuzz").to_string();
            }
            Outcome::Refused(text) => {
                let _ = text.len();
            }
        }
    }
}
