//! `magentic:`: a manager model keeps a task ledger and a progress ledger,
//! picks who speaks next, replans when the team stalls, and writes the
//! final answer itself.

use schemars::JsonSchema;
use serde::Deserialize;
use troupe_presets::SpeakerFallback;

/// A Magentic team (AutoGen's MagenticOne, Agent Framework's Magentic):
/// the manager plans (facts given, to look up, to derive, educated
/// guesses, a plan), checks progress after every turn (satisfied? in a
/// loop? progress? who next, with what instruction?), replans after
/// `max_stalls` stalls, and ends with a final answer it writes. Its
/// ledgers are events (`--events jsonl`) and messages of its thread, so a
/// run resumes like any other.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MagenticSpec {
    /// Agents or workflows the manager directs (`agent@node`: on another
    /// node of the cluster). `manager` and `user` are taken.
    pub participants: Vec<String>,
    /// The manager's model (a name from `models`). Offline, its `replies`
    /// are the ledgers in turn (`structured:` mappings) and the final
    /// answer; they go by the manager's conversation, so a resumed run
    /// gets the replies an uninterrupted one would.
    pub model: String,
    /// Progress checks (rounds) before the manager writes the final
    /// answer anyway and the run stops (default 20).
    #[serde(default)]
    pub max_turns: Option<u64>,
    /// Stalls (no progress, or a loop) before the manager replans
    /// (default 3).
    #[serde(default)]
    pub max_stalls: Option<u32>,
    /// Replans before the manager gives up, writes the final answer and
    /// the run stops (default 2).
    #[serde(default)]
    pub max_resets: Option<u32>,
    /// How often the model is asked for a valid ledger (schema, and a
    /// known next speaker) before the fallback (default 3).
    #[serde(default)]
    pub max_attempts: Option<u32>,
    /// Who speaks when the model names no valid speaker: `round_robin`
    /// (default) or `fail`.
    #[serde(default)]
    pub fallback: Option<SpeakerFallback>,
    /// Ask the user to approve or edit the plan before work starts
    /// (default false): the run waits for input; `approve` keeps the plan,
    /// anything else is the plan, one step a line.
    #[serde(default)]
    pub plan_review: Option<bool>,
    /// Let the manager name `user` as the next speaker when information
    /// only the user has is missing (default false): the run waits for
    /// input with its question.
    #[serde(default)]
    pub ask_user: Option<bool>,
    /// The prompt the manager writes the final answer with: `{task}`,
    /// `{status}`, `{history}`.
    #[serde(default)]
    pub final_answer_prompt: Option<String>,
}
