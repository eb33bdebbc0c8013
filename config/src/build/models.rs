//! Models: a client of the provider's API (OpenAI chat completions,
//! OpenAI Responses, Anthropic Messages) when a model runs against a
//! server, else a [`ScriptedModel`] playing the config's replies.

use std::sync::Arc;

use troupe_agents::model::{
    AnthropicMessages, Dialect, HttpModel, OpenAiChat, OpenAiResponses, PricedModel, ScriptPosition,
};
use troupe_agents::{ChatModel, Pricing, ScriptedModel, ScriptedReply};

use super::ctx::{Ctx, build_error};
use crate::error::ConfigError;
use crate::schema::{ModelSpec, Provider, ReplyForm, ReplySpec};
use crate::tree::FieldPath;

impl<'a> Ctx<'a> {
    /// Model `name` of the config.
    pub(super) fn model_spec(&self, name: &str) -> Result<&'a ModelSpec, ConfigError> {
        self.config
            .spec()
            .models
            .get(name)
            .ok_or_else(|| build_error(format!("unknown model `{name}`")))
    }

    /// Whether a model runs against a server.
    fn online(&self, spec: &ModelSpec) -> bool {
        match spec.provider {
            Provider::Openai | Provider::OpenaiResponses | Provider::Anthropic => true,
            Provider::Scripted => false,
            Provider::Auto => {
                let key = spec.api_key_env.as_deref().unwrap_or("OPENAI_API_KEY");
                !self.options.offline
                    && (self.env("OPENAI_BASE_URL").is_some_and(|v| !v.is_empty())
                        || self.env(key).is_some_and(|v| !v.is_empty()))
            }
        }
    }

    /// One model for `user` (an agent or the selector), its fallbacks
    /// aside: a client, or a script (the agent's own, else the model's)
    /// whose replies go by `position`; priced when it has `pricing:`, so
    /// whoever calls it (an agent, a manager, a selector, a planner) can
    /// say what each call cost.
    pub(super) fn single_model(
        &mut self,
        model_name: &str,
        user: &str,
        script: Option<&Vec<ReplySpec>>,
        position: ScriptPosition,
    ) -> Result<Arc<dyn ChatModel>, ConfigError> {
        let model = self.bare_model(model_name, user, script, position)?;
        Ok(
            match pricing_of(model_name, self.model_spec(model_name)?)? {
                Some(p) => Arc::new(PricedModel::new(model, p)),
                None => model,
            },
        )
    }

    /// [`Ctx::single_model`], unpriced.
    fn bare_model(
        &mut self,
        model_name: &str,
        user: &str,
        script: Option<&Vec<ReplySpec>>,
        position: ScriptPosition,
    ) -> Result<Arc<dyn ChatModel>, ConfigError> {
        let spec = self.model_spec(model_name)?;
        self.used.insert(format!("models.{model_name}"));
        if self.online(spec) {
            return match spec.provider {
                Provider::Anthropic => {
                    self.client::<AnthropicMessages>(model_name, spec, ANTHROPIC)
                }
                Provider::OpenaiResponses => {
                    self.client::<OpenAiResponses>(model_name, spec, OPENAI)
                }
                _ => self.client::<OpenAiChat>(model_name, spec, OPENAI),
            };
        }
        {
            // Not expanded offline, but a malformed reference is wrong
            // wherever the config runs: `run` refuses it as `validate`
            // does.
            let what = format!("model `{model_name}`");
            let at = FieldPath::root().key("models").key(model_name);
            let strings = spec
                .model
                .iter()
                .map(|m| (at.key("model"), m))
                .chain(spec.base_url.iter().map(|u| (at.key("base_url"), u)))
                .chain(
                    spec.headers
                        .iter()
                        .map(|(k, v)| (at.key("headers").key(k.clone()), v)),
                );
            for (field, text) in strings {
                self.check_references(&what, &field, text)?;
            }
        }
        let replies = script.or(spec.replies.as_ref()).ok_or_else(|| {
            build_error(format!(
                "`{user}` has no scripted replies for model `{model_name}`"
            ))
        })?;
        self.notes.push(format!(
            "{user}: model `{model_name}` scripted ({} repl{}{})",
            replies.len(),
            if replies.len() == 1 { "y" } else { "ies" },
            if spec.provider == Provider::Auto {
                ", offline"
            } else {
                ""
            }
        ));
        let mut model = ScriptedModel::new(replies.iter().map(|r| scripted_reply(&r.0)))
            .named(format!("{model_name}:{user}"))
            // An agent's reply follows from its conversation, so a run
            // resumed in another process goes on as it would have. A
            // selector's request holds no answers of its own: it counts.
            .position(position)
            .when_exhausted(spec.when_exhausted.unwrap_or_default())
            // Nobody reads a config model's requests back: keep none, so a
            // long offline run holds no copy of every prompt.
            .record_requests(false);
        if let Some(d) = &spec.delay {
            model = model.delay(d.duration);
        }
        if let Some(tokens) = spec.context_window {
            model = model.with_context_window(tokens);
        }
        Ok(Arc::new(model))
    }

    /// A client of the API `W` speaks, with the provider's `defaults`.
    fn client<W: Dialect + Default>(
        &mut self,
        name: &str,
        spec: &ModelSpec,
        defaults: Defaults,
    ) -> Result<Arc<dyn ChatModel>, ConfigError> {
        let what = format!("model `{name}`");
        let at = FieldPath::root().key("models").key(name);
        let model = self.expand(
            &what,
            &at.key("model"),
            spec.model.as_deref().unwrap_or(defaults.model),
        )?;
        let mut b = HttpModel::<W>::builder(model.clone());
        let base = match &spec.base_url {
            Some(u) => Some(self.expand_secret(&what, &at.key("base_url"), u)?),
            None => self.env(defaults.base_url_env).filter(|v| !v.is_empty()),
        };
        if let Some(u) = &base {
            b = b.base_url(u.clone());
        }
        let key_var = spec.api_key_env.as_deref().unwrap_or(defaults.key_env);
        match self.env(key_var).filter(|k| !k.is_empty()) {
            Some(key) => b = b.api_key(key),
            // A variable named on purpose that holds nothing: the requests
            // would go without a key. Checking warns (it may be set where
            // the config runs); running refuses.
            None if spec.api_key_env.is_some() && !key_in_headers(spec) => {
                let field = at.key("api_key_env");
                let message = format!(
                    "{what}: `api_key_env` names `{key_var}`, which is not set: its requests would go without a key; set `{key_var}`, or remove `api_key_env` for a server that takes none"
                );
                if !self.options.check {
                    return Err(self.invalid(&field, message));
                }
                let d = self.config.locate(&field, message);
                if !self.warnings.contains(&d) {
                    self.warnings.push(d);
                }
            }
            None => {}
        }
        for (k, v) in &spec.headers {
            b = b.header(
                k.clone(),
                self.expand_secret(&what, &at.key("headers").key(k.clone()), v)?,
            );
        }
        if let Some(t) = &spec.timeout {
            b = b.timeout(t.duration);
        }
        if let Some(policy) = super::model_limits::retry_policy(spec) {
            b = b.retry(policy);
        }
        if let Some(limit) = super::model_limits::rate_limit(spec) {
            b = b.rate_limit(limit);
        }
        if let Some(tokens) = spec.context_window {
            b = b.context_window(tokens);
        }
        let client = b.build().map_err(|e| build_error(format!("{what}: {e}")))?;
        self.notes
            .push(format!("model `{name}`: {model} at {}", client.endpoint()));
        Ok(Arc::new(client))
    }
}

