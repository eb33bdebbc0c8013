//! What a run spent: [`AgentStats`] (turns, model calls, tool calls,
//! tokens, cost) per agent and in total ([`RunStats`]), and the
//! `Meter` a turn's agents record their spend into as they go.
//!
//! One source of truth: a turn's spend is what its agents recorded into
//! the meter of its [`RunContext`](crate::RunContext) (ChatAgent records
//! every model call and tool call; a nested workflow folds its own stats
//! in, failed or not). An agent that records nothing but puts usage on the
//! messages of its reply (a scripted or hand-written agent) is counted by
//! that usage instead, so nothing is counted twice: a turn's tokens come
//! from its meter when it recorded any, else from its reply's messages.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use crate::message::Usage;

/// What one agent (or a whole run) spent.
///
/// Its checkpoint encoding (serde + bincode) is also written by hand, in
/// `checkpoint::snapshot_refs` (`write_agent_stats`): change the two together (the test
/// `every_agent_stats_field_written_by_hand_is_what_serde_writes` pins them equal).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AgentStats {
    /// Turns that ended, with a reply or an error (a cancelled turn is
    /// not counted: it runs again).
    pub turns: u64,
    /// Model calls made, those of failed turns included.
    pub model_calls: u64,
    /// Tool calls made.
    pub tool_calls: u64,
    /// Prompt tokens read by the model calls.
    pub input_tokens: u64,
    /// Completion tokens written by the model calls.
    pub output_tokens: u64,
    /// What the model calls cost in USD, when at least one of them was
    /// priced (`pricing:` of the model); `None` when none was. (Never
    /// skipped when serialized: checkpoints' binary format cannot skip.)
    #[serde(default)]
    pub cost: Option<f64>,
}

impl AgentStats {
    /// The tokens as a [`Usage`].
    pub fn usage(&self) -> Usage {
        Usage {
            prompt_tokens: self.input_tokens,
            completion_tokens: self.output_tokens,
        }
    }

    /// Input plus output tokens.
    pub fn tokens(&self) -> u64 {
        self.input_tokens + self.output_tokens
    }

    /// The cost in USD, 0 when nothing was priced.
    pub fn cost_usd(&self) -> f64 {
        self.cost.unwrap_or(0.0)
    }

    /// Whether nothing at all was counted.
    pub fn is_empty(&self) -> bool {
        *self == AgentStats::default()
    }

    /// Counts one model call that used `usage` and cost `cost` USD (if
    /// priced).
    pub fn add_model_call(&mut self, usage: Usage, cost: Option<f64>) {
        self.model_calls += 1;
        self.input_tokens += usage.prompt_tokens;
        self.output_tokens += usage.completion_tokens;
        self.add_cost(cost);
    }

    fn add_cost(&mut self, cost: Option<f64>) {
        if let Some(c) = cost {
            self.cost = Some(self.cost.unwrap_or(0.0) + c);
        }
    }

    /// What `self` counted beyond `base` (counters never go down; a
    /// cost that went away reads as none).
    pub(crate) fn since(&self, base: &AgentStats) -> AgentStats {
        AgentStats {
            turns: self.turns.saturating_sub(base.turns),
            model_calls: self.model_calls.saturating_sub(base.model_calls),
            tool_calls: self.tool_calls.saturating_sub(base.tool_calls),
            input_tokens: self.input_tokens.saturating_sub(base.input_tokens),
            output_tokens: self.output_tokens.saturating_sub(base.output_tokens),
            cost: self.cost.map(|c| (c - base.cost_usd()).max(0.0)),
        }
    }
}

impl std::ops::AddAssign for AgentStats {
    fn add_assign(&mut self, rhs: AgentStats) {
        self.turns += rhs.turns;
        self.model_calls += rhs.model_calls;
        self.tool_calls += rhs.tool_calls;
        self.input_tokens += rhs.input_tokens;
        self.output_tokens += rhs.output_tokens;
        self.add_cost(rhs.cost);
    }
}

impl std::fmt::Display for AgentStats {
    /// `3 turns, 4 model calls, 1 tool call, 120 tokens in / 40 out, $0.0012`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = |n: u64| if n == 1 { "" } else { "s" };
        write!(
            f,
            "{} turn{}, {} model call{}, {} tool call{}, {} tokens in / {} out",
            self.turns,
            s(self.turns),
            self.model_calls,
            s(self.model_calls),
            self.tool_calls,
            s(self.tool_calls),
            self.input_tokens,
            self.output_tokens
        )?;
        if let Some(c) = self.cost {
            write!(f, ", {}", format_usd(c))?;
        }
        Ok(())
    }
}

