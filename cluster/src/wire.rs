//! What crosses the wire between nodes, and the one serializable actor
//! message of troupe.
//!
//! Every payload is `[wire version: 4 bytes, big endian][codec bytes]`, so
//! a node of another version is refused with a clear error instead of a
//! decoding failure. Payloads ride in `ractor_cluster`'s own framing as the
//! arguments of a call (a turn, a status query) or of a cast (a cancel).

use ractor::RpcReplyPort;
use ractor::message::{BoxedDowncastErr, SerializedMessage};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use troupe_runtime::{
    AgentError, ErrorKind, InputRequest, Message, Reply, ReplyParts, RunError, Thread, codec,
    state::StateDelta,
};

use crate::node_lost::NodeLost;

/// Version of the wire layout; bump it when a type below (or the
/// encoded `Message`/`Thread`) changes shape.
///
/// 2: a reply carries the questions open in a nested run and the turn's
/// change to the run's state; a thread's scheduler state the counters of a
/// run not finished and the run's state values.
/// 3: a turn carries the caller's W3C trace context (`traceparent`).
/// 4: an agent's error crosses as its kind and text (`AgentError` became one
/// struct), with the node a lost node error names.
pub(crate) const WIRE_VERSION: u32 = 4;

/// A turn for the agent host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CallRequest {
    /// The turn's identity: the same for a retry of the same turn (same
    /// caller path, same thread), so a host can join a turn still running.
    pub(crate) key: u64,
    /// This delivery's own id, for cancelling it.
    pub(crate) attempt: u128,
    /// The agent the caller means (checked against the host's).
    pub(crate) agent: String,
    /// The caller's path for the participant (`team/map/worker#3`).
    pub(crate) path: String,
    /// The caller's run id, if it has one.
    pub(crate) run_id: Option<String>,
    /// Time left before the caller's deadline, in milliseconds.
    pub(crate) deadline_ms: Option<u64>,
    /// Whether the caller listens to events (else the host builds none).
    pub(crate) events: bool,
    /// The agent's thread for the turn.
    pub(crate) thread: Thread,
    /// The caller's span as a W3C `traceparent`, when the caller exports
    /// spans: the host's span of the turn is its child.
    pub(crate) traceparent: Option<String>,
}

/// The borrowed twin of [`CallRequest`], so sending a turn never clones
/// the thread (same fields, same order: same encoding).
#[derive(Debug, Serialize)]
pub(crate) struct CallRequestRef<'a> {
    pub(crate) key: u64,
    pub(crate) attempt: u128,
    pub(crate) agent: &'a str,
    pub(crate) path: &'a str,
    pub(crate) run_id: Option<&'a str>,
    pub(crate) deadline_ms: Option<u64>,
    pub(crate) events: bool,
    pub(crate) thread: &'a Thread,
    pub(crate) traceparent: Option<String>,
}

/// A question about a request under way (the caller's heartbeat).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StatusRequest {
    pub(crate) key: u64,
    /// Hand over the events gathered so far.
    pub(crate) drain_events: bool,
}

/// The host's answer to a [`StatusRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StatusReply {
    /// Whether the host is working on that request.
    pub(crate) known: bool,
    /// Turns the host has under way.
    pub(crate) load: u32,
    /// Events of the turn not handed over yet, as JSON.
    pub(crate) events: Vec<String>,
}

/// The caller gave up on one delivery.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct CancelRequest {
    pub(crate) key: u64,
    pub(crate) attempt: u128,
}

/// The host's answer to a turn.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct CallReply {
    /// Turns the host has under way (for least-busy placement).
    pub(crate) load: u32,
    /// Events of the turn not handed over by status queries, as JSON.
    pub(crate) events: Vec<String>,
    pub(crate) outcome: Outcome,
}

/// How a remote turn ended.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) enum Outcome {
    // Boxed: a reply is large, the other outcomes are small.
    Done(Box<WireReply>),
    Failed(WireError),
    /// The host would not take the request (wrong agent, bad payload).
    Refused(String),
}

/// A [`Reply`] on the wire.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct WireReply {
    pub(crate) messages: Vec<Message>,
    pub(crate) thread: Option<Thread>,
    pub(crate) next: Option<Vec<String>>,
    pub(crate) request: Option<String>,
    pub(crate) private: Vec<Message>,
    pub(crate) inner_requests: Vec<InputRequest>,
    pub(crate) state: StateDelta,
}

