//! `magentic:` built by the troupe-presets [`Magentic`] builder: the
//! manager's model scripted by its conversation, checkpointing to the
//! config's store per turn when it is the main workflow.

use troupe_agents::model::ScriptPosition;
use troupe_presets::Magentic;
use troupe_runtime::Workflow;

use super::ctx::{Ctx, build_error};
use super::teams::Common;
use crate::error::ConfigError;
use crate::schema::MagenticSpec;

impl Ctx<'_> {
    /// The Magentic team `m`, named `name`.
    pub(super) async fn magentic(
        &mut self,
        name: &str,
        description: &str,
        m: &MagenticSpec,
        common: Common<'_>,
    ) -> Result<Workflow, ConfigError> {
        let Common {
            stop,
            store,
            every,
            max_history,
        } = common;
        // The manager's requests show its earlier ledgers as its own
        // answers, so its script goes by the conversation.
        let model = self.model(&m.model, "manager", None, ScriptPosition::Conversation)?;
        let mut b = Magentic::builder()
            .name(name)
            .description(description)
            .participants(self.nodes(&m.participants).await?)
            .model(model);
        if let Some(n) = m.max_turns {
            b = b.max_turns(n);
        }
        if let Some(n) = m.max_stalls {
            b = b.max_stalls(n);
        }
        if let Some(n) = m.max_resets {
            b = b.max_resets(n);
        }
        if let Some(n) = m.max_attempts {
            b = b.max_attempts(n);
        }
        if let Some(f) = m.fallback {
            b = b.fallback(f);
        }
        if let Some(on) = m.plan_review {
            b = b.plan_review(on);
        }
        if let Some(on) = m.ask_user {
            b = b.ask_user(on);
        }
        if let Some(p) = &m.final_answer_prompt {
            b = b.final_answer_prompt(p.clone());
        }
        if let Some(s) = stop {
            b = b.stop_condition(s);
        }
        if let Some(n) = max_history {
            b = b.max_history(n);
        }
        if let Some(store) = store {
            b = b.checkpoint_store(store.checkpoints.clone());
            if let Some(n) = every {
                b = b.checkpoint_every(n);
            }
        }
        b.build().map_err(build_error)
    }
}
