//! The checkpoint-format internals the PostgreSQL store uses, in one
//! place: what chains a delta to its base, how a thread is encoded, the
//! times as integers. When the checkpoint-format code moves, only these
//! imports change.

pub(super) use super::super::chain::{keep_bases_before_delete, keep_bases_before_prune};
pub(super) use super::super::unix_time::{from_unix, to_unix};
pub(super) use crate::checkpoint::record::{DELTA_TAG, FIRST_CHAINED_VERSION};
pub(super) use crate::checkpoint::thread_record::{decode_thread, encode_thread};
