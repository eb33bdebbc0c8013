//! [`RemoteAgent`]: an agent hosted on another node, used as if it were
//! local.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::AtomicUsize;
use std::time::Duration;

use async_trait::async_trait;
use futures::FutureExt;
use futures::future::{BoxFuture, Fuse, FusedFuture};
use ractor::ActorRef;
use ractor::rpc::CallResult;
use tokio::time::{Instant, sleep, sleep_until};
use troupe_runtime::{
    Agent, AgentError, ErrorKind, Event, Reply, RunContext, Thread, message::MessageId,
};

use crate::call::{CallOptions, CancelOnDrop, emit_events, request_key, status, suspect_time};
use crate::node::max_frame;
use crate::placement::{InFlight, Placement, Replica, Selection, choose, replicas};
use crate::wire::{CallReply, CallRequestRef, HostMsg, Outcome, StatusReply, pack, unpack};
use crate::{ClusterError, NodeLost, check_name};

/// The metadata key under which a remote turn's messages record the node
/// that produced them.
pub const NODE_METADATA: &str = "troupe.node";

/// An agent hosted by a [`Node`](crate::Node) somewhere in the cluster.
///
/// Each turn finds the live replicas of the agent (its process group),
/// picks one ([`Placement`]), sends it the thread and waits for the reply,
/// asking the host about the turn every [`CallOptions::heartbeat`]. A node
/// that dies fails the turn at once; one that stops answering fails it
/// after [`CallOptions::node_timeout`]; the error
/// (kind [`ErrorKind::Node`](troupe_runtime::ErrorKind::Node), caused by
/// [`NodeLost`](crate::NodeLost)) names the node and the
/// agent, so a [`RetryPolicy`](troupe_runtime::RetryPolicy) can re-run the step —
/// on another replica, since nodes that just failed are avoided.
///
/// Events of the remote turn are re-emitted here, their paths carrying the
/// node: `team/map/worker#3@b/...`. The messages it produced carry the
/// node in their metadata ([`NODE_METADATA`]).
///
/// ```
/// use troupe_runtime::Agent;
/// use troupe_cluster::{Placement, RemoteAgent, Selection};
///
/// let pinned = RemoteAgent::parse("researcher@b").unwrap();
/// assert_eq!(pinned.name(), "researcher");
/// assert_eq!(pinned.placement(), &Placement::Node("b".into()));
///
/// let any = RemoteAgent::new("worker").unwrap().selection(Selection::LeastBusy).named("w1");
/// assert_eq!(any.name(), "w1");
/// assert_eq!(any.agent(), "worker");
/// ```
pub struct RemoteAgent {
    name: String,
    agent: String,
    placement: Placement,
    options: CallOptions,
    description: String,
    handoffs: Vec<String>,
    /// Shared by the participants [`spread`] makes, so their calls take
    /// turns over the replicas together.
    cursor: Arc<AtomicUsize>,
}

impl fmt::Debug for RemoteAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RemoteAgent")
            .field("name", &self.name)
            .field("agent", &self.agent)
            .field("placement", &self.placement)
            .field("options", &self.options)
            .finish()
    }
}

impl RemoteAgent {
    /// Agent `agent` on whichever node hosts it (round robin over the
    /// replicas). The participant is named like the agent.
    pub fn new(agent: impl Into<String>) -> Result<Self, ClusterError> {
        let agent = agent.into();
        check_name("agent", &agent)?;
        Ok(RemoteAgent {
            name: agent.clone(),
            agent,
            placement: Placement::default(),
            options: CallOptions::default(),
            description: String::new(),
            handoffs: Vec::new(),
            cursor: Arc::new(AtomicUsize::new(0)),
        })
    }

    /// Agent `agent` on node `node` only.
    pub fn on_node(
        agent: impl Into<String>,
        node: impl Into<String>,
    ) -> Result<Self, ClusterError> {
        let node = node.into();
        check_name("node", &node)?;
        Ok(Self::new(agent)?.placement_of(Placement::Node(node)))
    }

    /// `agent@node` (that node only) or `agent` (any node).
    pub fn parse(spec: &str) -> Result<Self, ClusterError> {
        match spec.split_once('@') {
            Some((agent, node)) => Self::on_node(agent, node),
            None => Self::new(spec),
        }
    }