impl From<Reply> for WireReply {
    fn from(r: Reply) -> Self {
        let r = r.into_parts();
        WireReply {
            messages: r.messages,
            thread: r.thread,
            next: r.next,
            request: r.request,
            private: r.private,
            inner_requests: r.inner_requests,
            state: r.state,
        }
    }
}

impl From<WireReply> for Reply {
    fn from(r: WireReply) -> Self {
        // `ReplyParts` may grow: start from its default, set every field.
        let mut parts = ReplyParts::default();
        parts.messages = r.messages;
        parts.thread = r.thread;
        parts.next = r.next;
        parts.request = r.request;
        parts.private = r.private;
        parts.inner_requests = r.inner_requests;
        parts.state = r.state;
        Reply::from_parts(parts)
    }
}

/// An [`AgentError`] on the wire, keeping its kind for retry policies.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) enum WireError {
    /// The host could not run the turn (its own words).
    Failed(String),
    /// The turn was cancelled on the host.
    Cancelled,
    /// The agent panicked on the host.
    Panicked(String),
    /// A nested workflow's run failed: its text crosses, not its thread.
    Workflow { workflow: String, message: String },
    /// The agent's error: its kind and text, and the node a lost node
    /// error names ([`NodeLost`]). An attached cause stays on the host.
    Agent {
        kind: ErrorKind,
        message: String,
        lost_node: Option<String>,
    },
}

impl WireError {
    /// The error as sent by a host whose agent's turn returned `e`.
    pub(crate) fn from_agent(e: &AgentError, path: &str) -> Self {
        match e.kind() {
            ErrorKind::Cancelled => WireError::Cancelled,
            ErrorKind::Workflow => WireError::Workflow {
                workflow: path.to_string(),
                message: e.message().to_string(),
            },
            kind => WireError::Agent {
                kind,
                message: e.message().to_string(),
                lost_node: e
                    .downcast_source::<NodeLost>()
                    .map(|lost| lost.node().to_string()),
            },
        }
    }

    /// The error as the caller's turn returns it; `node` is where it ran.
    pub(crate) fn into_agent(self, node: &str) -> AgentError {
        match self {
            WireError::Failed(m) => AgentError::failed(m),
            WireError::Cancelled => AgentError::cancelled(),
            WireError::Panicked(m) => AgentError::failed(format!("panicked on node '{node}': {m}")),
            // The inner run's error does not cross the wire whole (its
            // thread would be large); its text and its kind do.
            WireError::Workflow { workflow, message } => AgentError::workflow(RunError::Runtime {
                workflow,
                reason: message,
            }),
            WireError::Agent {
                kind,
                message,
                lost_node,
            } => {
                let error = AgentError::new(kind, message);
                match lost_node {
                    Some(lost) => error.with_source(NodeLost::new(lost)),
                    None => error,
                }
            }
        }
    }
}

/// Why a payload could not be read.
#[derive(Debug, thiserror::Error)]
pub(crate) enum WireFault {
    #[error("the payload is too short to hold a wire version")]
    Short,
    #[error(
        "wire version {found} (this node speaks version {WIRE_VERSION}): upgrade the nodes together"
    )]
    Version { found: u32 },
    #[error(transparent)]
    Codec(#[from] codec::CodecError),
}

