//! [`Router`]: the built, validated routes, with every lookup precomputed.

use std::fmt;
use std::sync::Arc;

use crate::builder::{Route, RouterBuilder};
use crate::config::InboxConfig;
use crate::envelope::Envelope;
use crate::hash::FastMap;
use crate::inbox::Inbox;
use crate::source::AnySource;
use crate::validation::RouteWarning;

/// Decides, for each participant's inbox, whose messages it accepts and with
/// which options.
///
/// Built once by [`RouterBuilder`]; cheap to clone (shared) and safe to share
/// across threads. Lookups are precomputed: [`targets`](Self::targets) is one
/// hash lookup returning a slice.
///
/// The rules: a participant no route names accepts every sender except
/// itself. One named by routes accepts exactly the union of their sources,
/// where [`Router::ANY`] means every sender except itself; a participant
/// receives its own messages only if a route names it as its own source.
#[derive(Clone)]
pub struct Router {
    inner: Arc<Inner>,
}

/// Everything precomputed by `build`, shared by clones.
pub(crate) struct Inner {
    pub(crate) participants: Vec<String>,
    /// Each participant's inbox config; participants whose inboxes are
    /// alike share one (a fan-out of thousands of workers has one), and
    /// every inbox a run makes shares it too.
    pub(crate) configs: Vec<Arc<InboxConfig>>,
    /// Whether each participant's routes name it as its own source.
    pub(crate) self_routes: Vec<bool>,
    /// Every participant and entry, by name.
    pub(crate) senders: FastMap<Box<str>, SenderSlot>,
    /// Every known sender's targets, back to back; see `SenderSlot`.
    pub(crate) targets: Vec<usize>,
    /// The targets of any other sender: the inboxes that accept anyone.
    pub(crate) any_targets: Vec<usize>,
    pub(crate) entries: Vec<String>,
    pub(crate) outputs: Vec<String>,
    pub(crate) warnings: Vec<RouteWarning>,
    pub(crate) routes: Vec<Route>,
}

/// One sender: its participant index, if it is one, and where its targets
/// sit in `Inner::targets`. One flat list keeps lookups to one hash probe and
/// one slice, and keeps a large router's lists in one allocation.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SenderSlot {
    pub(crate) participant: Option<usize>,
    pub(crate) start: usize,
    pub(crate) end: usize,
}

impl Router {
    /// Every sender, as a route source: `add_route(Router::ANY, "b")`.
    pub const ANY: AnySource = AnySource;

    /// The name of the caller's messages, the default entry source.
    pub const USER: &'static str = "user";

    pub(crate) fn from_inner(inner: Inner) -> Self {
        Self {
            inner: Arc::new(inner),
        }
    }

    /// A builder with no routes.
    pub fn builder() -> RouterBuilder {
        RouterBuilder::default()
    }

    /// The participants, in the order given to [`RouterBuilder::build`].
    pub fn participants(&self) -> &[String] {
        &self.inner.participants
    }

    /// The index of a participant.
    pub fn index_of(&self, name: &str) -> Option<usize> {
        self.inner.senders.get(name).and_then(|s| s.participant)
    }

    /// The options of participant `target`'s inbox; `None` if out of range.
    pub fn inbox_config(&self, target: usize) -> Option<&InboxConfig> {
        self.inner.configs.get(target).map(|c| &**c)
    }

    /// A new, empty inbox for participant `target`; `None` if out of range.
    pub fn inbox<M: Envelope>(&self, target: usize) -> Option<Inbox<M>> {
        self.inner
            .configs
            .get(target)
            .map(|config| Inbox::from_valid(config.clone()))
    }

    /// The participants whose inboxes accept messages from `sender`, by
    /// ascending index.
    ///
    /// Precomputed for every participant, `"user"` and declared entry; any
    /// other name gets the participants that accept every sender.
    #[inline]
    pub fn targets(&self, sender: &str) -> &[usize] {
        let inner = &*self.inner;
        match inner.senders.get(sender) {
            Some(slot) => inner.targets.get(slot.start..slot.end).unwrap_or_default(),
            None => &inner.any_targets,
        }
    }

    /// Whether participant `target`'s inbox accepts messages from `sender`;
    /// `false` if `target` is out of range.
    pub fn accepts(&self, target: usize, sender: &str) -> bool {
        let inner = &*self.inner;
        let (Some(name), Some(config)) =
            (inner.participants.get(target), inner.configs.get(target))
        else {
            return false;
        };
        if name == sender {
            inner.self_routes.get(target).copied().unwrap_or(false)
        } else {
            config.senders.accepts(sender)
        }
    }

    /// The participants declared outputs, in declaration order.
    pub fn outputs(&self) -> &[String] {
        &self.inner.outputs
    }

    /// The entry sources: `"user"` first, then declared entries.
    pub fn entries(&self) -> &[String] {
        &self.inner.entries
    }

    /// The warnings found while building.
    pub fn warnings(&self) -> &[RouteWarning] {
        &self.inner.warnings
    }

    /// The routes as declared.
    pub fn routes(&self) -> &[Route] {
        &self.inner.routes
    }
}

impl fmt::Debug for Router {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // The precomputed tables are large and derived; show what defines them.
        let inner = &*self.inner;
        f.debug_struct("Router")
            .field("participants", &inner.participants)
            .field("inboxes", &inner.configs)
            .field("entries", &inner.entries)
            .field("outputs", &inner.outputs)
            .field("warnings", &inner.warnings)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests;