    /// Takes part under another name (two participants using the same
    /// remote agent, say).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Sets where turns may run.
    pub fn placement_of(mut self, placement: Placement) -> Self {
        self.placement = placement;
        self
    }

    /// Any node, chosen this way.
    pub fn selection(self, selection: Selection) -> Self {
        self.placement_of(Placement::Any(selection))
    }

    /// Sets every timing at once.
    pub fn options(mut self, options: CallOptions) -> Self {
        self.options = options;
        self
    }

    /// See [`CallOptions::node_timeout`].
    pub fn node_timeout(mut self, timeout: Duration) -> Self {
        self.options.node_timeout = timeout;
        self
    }

    /// See [`CallOptions::heartbeat`].
    pub fn heartbeat(mut self, every: Duration) -> Self {
        self.options.heartbeat = every;
        self
    }

    /// See [`CallOptions::turn_timeout`].
    pub fn turn_timeout(mut self, timeout: Duration) -> Self {
        self.options.turn_timeout = Some(timeout);
        self
    }

    /// See [`CallOptions::discovery`].
    pub fn discovery_timeout(mut self, timeout: Duration) -> Self {
        self.options.discovery = timeout;
        self
    }

    /// See [`CallOptions::failover`].
    pub fn failover(mut self, attempts: u32) -> Self {
        self.options.failover = attempts;
        self
    }

    /// Describes the agent (for selectors and tool descriptions: the
    /// description of the hosted agent does not cross the wire).
    pub fn description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// The agents it may hand off to (for swarms).
    pub fn handoffs<S: Into<String>>(mut self, targets: impl IntoIterator<Item = S>) -> Self {
        self.handoffs = targets.into_iter().map(Into::into).collect();
        self
    }

    /// The hosted agent's name.
    pub fn agent(&self) -> &str {
        &self.agent
    }

    /// Where turns may run.
    pub fn placement(&self) -> &Placement {
        &self.placement
    }

    /// The timings.
    pub fn call_options(&self) -> &CallOptions {
        &self.options
    }

    /// The nodes where a live replica is known now.
    pub fn replica_nodes(&self) -> Vec<String> {
        replicas(&self.agent, self.pinned())
            .into_iter()
            .map(|r| r.node)
            .collect()
    }

    fn pinned(&self) -> Option<&str> {
        match &self.placement {
            Placement::Node(n) => Some(n),
            Placement::Any(_) => None,
        }
    }

    fn node_label(&self) -> String {
        self.pinned().unwrap_or("any").to_string()
    }

    /// Waits for a replica to pick, up to [`CallOptions::discovery`].
    async fn pick(&self, ctx: &RunContext, failed_on: &[String]) -> Result<Replica, AgentError> {
        let selection = match self.placement {
            Placement::Any(s) => s,
            Placement::Node(_) => Selection::RoundRobin,
        };
        let until = Instant::now() + self.options.discovery;
        loop {
            let live = replicas(&self.agent, self.pinned());
            if let Some(r) = choose(&live, selection, &self.cursor, failed_on) {
                return Ok(r);
            }
            if Instant::now() >= until {
                let node = self.node_label();
                let message = format!(
                    "no live node hosts agent '{}'{} (waited {:?})",
                    self.agent,
                    self.pinned()
                        .map(|n| format!(" on node '{n}'"))
                        .unwrap_or_default(),
                    self.options.discovery
                );
                return Err(AgentError::node(&node, message).with_source(NodeLost::new(node)));
            }
            tokio::select! {
                _ = ctx.cancelled() => return Err(AgentError::cancelled()),
                _ = sleep(Duration::from_millis(25)) => {}
            }
        }
    }

