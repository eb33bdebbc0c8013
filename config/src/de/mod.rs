//! A serde `Deserializer` over the position-aware tree.
//!
//! It differs from a plain YAML deserializer in three ways that make
//! config errors useful:
//!
//! - every error carries the position and field path of the node it is
//!   about;
//! - unknown fields of a struct are recorded (with the fields that were
//!   expected) and skipped, so one pass finds all of them;
//! - [`deserialize_all`] recovers from the other errors — a wrong type, a
//!   bad duration, a missing field — by recording the error, removing the
//!   offending node and trying again, so all of them are reported at once
//!   too, not only the first.

mod error;
mod node;
mod recover;

pub(crate) use recover::deserialize_all;
