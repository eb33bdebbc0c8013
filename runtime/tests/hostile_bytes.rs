//! Bytes that pass their checksum yet lie about their lengths (a damaged
//! or hostile checkpoint, a peer's message): decoding them is an error
//! that names the checkpoint, never an allocation of what a few bytes
//! claim. Found by the `checkpoint_decode` fuzz target: 16 bytes whose
//! length prefix claimed a terabyte aborted the process.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;

use troupe_runtime::store::{Checkpoint, CheckpointStore, MemoryStore, legacy_checksum};
use troupe_runtime::{FnAgent, Graph, Message, RunContext, StopCondition, Thread, Workflow, codec};

/// The payload the fuzzer found (a format 4 checkpoint, checked by its
/// legacy checksum).
const CLAIMS_A_TERABYTE: [u8; 16] = [8, 0, 253, 0, 0, 64, 0, 255, 0, 0, 0, 0, 0, 123, 0, 0];

/// Two function agents in a ring for four turns, checkpointed into
/// `store` when there is one.
fn ring(store: Option<Arc<MemoryStore>>) -> Workflow {
    let agent = |name: &'static str| FnAgent::sync(name, move |_: &Thread| Ok(name));
    let graph = Graph::builder()
        .add_agent(agent("a"))
        .add_agent(agent("b"))
        .add_edge("a", "b")
        .add_edge("b", "a")
        .start("a")
        .loop_limit(10)
        .build()
        .unwrap();
    let mut b = Workflow::builder()
        .graph(graph)
        .stop_condition(StopCondition::max_turns(4));
    if let Some(store) = store {
        b = b.checkpoint_store(store);
    }
    b.build().unwrap()
}

/// The ring's topology hash, from a real checkpoint of it.
async fn topology() -> u64 {
    let store = Arc::new(MemoryStore::new());
    ring(Some(store.clone()))
        .run_task("go", &RunContext::new().with_run_id("seed"))
        .await
        .unwrap();
    store.latest("seed").await.unwrap().unwrap().topology_hash
}

#[tokio::test]
async fn a_checkpoint_whose_lengths_claim_a_terabyte_resumes_to_an_error() {
    let topology = topology().await;
    let store = MemoryStore::new();
    let mut cp = Checkpoint::new("r", None, 1, topology, CLAIMS_A_TERABYTE.to_vec());
    cp.format_version = 4;
    cp.checksum = legacy_checksum(&cp.payload);
    store.save(&cp).await.unwrap();

    let err = ring(None)
        .run_from_checkpoint(&store, "r", None, &RunContext::new())
        .await
        .unwrap_err();
    let text = format!("{err:#}");
    assert!(text.contains(&cp.id.to_string()), "{text}");

    // Format 5: the same bytes behind a whole checkpoint's tag.
    let mut payload = vec![b'F'];
    payload.extend_from_slice(&CLAIMS_A_TERABYTE);
    let cp = Checkpoint::new("r5", None, 1, topology, payload);
    store.save(&cp).await.unwrap();
    let err = ring(None)
        .run_from_checkpoint(&store, "r5", None, &RunContext::new())
        .await
        .unwrap_err();
    assert!(format!("{err:#}").contains(&cp.id.to_string()), "{err:#}");
}

#[test]
fn a_length_prefix_past_the_input_is_refused_before_allocating() {
    // A message whose source is said to be 2^40 bytes long: a varint
    // marker (253 = u64 follows) and the length, then nothing.
    let mut bytes = vec![253];
    bytes.extend_from_slice(&(1u64 << 40).to_le_bytes());
    let err = codec::decode::<Message>(&bytes).unwrap_err();
    assert!(err.to_string().contains("cannot decode"), "{err}");
    let err = codec::decode::<Thread>(&CLAIMS_A_TERABYTE).unwrap_err();
    assert!(err.to_string().contains("cannot decode"), "{err}");

    // What a valid encoding holds still decodes, large strings included.
    let big = Message::user("x".repeat(1 << 20));
    let back: Message = codec::decode(&codec::encode(&big).unwrap()).unwrap();
    assert_eq!(back, big);
}
