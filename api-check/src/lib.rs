//! Nothing here: this package holds the public-API snapshot test of the
//! workspace's library crates (`tests/public_api.rs`), the snapshots it
//! compares (`snapshots/*.txt`) and the rules that tie them to
//! `CHANGELOG.md`. See `tests/public_api.rs` for how to update them.
