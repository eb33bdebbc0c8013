//! `router:`: routes between participants, and their inboxes.

use schemars::JsonSchema;
use serde::Deserialize;
use troupe_router::Overflow;

use crate::duration::HumanDuration;
use crate::shorthand::{ShortForm, Shorthand};

/// The senders of a route: one name or several.
impl ShortForm for Vec<String> {
    type Long = Vec<String>;
    const LONG_IS_LIST: bool = true;
    const NAME: &'static str = "Names";
    const SHORT: &'static str = "A name; `*` for every sender.";
    const EXPECTING: &'static str = "a name or a list of names";
    fn from_short(text: &str) -> Self {
        vec![text.to_string()]
    }
    fn from_long(long: Vec<String>) -> Self {
        long
    }
}

/// One name or several.
pub type Names = Shorthand<Vec<String>>;

/// A route: `to`'s inbox accepts messages `from` these senders.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    /// The senders: participants, `user`, or `*` for anyone.
    pub from: Names,
    /// The receiving participant.
    pub to: String,
    /// Messages one turn takes (default 1).
    #[serde(default)]
    pub batch_size: Option<usize>,
    /// How long a message may wait unread (`30s`, `1h`).
    #[serde(default)]
    pub ttl: Option<HumanDuration>,
    /// The most messages the inbox holds.
    #[serde(default)]
    pub capacity: Option<usize>,
    /// What a full inbox does (default `drop_oldest`).
    #[serde(default)]
    pub overflow: Option<Overflow>,
    /// How long a partial batch waits before it runs anyway.
    #[serde(default)]
    pub max_wait: Option<HumanDuration>,
}

/// Routes between participants; alone, every participant runs whenever
/// its inbox holds a full batch.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouterSpec {
    /// The participants (default: every agent named by a route);
    /// `agent@node` runs one on another node of the cluster, and routes
    /// name it `agent`.
    #[serde(default)]
    pub participants: Option<Vec<String>>,
    /// The routes.
    #[serde(default)]
    pub routes: Vec<RouteSpec>,
    /// Participants whose messages are results of the workflow.
    #[serde(default)]
    pub output: Vec<String>,
    /// Lets routes that form a cycle run with no stop condition, budget
    /// or turn ceiling (`max_turns: unbounded` and no `stop:`): without
    /// it, such a router is refused, since its messages could cascade
    /// for ever.
    #[serde(default)]
    pub allow_cycles: bool,
}

impl RouterSpec {
    /// The participants a router without `participants:` has: every name
    /// its routes give other than `user` and `*`, in order of appearance,
    /// those `known` accepts.
    pub(crate) fn route_members(&self, known: impl Fn(&str) -> bool) -> Vec<String> {
        let mut list: Vec<String> = Vec::new();
        for route in &self.routes {
            for n in route.from.0.iter().chain(std::iter::once(&route.to)) {
                if n != troupe_runtime::message::USER && n != "*" && known(n) && !list.contains(n) {
                    list.push(n.clone());
                }
            }
        }
        list
    }
}
