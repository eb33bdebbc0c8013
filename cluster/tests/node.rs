//! A node in a process of its own: hosting, calling its agent through a
//! [`RemoteAgent`], refusals, and what a caller sees once it is gone.

use std::sync::Arc;
use std::time::Duration;

use troupe_cluster::{ClusterError, NODE_METADATA, Node, RemoteAgent};
use troupe_runtime::{Agent, ErrorKind, FnAgent, Message, RunContext, Thread};

// One node per process: this test binary starts one node, once.
#[tokio::test]
async fn a_node_hosts_an_agent_its_own_process_can_call() {
    assert!(matches!(
        Node::builder().name("solo").start().await,
        Err(ClusterError::NoCookie(_))
    ));
    assert!(matches!(
        Node::builder().name("a@b").cookie("c").start().await,
        Err(ClusterError::InvalidName { .. })
    ));
    let node = Node::builder()
        .name("solo")
        .cookie("secret")
        .host(FnAgent::sync("echo", |t: &Thread| {
            Ok(format!(
                "echo: {}",
                t.last()
                    .map(|m| m.text_content().into_owned())
                    .unwrap_or_default()
            ))
        }))
        .start()
        .await
        .unwrap();
    assert_ne!(node.addr().port(), 0);
    assert!(matches!(
        Node::builder().name("two").cookie("c").start().await,
        Err(ClusterError::AlreadyRunning)
    ));
    assert!(
        node.host(FnAgent::sync("echo", |_: &Thread| Ok("x")))
            .await
            .is_err()
    );
    assert_eq!(
        node.agents(),
        vec![("echo".to_string(), vec!["solo".to_string()])]
    );

    let (ctx, mut events) = RunContext::stream();
    let ctx = ctx.child("team").child("echo");
    let remote = RemoteAgent::parse("echo@solo").unwrap();
    let thread = Arc::new(Thread::from_messages([Message::user("hi")]));
    let reply = remote.run(thread, ctx).await.unwrap();
    assert_eq!(reply.messages()[0].text_content(), "echo: hi");
    assert_eq!(
        reply.messages()[0]
            .metadata
            .get(NODE_METADATA)
            .map(String::as_str),
        Some("solo")
    );
    drop(events.drain_ready());

    // A connection to a port where nothing listens is refused plainly.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let err = node
        .connect(&format!("127.0.0.1:{port}"))
        .await
        .unwrap_err();
    assert!(matches!(err, ClusterError::Connect { .. }), "{err}");

    node.shutdown().await;
    let err = remote
        .discovery_timeout(Duration::from_millis(50))
        .run(Arc::new(Thread::new()), RunContext::new())
        .await
        .unwrap_err();
    assert_eq!(err.kind(), ErrorKind::Node);
}
