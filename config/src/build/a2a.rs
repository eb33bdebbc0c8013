//! `a2a:` agents: an [`A2aAgent`] over a client of the remote agent, with
//! its URL and headers expanded from the environment (as secrets), its
//! timeout and its retry policy; through the cassette when there is one
//! (its turns recorded, or replayed without a connection).

use std::sync::Arc;

use troupe_agents::a2a::{A2aAgent, A2aClient};
use troupe_runtime::Agent;

use super::ctx::{Ctx, build_error};
use super::model_limits::retry_policy_of;
use crate::error::ConfigError;
use crate::schema::{A2aSpec, AgentSpec};
use crate::tree::FieldPath;

impl Ctx<'_> {
    /// Agent `name`, answered by the remote agent `a2a` describes.
    pub(super) fn a2a_agent(
        &mut self,
        name: &str,
        spec: &AgentSpec,
        a2a: &A2aSpec,
    ) -> Result<Arc<dyn Agent>, ConfigError> {
        let what = format!("agent `{name}`");
        let at = FieldPath::root().key("agents").key(name).key("a2a");
        let url = self.expand_secret(&what, &at.key("url"), &a2a.url)?;
        let mut b = A2aClient::builder(url);
        for (k, v) in &a2a.headers {
            b = b.header(
                k.clone(),
                self.expand_secret(&what, &at.key("headers").key(k.clone()), v)?,
            );
        }
        if let Some(t) = &a2a.timeout {
            b = b.timeout(t.duration);
        }
        if let Some(r) = &a2a.retry {
            b = b.retry(retry_policy_of(r));
        }
        let client = b.build().map_err(|e| build_error(format!("{what}: {e}")))?;
        self.notes
            .push(format!("{name}: remote A2A agent at {}", client.card_url()));
        let mut agent = A2aAgent::new(name, client);
        if let Some(d) = &spec.description {
            agent = agent.with_description(d.clone());
        }
        let agent: Arc<dyn Agent> = Arc::new(agent);
        Ok(match &self.options.cassette {
            Some(c) => c.wrap_agent(agent),
            None => agent,
        })
    }
}
