//! One remote call's machinery: how patiently it waits ([`CallOptions`]),
//! the identity of a turn, heartbeats, events brought back, and the cancel
//! sent when nobody waits any more.

use std::hash::{Hash, Hasher};
use std::time::Duration;

use ractor::ActorRef;
use ractor::rpc::CallResult;
use troupe_runtime::{Event, RunContext, Thread};

use crate::wire::{CancelRequest, HostMsg, StatusReply, StatusRequest, pack, unpack};

/// How patiently a remote turn waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallOptions {
    /// A node that answers nothing (no reply, no heartbeat) for this long
    /// is taken for lost: the step fails with
    /// an [`AgentError`](troupe_runtime::AgentError) of kind [`ErrorKind::Node`](troupe_runtime::ErrorKind::Node). Default 5 s.
    pub node_timeout: Duration,
    /// How often the caller asks the host about a turn under way (and
    /// collects its events). Default 1 s.
    pub heartbeat: Duration,
    /// A turn that takes longer fails with
    /// an error of kind [`ErrorKind::Timeout`](troupe_runtime::ErrorKind::Timeout), however alive
    /// its node. Default none: model calls can be slow.
    pub turn_timeout: Option<Duration>,
    /// How long a turn waits for a replica to show up (a node starting or
    /// reconnecting) before failing. Default 5 s.
    pub discovery: Duration,
    /// Further attempts on other replicas after the node of an attempt is
    /// lost, within the same turn. Default 0: the step's retry policy
    /// decides.
    pub failover: u32,
}

impl Default for CallOptions {
    fn default() -> Self {
        CallOptions {
            node_timeout: Duration::from_secs(5),
            heartbeat: Duration::from_secs(1),
            turn_timeout: None,
            discovery: Duration::from_secs(5),
            failover: 0,
        }
    }
}

/// How long a node that failed a call is avoided.
pub(crate) fn suspect_time(opts: &CallOptions) -> Duration {
    (opts.node_timeout * 3).max(Duration::from_secs(10))
}

/// The identity of a turn: its agent, the caller's path and run, and the
/// thread's messages. A retry of the same turn has the same key; the next
/// turn (a longer thread) another.
pub(crate) fn request_key(agent: &str, ctx: &RunContext, thread: &Thread) -> u64 {
    // SipHash with fixed keys: the same on every node of a cluster.
    let mut h = std::hash::DefaultHasher::new();
    agent.hash(&mut h);
    ctx.path().hash(&mut h);
    ctx.run_id().map(|r| &**r).hash(&mut h);
    thread.len().hash(&mut h);
    for m in thread.messages() {
        m.id.hash(&mut h);
    }
    thread.children().len().hash(&mut h);
    h.finish()
}

/// Asks a host about a turn; `None` if it did not answer in time.
pub(crate) async fn status(
    actor: ActorRef<HostMsg>,
    key: u64,
    drain_events: bool,
    wait: Duration,
) -> Option<StatusReply> {
    let bytes = pack(&StatusRequest { key, drain_events }).ok()?;
    match actor
        .call(|port| HostMsg::Status(bytes, port), Some(wait))
        .await
    {
        Ok(CallResult::Success(b)) => unpack(&b).ok(),
        _ => None,
    }
}

/// Replays on `ctx` the events a host collected during a turn.
pub(crate) fn emit_events(ctx: &RunContext, events: &[String]) {
    if !ctx.events_enabled() {
        return;
    }
    for json in events {
        // An event this build cannot read (a newer node's) is skipped: events
        // are reports, not part of the run's state.
        if let Ok(e) = serde_json::from_str::<Event>(json) {
            ctx.emit(e);
        }
    }
}

/// Tells the host to stop a turn nobody waits for any more.
pub(crate) struct CancelOnDrop {
    pub(crate) actor: Option<ActorRef<HostMsg>>,
    pub(crate) key: u64,
    pub(crate) attempt: u128,
}

impl CancelOnDrop {
    pub(crate) fn disarm(&mut self) {
        self.actor = None;
    }
}

impl Drop for CancelOnDrop {
    fn drop(&mut self) {
        if let Some(actor) = self.actor.take()
            && let Ok(bytes) = pack(&CancelRequest {
                key: self.key,
                attempt: self.attempt,
            })
        {
            // Best effort: a host that is gone has nothing to cancel.
            let _ = actor.cast(HostMsg::Cancel(bytes));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use troupe_runtime::Message;

    #[test]
    fn a_retry_of_a_turn_has_its_key_and_the_next_turn_another() {
        let ctx = RunContext::new().child("team").child("w");
        let mut t = Thread::from_messages([Message::user("a")]);
        let k1 = request_key("w", &ctx, &t);
        assert_eq!(k1, request_key("w", &ctx, &t.clone()));
        assert_ne!(k1, request_key("w", &RunContext::new().child("x"), &t));
        t.push(Message::user("b"));
        assert_ne!(k1, request_key("w", &ctx, &t));
    }
}