/// What a provider's models use unless the config says otherwise.
#[derive(Clone, Copy)]
struct Defaults {
    model: &'static str,
    base_url_env: &'static str,
    key_env: &'static str,
}

const OPENAI: Defaults = Defaults {
    model: "gpt-4o-mini",
    base_url_env: "OPENAI_BASE_URL",
    key_env: "OPENAI_API_KEY",
};

const ANTHROPIC: Defaults = Defaults {
    model: "claude-sonnet-4-5",
    base_url_env: "ANTHROPIC_BASE_URL",
    key_env: "ANTHROPIC_API_KEY",
};

/// A scripted reply as the scripted model takes it.
fn scripted_reply(reply: &ReplyForm) -> ScriptedReply {
    let arguments =
        |a: &Option<serde_json::Value>| a.clone().unwrap_or_else(|| serde_json::json!({}));
    match reply {
        ReplyForm::Text(t) => ScriptedReply::text(t.clone()),
        ReplyForm::ToolCall(c) => ScriptedReply::tool_call(c.name.clone(), arguments(&c.arguments)),
        ReplyForm::ToolCalls(list) => ScriptedReply::tool_calls(
            list.iter()
                .map(|c| (c.name.clone(), arguments(&c.arguments))),
        ),
        ReplyForm::Handoff(h) => {
            ScriptedReply::handoff(h.to.clone(), h.reason.clone().unwrap_or_default())
        }
        ReplyForm::Structured(v) => ScriptedReply::structured(v.clone()),
        ReplyForm::Error(e) => ScriptedReply::error(e.clone()),
    }
}

/// The prices `pricing:` of model `model_name` gives, if any: amounts of
/// at least 0.
pub(super) fn pricing_of(
    model_name: &str,
    spec: &ModelSpec,
) -> Result<Option<Pricing>, ConfigError> {
    match spec.pricing {
        Some(p)
            if [p.input, p.output]
                .iter()
                .all(|x| x.is_finite() && *x >= 0.0) =>
        {
            Ok(Some(Pricing::per_million(p.input, p.output)))
        }
        Some(p) => Err(build_error(format!(
            "model `{model_name}`: `pricing` must be amounts in USD per million tokens of at least 0, not input {} and output {}",
            p.input, p.output
        ))),
        None => Ok(None),
    }
}

/// Whether one of the model's headers carries a credential (Azure's
/// `api-key`, `x-api-key`, `Authorization`, a token): then no key from
/// `api_key_env` is needed.
fn key_in_headers(spec: &ModelSpec) -> bool {
    spec.headers.keys().any(|name| {
        let name = name.to_ascii_lowercase();
        name == "authorization" || name.contains("key") || name.contains("token")
    })
}
