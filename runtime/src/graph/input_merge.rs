//! [`InputMerge`]: a node's input built by a function of its
//! predecessors' results (the seed's custom merge, `Callable` pass-down
//! mode), for [`NodeInput::Merge`](super::NodeInput::Merge).

use std::fmt;
use std::sync::Arc;

use crate::message::Message;

/// The function: each predecessor's last output, with its step id, in the
/// order they first spoke → the text of the one message the node reads.
type MergeFn = dyn Fn(&[(&str, &Message)]) -> String + Send + Sync;

/// A custom merge of a node's predecessors' results into the text of one
/// user message (a config builds one from a `merge: {template}`).
///
/// ```
/// use troupe_runtime::graph::InputMerge;
/// use troupe_runtime::Message;
///
/// let merge = InputMerge::new(|results| {
///     results.iter().map(|(step, m)| format!("{step}={}", m.text_content())).collect::<Vec<_>>().join(";")
/// });
/// let a = Message::text("a", "1");
/// assert_eq!(merge.apply(&[("a", &a)]), "a=1");
/// ```
#[derive(Clone)]
pub struct InputMerge(Arc<MergeFn>);

impl InputMerge {
    /// A merge by `f`.
    pub fn new(f: impl Fn(&[(&str, &Message)]) -> String + Send + Sync + 'static) -> Self {
        InputMerge(Arc::new(f))
    }

    /// The merged text of `results`.
    pub fn apply(&self, results: &[(&str, &Message)]) -> String {
        (self.0)(results)
    }
}

impl fmt::Debug for InputMerge {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("InputMerge(..)")
    }
}

/// Two merges are equal when they are the same function.
impl PartialEq for InputMerge {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Eq for InputMerge {}
