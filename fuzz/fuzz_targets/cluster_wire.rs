//! Any bytes a peer node sends, read as each payload of the cluster wire
//! format (turn, reply, status, cancel), give a value or a refusal, never
//! a panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    troupe_cluster::fuzzing::wire(data);
});
