//! `models:`: model configurations (a server, or a script).

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;
use troupe_agents::model::WhenExhausted;

use super::model_limits::{ModelRetrySpec, OnLengthSpec, RateLimitSpec};
use super::replies::ReplySpec;
use crate::duration::HumanDuration;

/// Which kind of model a model configuration makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// An OpenAI-compatible chat-completions server (OpenAI, Azure OpenAI,
    /// Ollama, vLLM, llama.cpp, LM Studio…).
    Openai,
    /// The OpenAI Responses API (`{base_url}/responses`), used statelessly.
    OpenaiResponses,
    /// The Anthropic Messages API (`{base_url}/v1/messages`; key from
    /// `ANTHROPIC_API_KEY` unless `api_key_env` names another).
    Anthropic,
    /// Replies listed in the config: offline and deterministic.
    Scripted,
    /// `openai` when `OPENAI_BASE_URL` or the key variable (`api_key_env`)
    /// is set, `scripted` otherwise (and always with `--offline`).
    #[default]
    Auto,
}

impl Provider {
    /// Whether the model always runs against a server (never scripted).
    pub fn is_server(self) -> bool {
        matches!(
            self,
            Provider::Openai | Provider::OpenaiResponses | Provider::Anthropic
        )
    }
}

/// A model configuration.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// `openai`, `openai_responses`, `anthropic`, `scripted` or `auto`
    /// (default).
    #[serde(default)]
    pub provider: Provider,
    /// The model's name on the server (`gpt-4o-mini`, `llama3.2`).
    /// `${VAR}` and `${VAR:-default}` are expanded from the environment.
    #[serde(default)]
    pub model: Option<String>,
    /// The server's base URL. `openai`: requests go to
    /// `{base_url}/chat/completions`, default `$OPENAI_BASE_URL`, else
    /// `https://api.openai.com/v1`; `openai_responses`: to
    /// `{base_url}/responses`, same default; `anthropic`: to
    /// `{base_url}/v1/messages`, default `$ANTHROPIC_BASE_URL`, else
    /// `https://api.anthropic.com`. A query (`?api-version=…`) is kept.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable holding the API key (default
    /// `OPENAI_API_KEY`; `ANTHROPIC_API_KEY` for `anthropic`). The key
    /// itself never appears in a config.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Extra HTTP headers (values expand `${VAR}`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Sampling temperature, 0 to 2.
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Cap on completion tokens per call.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// The model's context window in tokens (prompt and answer together,
    /// at least 1): an agent's default context shows the model the newest
    /// messages that fit (unset: 128,000).
    #[serde(default)]
    pub context_window: Option<usize>,
    /// Stream the answers: `true` shows each piece as it is generated
    /// (`troupe run` prints tokens live; `--events jsonl` writes
    /// `text_delta` lines), `false` waits for whole answers. Default: stream
    /// when the run's events are watched (the console, `--events jsonl`),
    /// not with `--quiet`.
    #[serde(default)]
    pub stream: Option<bool>,
    /// Time allowed for one model call (default 120s).
    #[serde(default)]
    pub timeout: Option<HumanDuration>,
    /// Attempts per call, the first included (default 3): shorthand for
    /// `retry: {attempts: n}`.
    #[serde(default)]
    pub retries: Option<u32>,
    /// How failed calls are tried again (attempts, backoff, which
    /// failures).
    #[serde(default)]
    pub retry: Option<ModelRetrySpec>,
    /// How fast the model may be called, shared by every agent using it.
    #[serde(default)]
    pub rate_limit: Option<RateLimitSpec>,
    /// Models asked in turn when this one fails for good (after its
    /// retries) with a rate limit, a server error, a timeout or a lost
    /// connection. A fallback's own `fallback` is not followed.
    #[serde(default)]
    pub fallback: Vec<String>,
    /// How long a model that failed for good is skipped in favour of its
    /// fallbacks (default 60s).
    #[serde(default)]
    pub cooldown: Option<HumanDuration>,
    /// An answer cut off at `max_tokens`: `error` (default) fails the
    /// turn saying so, `continue` asks the model to go on.
    #[serde(default)]
    pub on_length: Option<OnLengthSpec>,
    /// Scripted replies: each agent using this model gets its own copy of
    /// the list (an agent's own `script` replaces it).
    #[serde(default)]
    pub replies: Option<Vec<ReplySpec>>,
    /// What a scripted model does when its replies run out.
    #[serde(default)]
    pub when_exhausted: Option<WhenExhausted>,
    /// Scripted: how long each reply takes (to watch the spinner, or to
    /// interrupt a run mid-turn).
    #[serde(default)]
    pub delay: Option<HumanDuration>,
    /// What the model's tokens cost: every call's cost is counted per
    /// agent and in total (results, events, the CLI's summary) and
    /// `max_cost` budgets judge it. Without it calls are counted, not
    /// priced.
    #[serde(default)]
    pub pricing: Option<PricingSpec>,
}

/// A model's prices, in USD per million tokens.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PricingSpec {
    /// USD per million input (prompt) tokens.
    pub input: f64,
    /// USD per million output (completion) tokens.
    pub output: f64,
}