    /// One attempt on one replica.
    async fn attempt(
        &self,
        thread: &Thread,
        ctx: &RunContext,
        key: u64,
        replica: &Replica,
    ) -> Result<Reply, AgentError> {
        let node = replica.node.as_str();
        let lost =
            |message: String| AgentError::node(node, message).with_source(NodeLost::new(node));
        let attempt = MessageId::new().0;
        let request = CallRequestRef {
            key,
            attempt,
            agent: &self.agent,
            path: ctx.path(),
            run_id: ctx.run_id().map(|r| &**r),
            deadline_ms: ctx.deadline().map(|d| {
                let left = d.saturating_duration_since(Instant::now());
                u64::try_from(left.as_millis()).unwrap_or(u64::MAX)
            }),
            events: ctx.events_enabled(),
            thread,
            traceparent: crate::trace_context::traceparent(ctx.span()),
        };
        let bytes = pack(&request)
            .map_err(|e| AgentError::failed(format!("cannot encode the turn: {e}")))?;
        let limit = max_frame();
        if bytes.len() as u64 >= limit {
            return Err(AgentError::failed(format!(
                "the thread for agent '{}' is {} bytes encoded, over the wire's frame limit of {limit} bytes",
                self.agent,
                bytes.len()
            )));
        }

        let flight = InFlight::start(replica);
        let actor: ActorRef<HostMsg> = replica.cell.clone().into();
        // Whatever ends this attempt early (a cancel, a timeout, the turn's
        // future dropped by the engine) tells the host to stop working.
        let mut guard = CancelOnDrop {
            actor: Some(actor.clone()),
            key,
            attempt,
        };
        let call = actor.call(|port| HostMsg::Call(bytes, port), None);
        tokio::pin!(call);

        let opts = self.options;
        let events = ctx.events_enabled();
        let mut last_heard = Instant::now();
        let mut next_ping = last_heard + opts.heartbeat;
        let mut ping: Fuse<BoxFuture<'static, Option<StatusReply>>> = Fuse::terminated();
        let mut unknown = 0u32;
        let turn_deadline = opts.turn_timeout.map(|d| Instant::now() + d);
        loop {
            let silent_until = last_heard + opts.node_timeout;
            tokio::select! {
                biased;
                _ = ctx.cancelled() => return Err(AgentError::cancelled()),
                r = &mut call => {
                    guard.disarm();
                    return match r {
                        Ok(CallResult::Success(bytes)) => {
                            flight.healthy();
                            self.finish(&bytes, ctx, node, &flight)
                        }
                        Ok(CallResult::SenderError) | Ok(CallResult::Timeout) => {
                            flight.suspect(suspect_time(&opts));
                            Err(lost(format!(
                                "the connection to node '{node}' was lost while agent '{}' was working (the node died or was cut off)",
                                self.agent
                            )))
                        }
                        Err(e) => {
                            flight.suspect(suspect_time(&opts));
                            Err(lost(format!("cannot reach agent '{}' on node '{node}': {e}", self.agent)))
                        }
                    };
                }
                p = &mut ping, if !ping.is_terminated() => {
                    next_ping = Instant::now() + opts.heartbeat;
                    if let Some(status) = p {
                        last_heard = Instant::now();
                        flight.reported(status.load);
                        emit_events(ctx, &status.events);
                        // Known no more: the host restarted, or the reply is
                        // on its way. Twice in a row, it is not coming.
                        unknown = if status.known { 0 } else { unknown + 1 };
                        if unknown >= 2 {
                            return Err(lost(format!(
                                "node '{node}' no longer knows the turn of agent '{}' (it restarted?)",
                                self.agent
                            )));
                        }
                    }
                }
                _ = sleep_until(next_ping), if ping.is_terminated() => {
                    ping = status(actor.clone(), key, events, opts.node_timeout).boxed().fuse();
                }
                _ = sleep_until(silent_until) => {
                    flight.suspect(suspect_time(&opts));
                    return Err(lost(format!(
                        "node '{node}' did not answer for {:?} while agent '{}' was working (node dead or cut off)",
                        opts.node_timeout, self.agent
                    )));
                }
                _ = sleep_until(turn_deadline.unwrap_or(silent_until)), if turn_deadline.is_some() => {
                    return Err(AgentError::timeout(opts.turn_timeout.unwrap_or_default()));
                }
            }
        }
    }

