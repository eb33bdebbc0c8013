//! `merge:` and `cache:`: a declarative merge of several results into
//! one input (a template), and a node's result cache (seed 000).

use schemars::JsonSchema;
use serde::Deserialize;

/// How several results are merged into the one message a node (or the
/// step after a parallel block, or a plan step) reads: a template over
/// `{{ $steps.<id>.output… }}` references, as agent instructions write
/// them (the seed's custom merge, declared).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MergeSpec {
    /// The merged text: `{{ $steps.<id>.output }}` is the result of step
    /// (or node) `<id>`; a parallel block's branches are
    /// `{{ $steps.<block>.outputs.<id>.output }}`.
    pub template: String,
}

/// A node's result cache: when a result is kept under the node's key in
/// the run's store, it is used instead of running the node.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CacheSpec {
    /// The key: a template over the run's state (`{{ $steps.<id>.output…
    /// }}`) and `{{ $input }}` (the text of what the node reads this turn:
    /// the messages after its own last one). It is
    /// kept with a hash of the node's config (its agent's instructions,
    /// model and tools), so a changed config runs the node again.
    pub key: String,
}