/// Encodes a payload behind the wire version.
pub(crate) fn pack<T: Serialize>(value: &T) -> Result<Vec<u8>, codec::CodecError> {
    let body = codec::encode(value)?;
    let mut out = Vec::with_capacity(body.len() + 4);
    out.extend_from_slice(&WIRE_VERSION.to_be_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

/// Decodes a payload, checking the wire version first.
pub(crate) fn unpack<T: DeserializeOwned>(bytes: &[u8]) -> Result<T, WireFault> {
    let Some((version, body)) = bytes.split_first_chunk::<4>() else {
        return Err(WireFault::Short);
    };
    let found = u32::from_be_bytes(*version);
    if found != WIRE_VERSION {
        return Err(WireFault::Version { found });
    }
    Ok(codec::decode(body)?)
}

/// Messages the agent host handles: the only actor message of troupe that
/// crosses nodes.
pub(crate) enum HostMsg {
    /// A turn (a packed [`CallRequest`]); answered with a packed [`CallReply`].
    Call(Vec<u8>, RpcReplyPort<Vec<u8>>),
    /// A heartbeat (a packed [`StatusRequest`]); answered with a packed
    /// [`StatusReply`].
    Status(Vec<u8>, RpcReplyPort<Vec<u8>>),
    /// A packed [`CancelRequest`].
    Cancel(Vec<u8>),
    /// A turn task finished (local only: never serialized).
    Finished {
        key: u64,
        turn: u64,
        outcome: Outcome,
    },
}

const CALL: &str = "call";
const STATUS: &str = "status";
const CANCEL: &str = "cancel";

// Written by hand rather than derived (`RactorClusterMessage`): the
// payloads are already bytes in troupe's codec, and the local-only
// `Finished` variant must never be read off the wire.
impl ractor::Message for HostMsg {
    fn serializable() -> bool {
        true
    }

    fn serialize(self) -> Result<SerializedMessage, BoxedDowncastErr> {
        match self {
            HostMsg::Call(args, reply) => Ok(SerializedMessage::Call {
                variant: CALL.into(),
                args,
                reply,
                metadata: None,
            }),
            HostMsg::Status(args, reply) => Ok(SerializedMessage::Call {
                variant: STATUS.into(),
                args,
                reply,
                metadata: None,
            }),
            HostMsg::Cancel(args) => Ok(SerializedMessage::Cast {
                variant: CANCEL.into(),
                args,
                metadata: None,
            }),
            HostMsg::Finished { .. } => Err(BoxedDowncastErr),
        }
    }

    fn deserialize(message: SerializedMessage) -> Result<Self, BoxedDowncastErr> {
        match message {
            SerializedMessage::Call {
                variant,
                args,
                reply,
                ..
            } => match variant.as_str() {
                CALL => Ok(HostMsg::Call(args, reply)),
                STATUS => Ok(HostMsg::Status(args, reply)),
                _ => Err(BoxedDowncastErr),
            },
            SerializedMessage::Cast { variant, args, .. } if variant == CANCEL => {
                Ok(HostMsg::Cancel(args))
            }
            _ => Err(BoxedDowncastErr),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ractor::Message as _;
    use std::time::Duration;
    use troupe_runtime::{Content, message::ToolCall};

    fn thread() -> Thread {
        let mut t = Thread::from_messages([
            Message::user("task"),
            Message::new(
                "a",
                Content::ToolCalls(vec![ToolCall {
                    id: "1".into(),
                    name: "f".into(),
                    arguments: "{}".into(),
                }]),
            ),
        ]);
        t.children_mut().insert(
            "x".into(),
            Box::new(Thread::from_messages([Message::user("in")])),
        );
        t
    }

    #[test]
    fn every_wire_type_round_trips() {
        let call = CallRequest {
            key: 7,
            attempt: 9,
            agent: "worker".into(),
            path: "team/map/worker#1".into(),
            run_id: Some("r".into()),
            deadline_ms: Some(1500),
            events: true,
            thread: thread(),
            traceparent: Some("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01".into()),
        };
        assert_eq!(unpack::<CallRequest>(&pack(&call).unwrap()).unwrap(), call);
        let by_ref = CallRequestRef {
            key: call.key,
            attempt: call.attempt,
            agent: &call.agent,
            path: &call.path,
            run_id: call.run_id.as_deref(),
            deadline_ms: call.deadline_ms,
            events: call.events,
            thread: &call.thread,
            traceparent: call.traceparent.clone(),
        };
        assert_eq!(pack(&by_ref).unwrap(), pack(&call).unwrap());

        let status = StatusRequest {
            key: 7,
            drain_events: true,
        };
        assert_eq!(
            unpack::<StatusRequest>(&pack(&status).unwrap()).unwrap(),
            status
        );
        let sr = StatusReply {
            known: true,
            load: 3,
            events: vec![r#"{"type":"warning"}"#.into()],
        };
        assert_eq!(unpack::<StatusReply>(&pack(&sr).unwrap()).unwrap(), sr);
        let cancel = CancelRequest { key: 1, attempt: 2 };
        assert_eq!(
            unpack::<CancelRequest>(&pack(&cancel).unwrap()).unwrap(),
            cancel
        );

        let errors = [
            WireError::Failed("f".into()),
            WireError::Agent {
                kind: ErrorKind::Transient,
                message: "t".into(),
                lost_node: None,
            },
            WireError::Workflow {
                workflow: "w".into(),
                message: "m".into(),
            },
            WireError::Cancelled,
            WireError::Agent {
                kind: ErrorKind::Node,
                message: "m".into(),
                lost_node: Some("b".into()),
            },
            WireError::Panicked("p".into()),
        ];
        let mut outcomes: Vec<Outcome> = errors.iter().cloned().map(Outcome::Failed).collect();
        outcomes.push(Outcome::Refused("no".into()));
        outcomes.push(Outcome::Done(Box::new(WireReply {
            messages: vec![Message::text("a", "hi").with_metadata("k", "v")],
            thread: Some(thread()),
            next: Some(vec!["b".into()]),
            request: Some("q?".into()),
            private: vec![Message::text("a", "note")],
            inner_requests: vec![InputRequest {
                id: "clerk-1".into(),
                agent: "clerk".into(),
                prompt: "when?".into(),
            }],
            state: StateDelta::new().set("k", "v").remove("gone"),
        })));
        for outcome in outcomes {
            let reply = CallReply {
                load: 1,
                events: vec!["{}".into()],
                outcome,
            };
            assert_eq!(unpack::<CallReply>(&pack(&reply).unwrap()).unwrap(), reply);
        }
    }

    #[test]
    fn errors_keep_their_kind_across_the_wire() {
        let cases = [
            AgentError::failed("x"),
            AgentError::transient("x"),
            AgentError::timeout(Duration::from_millis(20)),
            AgentError::model("x"),
            AgentError::tool("t", "x"),
            AgentError::workflow(RunError::Runtime {
                workflow: "w".into(),
                reason: "x".into(),
            }),
            AgentError::cancelled(),
            AgentError::node("c", "x").with_source(NodeLost::new("c")),
        ];
        for e in cases {
            let back = WireError::from_agent(&e, "p").into_agent("b");
            assert_eq!(back.kind(), e.kind(), "{e}");
            if e.kind() != ErrorKind::Workflow {
                // A nested run's error comes back as a run error of the
                // workflow's path, as it always has.
                assert_eq!(back.to_string(), e.to_string());
            }
            assert_eq!(
                back.downcast_source::<NodeLost>().map(NodeLost::node),
                e.downcast_source::<NodeLost>().map(NodeLost::node)
            );
        }
    }

    #[test]
    fn a_payload_of_another_version_is_refused_clearly() {
        let mut bytes = pack(&StatusRequest {
            key: 1,
            drain_events: false,
        })
        .unwrap();
        bytes[3] = 99;
        let err = unpack::<StatusRequest>(&bytes).unwrap_err();
        assert!(err.to_string().contains("wire version 99"), "{err}");
        assert!(matches!(
            unpack::<StatusRequest>(&[1]),
            Err(WireFault::Short)
        ));
        assert!(unpack::<CallRequest>(&pack(&1u8).unwrap()).is_err());
    }

    #[test]
    fn host_messages_serialize_and_come_back() {
        let (tx, _rx) = ractor::concurrency::oneshot();
        let m = HostMsg::Call(vec![1, 2], tx.into()).serialize().unwrap();
        assert!(matches!(
            HostMsg::deserialize(m),
            Ok(HostMsg::Call(a, _)) if a == [1, 2]
        ));
        let (tx, _rx) = ractor::concurrency::oneshot();
        let m = HostMsg::Status(vec![3], tx.into()).serialize().unwrap();
        assert!(matches!(HostMsg::deserialize(m), Ok(HostMsg::Status(..))));
        let m = HostMsg::Cancel(vec![4]).serialize().unwrap();
        assert!(matches!(HostMsg::deserialize(m), Ok(HostMsg::Cancel(a)) if a == [4]));
        assert!(
            HostMsg::Finished {
                key: 1,
                turn: 1,
                outcome: Outcome::Refused(String::new())
            }
            .serialize()
            .is_err()
        );
        let odd = SerializedMessage::Cast {
            variant: "finished".into(),
            args: vec![],
            metadata: None,
        };
        assert!(HostMsg::deserialize(odd).is_err());
        assert!(HostMsg::serializable());
    }
}