/// A cost in USD for people: `$1.25`, `$0.0123`, `$0.000015` — four
/// decimals at least, and more for a small cost, so that its first two
/// significant digits show (never `$0.0000` for a cost that is not zero).
pub fn format_usd(cost: f64) -> String {
    if cost == 0.0 || !cost.is_finite() {
        return format!("${cost:.4}");
    }
    // Digits after the point up to the second significant one.
    let lead = (-cost.abs().log10()).floor();
    let decimals = if lead.is_finite() && lead > 0.0 {
        (lead as usize + 2).clamp(4, 12)
    } else {
        4
    };
    format!("${cost:.decimals$}")
}

/// What a run spent, in total and per agent. An agent is keyed by its full
/// path (`team/writer`; inside a nested workflow `outer/inner/writer`; an
/// agent used as a tool by its caller's path and its own name), so the
/// stats of a nested run reach the run above agent by agent. `total` is
/// the sum of `agents`.
///
/// Its checkpoint encoding (serde + bincode) is also written by hand, in
/// `checkpoint::snapshot_refs` (`StatsRef`): change the two together (the test
/// `stats_ref_writes_the_stats_it_adds_up_to` pins them equal).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RunStats {
    /// Everything together.
    pub total: AgentStats,
    /// By agent path.
    #[serde(default)]
    pub agents: BTreeMap<String, AgentStats>,
}

impl RunStats {
    /// Adds `stats` under agent `path` (and to the total).
    pub fn add(&mut self, path: &str, stats: AgentStats) {
        if stats.is_empty() {
            return;
        }
        self.total += stats;
        // Most turns are of an agent counted before: no key to allocate.
        match self.agents.get_mut(path) {
            Some(entry) => *entry += stats,
            None => {
                self.agents.insert(path.to_string(), stats);
            }
        }
    }

    /// Adds every agent of `other`.
    pub fn merge(&mut self, other: &RunStats) {
        for (path, stats) in &other.agents {
            self.add(path, *stats);
        }
    }

    /// What `self` counted beyond `base`, agent by agent.
    pub(crate) fn since(&self, base: &RunStats) -> RunStats {
        let mut out = RunStats::default();
        for (path, stats) in &self.agents {
            let before = base.agents.get(path).copied().unwrap_or_default();
            out.add(path, stats.since(&before));
        }
        out
    }
}

/// Where the agents of a turn record what they spend: shared by every
/// context derived from the turn's (an agent used as a tool records under
/// its own path), drained by the run's supervisor when the turn ends. A
/// participant has one turn under way at a time, so one meter per
/// participant serves all its turns. What the participant itself spends
/// is counted in a slot of its own (no map, no key); what agents under it
/// spend (as tools, in nested runs) by their paths.
#[derive(Debug, Clone)]
pub(crate) struct Meter {
    owner: Arc<str>,
    spent: Arc<Mutex<Spent>>,
}

#[derive(Debug, Default)]
struct Spent {
    own: AgentStats,
    /// What agents under the participant spent (as tools, in nested
    /// runs): boxed on first need, as most participants have none — every
    /// participant of every run holds a meter.
    others: Option<Box<RunStats>>,
    /// A nested run handed its spend through the meter (see
    /// [`Meter::record_all`]), even none at all.
    by_run: bool,
    /// Outputs the participant's turn yielded before its reply (see
    /// [`RunContext::yield_output`](crate::RunContext::yield_output)):
    /// kept with the turn's spend, as both belong to the turn under way.
    yielded: Vec<crate::message::Message>,
}

impl Meter {
    /// A meter for the participant at `owner`.
    pub(crate) fn new(owner: Arc<str>) -> Self {
        Meter {
            owner,
            spent: Arc::default(),
        }
    }

    /// Records `stats` spent by the agent at `path`.
    pub(crate) fn record(&self, path: &str, stats: AgentStats) {
        let mut spent = self.lock();
        // The participant's own turns record under the very path the
        // meter was made with: known without reading the string.
        let own = (path.as_ptr() == self.owner.as_ptr() && path.len() == self.owner.len())
            || path == &*self.owner;
        if own {
            spent.own += stats;
        } else {
            spent.others.get_or_insert_default().add(path, stats);
        }
    }

    /// Records everything a nested run spent (nothing, perhaps: a run
    /// resumed with all its spend counted before): the turn is metered,
    /// and the usage its reply carries — the whole nested run's — is not
    /// counted instead (see [`Meter::drain_marked`]).
    pub(crate) fn record_all(&self, stats: &RunStats) {
        self.lock().by_run = true;
        for (path, stats) in &stats.agents {
            self.record(path, *stats);
        }
    }

    /// [`Meter::drain`], and whether a nested run recorded its spend
    /// since the last time (then the turn is metered, whatever it spent:
    /// see [`Meter::record_all`]), under one lock.
    pub(crate) fn drain_marked(&self, f: impl FnMut(&str, AgentStats)) -> (AgentStats, bool) {
        let mut spent = self.lock();
        let by_run = std::mem::take(&mut spent.by_run);
        (Self::drain_locked(&mut spent, f), by_run)
    }

