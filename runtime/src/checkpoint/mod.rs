//! The checkpoint format, in one place: how a run's state becomes the
//! bytes a store keeps, and how those bytes become a run again.
//!
//! - `codec`: the encoding under everything (serde + bincode, with a
//!   limit and a version, [`codec::FORMAT_VERSION`]), and `codec::raw`,
//!   the few hand-written writers the hot path uses;
//! - `record`: a [`Checkpoint`](record::Checkpoint) as every store keeps
//!   it — id, parent, version, checksum, and a payload whole or a delta
//!   (its first byte says which);
//! - `log_record`: a run's checkpoint log (the file store's, format 5
//!   on) as bytes: records framed by length and checksum;
//! - `delta`: a chained payload (format 5 on): thread operations and the
//!   small state, and [`Folded`](delta::Folded), a chain folded into one
//!   state; message ids written as runs from format 6 on; `fold`: a
//!   chain of records folded into one whole record;
//! - writing: `snapshot_delta` writes a checkpoint as a delta against the
//!   last one, `snapshot_refs` writes its parts from borrowed views of the
//!   run's state (by hand, byte for byte what serde writes;
//!   `snapshot_oracle` pins that in tests);
//! - reading: `snapshot_value` is what a checkpoint holds of a run,
//!   `snapshot_restore` reads it back from a folded chain;
//! - `scheduler_body`: a scheduler state's layout, by its version (the
//!   type is `resumable::scheduler_state`'s);
//! - legacy formats: `files`, a checkpoint file of format 4 and before
//!   (read only) and a conversation's thread file; whole payloads of
//!   format 4 (`record::legacy_checksum`), format 5's whole message ids
//!   (`delta`).
//!
//! The stores (`store/`) keep [`Checkpoint`](record::Checkpoint)s and
//! fold delta chains with [`Folded`](delta::Folded); the workflow
//! (`workflow/`) decides when to write and checks a checkpoint against
//! itself before resuming. Nothing here imports `workflow/`: what a run
//! carries across a checkpoint is in `resumable/`.
//!
//! Outside this crate only the record and the codec are public (through
//! [`crate::store`] and [`crate::codec`]); the rest of the format is
//! public only with the `fuzzing` feature, for the fuzz targets.

pub mod codec;
pub mod delta;
pub(crate) mod files;
pub(crate) mod fold;
pub(crate) mod log_record;
pub mod record;
mod scheduler_body;
pub(crate) mod snapshot_delta;
#[cfg(test)]
mod snapshot_oracle;
pub(crate) mod snapshot_refs;
pub(crate) mod snapshot_restore;
pub(crate) mod snapshot_value;
pub(crate) mod thread_record;

#[cfg(feature = "fuzzing")]
pub use delta::{ChainPayload, Folded, ID_RUNS_VERSION, ThreadOp, ThreadPath};
#[cfg(feature = "fuzzing")]
pub use record::{FIRST_CHAINED_VERSION, legacy_checksum};
