//! [`RouterBuilder`] and [`Route`]: declaring who receives whose messages,
//! before [`build`](RouterBuilder::build) checks it against the participants.

use crate::config::InboxConfig;
use crate::source::Source;

/// One declared route: `target`'s inbox accepts messages from `source`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Route {
    /// Whose messages the target accepts.
    pub source: Source,
    /// The participant whose inbox this configures.
    pub target: String,
    /// Options for the target's inbox, if the route gave any.
    pub config: Option<InboxConfig>,
}

/// Declares routes and inbox options, then [`build`](Self::build)s a
/// [`Router`](crate::Router) against the participants.
///
/// Several routes into one target union their senders. Inbox options from
/// several routes merge option by option; an option left at its default is
/// unset, and two different non-default values for one option are a
/// [`RouteProblem::ConflictingOptions`](crate::RouteProblem::ConflictingOptions).
/// A config's `senders`, if not `Any`, adds its names to the route's sources.
#[derive(Debug, Clone, Default)]
pub struct RouterBuilder {
    pub(crate) routes: Vec<Route>,
    pub(crate) inboxes: Vec<(String, InboxConfig)>,
    pub(crate) outputs: Vec<String>,
    pub(crate) entries: Vec<String>,
}

impl RouterBuilder {
    /// An empty builder: every participant would receive every other's messages.
    pub fn new() -> Self {
        Self::default()
    }

    /// `target`'s inbox accepts messages from `source`.
    pub fn add_route(self, source: impl Into<Source>, target: impl Into<String>) -> Self {
        self.push_route(source.into(), target.into(), None)
    }

    /// Like [`add_route`](Self::add_route), also setting options (batch
    /// size, ttl, capacity, overflow, max wait) for the target's inbox.
    pub fn add_route_with(
        self,
        source: impl Into<Source>,
        target: impl Into<String>,
        config: InboxConfig,
    ) -> Self {
        self.push_route(source.into(), target.into(), Some(config))
    }

    /// Sets options for `target`'s inbox without adding a route, so a target
    /// no route names still accepts every sender.
    pub fn inbox(mut self, target: impl Into<String>, config: InboxConfig) -> Self {
        self.inboxes.push((target.into(), config));
        self
    }

    /// Declares `source`'s messages a result of the workflow (a sink), so it
    /// need not route them to anyone.
    pub fn output(mut self, source: impl Into<String>) -> Self {
        self.outputs.push(source.into());
        self
    }

    /// Declares an entry: a sender, besides `"user"`, whose messages start
    /// work. It may be a participant or an outside name usable as a source.
    pub fn entry(mut self, source: impl Into<String>) -> Self {
        self.entries.push(source.into());
        self
    }

    fn push_route(mut self, source: Source, target: String, config: Option<InboxConfig>) -> Self {
        self.routes.push(Route {
            source,
            target,
            config,
        });
        self
    }
}