    /// Hands what agents under the participant recorded since the last
    /// drain to `f`, agent by agent, and returns what the participant
    /// itself spent; starts again from zero. The keys stay: the next
    /// turns record without allocating.
    pub(crate) fn drain(&self, f: impl FnMut(&str, AgentStats)) -> AgentStats {
        Self::drain_locked(&mut self.lock(), f)
    }

    /// [`Meter::drain`] with the lock held.
    fn drain_locked(spent: &mut Spent, mut f: impl FnMut(&str, AgentStats)) -> AgentStats {
        if let Some(others) = spent.others.as_mut()
            && !others.total.is_empty()
        {
            others.total = AgentStats::default();
            for (path, stats) in others.agents.iter_mut() {
                let stats = std::mem::take(stats);
                if !stats.is_empty() {
                    f(path, stats);
                }
            }
        }
        std::mem::take(&mut spent.own)
    }

    /// Takes everything recorded since the last drain, the participant's
    /// own spend under its path: what a turn's progress report carries up
    /// (see `progress.rs`), so the run above counts it with the
    /// progress it comes with.
    pub(crate) fn take(&self) -> RunStats {
        let mut out = RunStats::default();
        let own = self.drain(|path, stats| out.add(path, stats));
        out.add(&self.owner, own);
        out
    }

    /// Keeps `message`, yielded by the agent at `path`, as an output of
    /// the participant's turn; `false` (nothing kept) for an agent under
    /// the participant (an agent as a tool, a nested run's), whose outputs
    /// are not the participant's.
    pub(crate) fn yield_output(&self, path: &str, message: crate::message::Message) -> bool {
        if path != &*self.owner {
            return false;
        }
        self.lock().yielded.push(message);
        true
    }

    /// Takes the outputs yielded since the last time (none: no allocation).
    pub(crate) fn take_yielded(&self) -> Vec<crate::message::Message> {
        std::mem::take(&mut self.lock().yielded)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Spent> {
        // A panic while adding numbers leaves them usable.
        self.spent.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn costs_show_their_first_two_significant_digits() {
        assert_eq!(format_usd(0.000015), "$0.000015");
        assert_eq!(format_usd(0.0000153), "$0.000015");
        assert_eq!(format_usd(0.0123), "$0.0123");
        assert_eq!(format_usd(0.5213), "$0.5213");
        assert_eq!(format_usd(1.25), "$1.2500");
        assert_eq!(format_usd(0.0), "$0.0000");
    }

    #[test]
    fn stats_add_up_per_agent_and_in_total_and_cost_only_when_priced() {
        let mut run = RunStats::default();
        let mut a = AgentStats::default();
        a.add_model_call(
            Usage {
                prompt_tokens: 10,
                completion_tokens: 2,
            },
            None,
        );
        run.add("t/a", a);
        assert_eq!(run.total.cost, None);
        let mut b = AgentStats::default();
        b.add_model_call(
            Usage {
                prompt_tokens: 5,
                completion_tokens: 1,
            },
            Some(0.25),
        );
        run.add("t/b", b);
        run.add("t/a", a);
        assert_eq!(run.total.model_calls, 3);
        assert_eq!(run.total.tokens(), 30);
        assert_eq!(run.total.cost, Some(0.25));
        assert_eq!(run.agents["t/a"].input_tokens, 20);
        let later = {
            let mut r = run.clone();
            r.add("t/b", b);
            r
        };
        let delta = later.since(&run);
        assert_eq!(delta.total.model_calls, 1);
        assert_eq!(delta.agents.len(), 1);
        assert_eq!(delta.total.cost, Some(0.25));
    }

    #[test]
    fn a_meter_hands_over_what_was_recorded_once() {
        let meter = Meter::new("team/x".into());
        let s = AgentStats {
            tool_calls: 2,
            ..AgentStats::default()
        };
        meter.clone().record("team/x", s);
        meter.record("team/x/tool", s);
        let drained = |m: &Meter| {
            let mut out = RunStats::default();
            let own = m.drain(|path, s| out.add(path, s));
            out.add("team/x", own);
            out
        };
        let first = drained(&meter);
        assert_eq!(first.agents["team/x"].tool_calls, 2);
        assert_eq!(first.agents["team/x/tool"].tool_calls, 2);
        assert_eq!(first.total.tool_calls, 4);
        assert!(drained(&meter).agents.is_empty());
        // The keys stay for the next turn, their counts back at zero.
        meter.record("team/x/tool", s);
        assert_eq!(drained(&meter).total.tool_calls, 2);
    }
}