    /// Reads a host's reply.
    fn finish(
        &self,
        bytes: &[u8],
        ctx: &RunContext,
        node: &str,
        flight: &InFlight,
    ) -> Result<Reply, AgentError> {
        let reply: CallReply = unpack(bytes).map_err(|e| {
            AgentError::failed(format!(
                "unreadable reply from agent '{}' on node '{node}': {e}",
                self.agent
            ))
        })?;
        flight.reported(reply.load);
        emit_events(ctx, &reply.events);
        match reply.outcome {
            Outcome::Done(mut wire) => {
                for m in wire.messages.iter_mut().chain(wire.private.iter_mut()) {
                    m.metadata
                        .insert(NODE_METADATA.to_string(), node.to_string());
                }
                Ok(Reply::from(*wire))
            }
            Outcome::Failed(e) => Err(e.into_agent(node)),
            Outcome::Refused(reason) => Err(AgentError::failed(format!(
                "node '{node}' refused the turn of agent '{}': {reason}",
                self.agent
            ))),
        }
    }
}

#[async_trait]
impl Agent for RemoteAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn handoffs(&self) -> Vec<String> {
        self.handoffs.clone()
    }

    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError> {
        let key = request_key(&self.agent, &ctx, &thread);
        let mut failed_on: Vec<String> = Vec::new();
        let mut attempts = 0u32;
        loop {
            let replica = self.pick(&ctx, &failed_on).await?;
            match self.attempt(&thread, &ctx, key, &replica).await {
                Err(e) if e.kind() == ErrorKind::Node && attempts < self.options.failover => {
                    attempts += 1;
                    ctx.emit_with(|| Event::Retry {
                        path: ctx.path().clone(),
                        attempt: attempts,
                        error: e.to_string(),
                        delay_ms: 0.0,
                    });
                    failed_on.push(replica.node);
                }
                other => return other,
            }
        }
    }
}

/// `n` participants named `agent#1` … `agent#n`, each a [`RemoteAgent`]
/// for `agent`, taking turns together over its replicas (round robin): a
/// workflow of them spreads its fan-out evenly over the nodes. To set
/// timings or the selection, configure a `RemoteAgent` and call
/// [`RemoteAgent::replicate`].
///
/// For MapReduce's workers a single `RemoteAgent` does the same (every
/// worker shares it): `MapReduce::builder().worker(RemoteAgent::new("worker")?)`.
///
/// ```
/// use troupe_cluster::spread;
/// let workers = spread("worker", 3).unwrap();
/// let names: Vec<&str> = workers.iter().map(|w| w.name()).collect();
/// assert_eq!(names, ["worker#1", "worker#2", "worker#3"]);
/// ```
pub fn spread(agent: &str, n: usize) -> Result<Vec<Arc<dyn Agent>>, ClusterError> {
    Ok(RemoteAgent::new(agent)?.replicate(n))
}

impl RemoteAgent {
    /// `n` participants named `<name>#1` … `<name>#n` with these settings,
    /// taking turns together over the replicas (see [`spread`]).
    pub fn replicate(&self, n: usize) -> Vec<Arc<dyn Agent>> {
        (1..=n)
            .map(|i| {
                Arc::new(self.clone_settings().named(format!("{}#{i}", self.name)))
                    as Arc<dyn Agent>
            })
            .collect()
    }

    /// A copy sharing the round-robin cursor.
    fn clone_settings(&self) -> RemoteAgent {
        RemoteAgent {
            name: self.name.clone(),
            agent: self.agent.clone(),
            placement: self.placement.clone(),
            options: self.options,
            description: self.description.clone(),
            handoffs: self.handoffs.clone(),
            cursor: self.cursor.clone(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse() {
        let a = RemoteAgent::parse("researcher@b").unwrap();
        assert_eq!(a.agent(), "researcher");
        assert_eq!(a.placement(), &Placement::Node("b".into()));
        assert_eq!(
            RemoteAgent::parse("w").unwrap().placement(),
            &Placement::default()
        );
        assert!(RemoteAgent::parse("a@").is_err());
        assert!(RemoteAgent::parse("@b").is_err());
        assert!(RemoteAgent::parse("a@b@c").is_err());
    }

    #[tokio::test]
    async fn no_replica_fails_with_a_node_error_naming_the_agent() {
        let a = RemoteAgent::on_node("nobody_hosts_this", "z")
            .unwrap()
            .discovery_timeout(Duration::from_millis(50));
        let err = a
            .run(Arc::new(Thread::new()), RunContext::new())
            .await
            .unwrap_err();
        assert_eq!(err.kind(), ErrorKind::Node);
        let text = err.to_string();
        assert!(
            text.contains("'z'") && text.contains("nobody_hosts_this"),
            "{text}"
        );
    }
}
