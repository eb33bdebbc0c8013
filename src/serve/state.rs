//! The server's state: the teams, the runs, the limits, the token.

use std::collections::BTreeMap;
use std::sync::Arc;

use super::error::ApiError;
use super::limits::Limits;
use super::registry::Registry;
use super::team::Team;
use super::texting_table::Texting;

/// Everything a request handler sees.
pub(crate) struct State {
    /// The teams by name.
    pub(crate) teams: BTreeMap<String, Team>,
    /// The bearer token every route requires, if one is set.
    pub(crate) token: Option<Arc<str>>,
    /// Body size and concurrent runs.
    pub(crate) limits: Limits,
    /// The runs started since the server started.
    pub(crate) runs: Registry,
    /// The run under way in each session (double texting).
    pub(crate) texting: Texting,
}

/// The state as handlers share it.
pub(crate) type Shared = Arc<State>;

impl State {
    /// The state of a server over `teams`.
    pub(crate) fn new(
        teams: BTreeMap<String, Team>,
        token: Option<Arc<str>>,
        limits: Limits,
    ) -> Shared {
        Arc::new(State {
            teams,
            token,
            limits,
            runs: Registry::default(),
            texting: Texting::default(),
        })
    }

    /// The team `name` names; without a name, the only (or first) one.
    pub(crate) fn team(&self, name: Option<&str>) -> Result<&Team, ApiError> {
        match name {
            Some(n) => self.teams.get(n).ok_or_else(|| {
                ApiError::not_found(format!(
                    "no team `{n}`; served: {}",
                    self.teams.keys().cloned().collect::<Vec<_>>().join(", ")
                ))
            }),
            None => self
                .teams
                .values()
                .next()
                .ok_or_else(|| ApiError::not_found("no team is served".into())),
        }
    }
}
