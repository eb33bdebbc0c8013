//! [`NodeLost`]: which node a turn lost, kept as the cause of its error.

/// The node a remote turn lost (dead, cut off or hosting no replica): the
/// [`source`](std::error::Error::source) of the turn's
/// [`AgentError`](troupe_runtime::AgentError) of kind
/// [`ErrorKind::Node`](troupe_runtime::ErrorKind::Node), for a caller that
/// wants the node without reading the text.
///
/// ```
/// use troupe_cluster::NodeLost;
/// use troupe_runtime::AgentError;
///
/// let e = AgentError::node("b", "did not answer").with_source(NodeLost::new("b"));
/// assert_eq!(e.downcast_source::<NodeLost>().map(NodeLost::node), Some("b"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("node '{node}' lost")]
pub struct NodeLost {
    node: String,
}

impl NodeLost {
    /// Node `node` was lost.
    pub fn new(node: impl Into<String>) -> Self {
        NodeLost { node: node.into() }
    }

    /// The node's name.
    pub fn node(&self) -> &str {
        &self.node
    }
}
