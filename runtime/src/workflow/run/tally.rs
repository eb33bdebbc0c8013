//! What a run has produced so far — its messages, final response, what
//! it spent, turns, questions to the caller — and the result made of it;
//! and how a turn's spend is folded in.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::SystemTime;

use tokio::time::Instant;

use crate::agent::Reply;
use crate::checkpoint::snapshot_refs::StatsRef;
use crate::message::{Message, Usage};
use crate::resumable::request::InputRequest;
use crate::resumable::status::RunStatus;
use crate::stats::{AgentStats, Meter, RunStats};
use crate::store::CheckpointId;
use crate::thread::Thread;
use crate::workflow::result::RunResult;

/// The run's output and counters.
pub(super) struct Tally {
    /// The final response so far: the last message of the last agent to
    /// speak (of the answering agents, when the workflow names them).
    pub(super) last: Option<Arc<Message>>,
    /// Messages produced in this run, in order.
    pub(super) produced: Vec<Arc<Message>>,
    /// What the run spent, per agent and in total (the one source of its
    /// usage: see [`crate::stats`]) — but for what participants spent
    /// themselves in this run, kept in `own` (see [`Tally::stats`]);
    /// `stats.total` counts everything.
    pub(super) stats: RunStats,
    /// What each participant (by index) spent itself in this run: a slot
    /// per participant, so folding a turn looks nothing up by path.
    /// (Not also kept in path order: a sorted insert per participant was
    /// O(K) each, O(K²) a run of K; a checkpoint sorts what it writes.)
    own: Vec<Option<(Arc<str>, AgentStats)>>,
    /// What `stats` held when this run started (counted on from a
    /// checkpoint or an unfinished run): a nested run hands the run
    /// above only what it spent itself.
    /// Boxed, `None` for nothing (a run started afresh: most runs).
    base: Option<Box<RunStats>>,
    /// Turns taken (with a reply).
    pub(super) turns: u64,
    /// Questions asked of the caller in this run.
    pub(super) waiting: Vec<InputRequest>,
    /// Length of the thread before this run produced anything.
    pub(super) start_len: usize,
    /// When the run started.
    pub(super) started: Instant,
    /// When the run first started, on the wall clock (kept across
    /// resumes).
    pub(super) started_at: SystemTime,
}

impl Default for Tally {
    fn default() -> Self {
        Tally {
            last: None,
            produced: Vec::new(),
            stats: RunStats::default(),
            own: Vec::new(),
            base: None,
            turns: 0,
            waiting: Vec::new(),
            start_len: 0,
            started: Instant::now(),
            started_at: SystemTime::now(),
        }
    }
}

impl Tally {
    /// The run's result: `thread` and `status` with what was produced,
    /// which is handed over; `by_name` as for [`Tally::stats`].
    pub(super) fn result(
        &mut self,
        thread: Thread,
        status: RunStatus,
        run_id: &str,
        checkpoint: Option<CheckpointId>,
        by_name: &[usize],
    ) -> RunResult {
        RunResult {
            thread,
            final_response: self.last.take(),
            messages: std::mem::take(&mut self.produced),
            status,
            usage: self.stats.total.usage(),
            turns: self.turns,
            stats: self.stats(by_name),
            run_id: run_id.to_string(),
            checkpoint,
        }
    }

    /// Folds what a turn of the agent at `path` spent: what its `meter`
    /// recorded, or — when it recorded no model call and no token — the
    /// usage on its reply's messages (an agent that does not meter);
    /// `ended` counts the turn (it ended with a reply or an error);
    /// `reported` says the turn metered spend it reported with its
    /// progress already (see [`Tally::fold_reported`]).
    pub(super) fn fold_turn(
        &mut self,
        index: usize,
        path: &Arc<str>,
        meter: Option<&Meter>,
        reply: Option<&Reply>,
        (ended, reported): (bool, bool),
    ) {
        let mut own = AgentStats {
            turns: u64::from(ended),
            ..AgentStats::default()
        };
        let mut metered = reported;
        if let Some(meter) = meter {
            let stats = &mut self.stats;
            let (mine, by_run) = meter.drain_marked(|at, spent| {
                metered |= spent.model_calls > 0 || spent.tokens() > 0;
                stats.add(at, spent);
            });
            metered |= mine.model_calls > 0 || mine.tokens() > 0;
            metered |= by_run;
            own += mine;
        }
        if !metered && let Some(reply) = reply {
            let usage = reply
                .messages
                .iter()
                .chain(&reply.private)
                .filter_map(|m| m.usage)
                .fold(Usage::default(), |a, b| a + b);
            own.input_tokens = usage.prompt_tokens;
            own.output_tokens = usage.completion_tokens;
        }
        self.add_own(index, path, own);
    }

    /// Folds what participant `index` (at `path`) reported it spent with
    /// its progress, the turn still under way: the participant's own spend
    /// and that of the agents under it.
    pub(super) fn fold_reported(&mut self, index: usize, path: &Arc<str>, spent: &RunStats) {
        let mut own = AgentStats::default();
        for (at, stats) in &spent.agents {
            if at.as_str() == &**path {
                own += *stats;
            } else {
                self.stats.add(at, *stats);
            }
        }
        self.add_own(index, path, own);
    }

    /// Adds `own`, spent by participant `index` (at `path`) itself.
    fn add_own(&mut self, index: usize, path: &Arc<str>, own: AgentStats) {
        if own.is_empty() {
            return;
        }
        self.stats.total += own;
        if self.own.len() <= index {
            self.own.resize(index + 1, None);
        }
        match &mut self.own[index] {
            Some((_, slot)) => *slot += own,
            slot @ None => *slot = Some((path.clone(), own)),
        }
    }

    /// What the run spent, per agent and in total, as [`Tally::stats`]
    /// adds it up, without adding it up (for a checkpoint).
    pub(super) fn stats_ref(&self) -> StatsRef<'_> {
        StatsRef::with_own(
            &self.stats,
            self.own.iter().flatten().map(|(path, own)| (&**path, *own)),
        )
    }

    /// What `stats` holds on top of what this run started with (see
    /// `base`).
    pub(super) fn since_base(&self, stats: &RunStats) -> RunStats {
        match &self.base {
            Some(base) => stats.since(base),
            None => stats.since(&RunStats::default()),
        }
    }

    /// Counts on from `stats` (see `base`).
    pub(super) fn set_base(&mut self, stats: RunStats) {
        self.base = Some(Box::new(stats));
    }

    /// What the run spent, per agent and in total; `by_name` is the
    /// participants' indexes in name order (`Spec::participants_by_name`).
    pub(super) fn stats(&self, by_name: &[usize]) -> RunStats {
        let mut stats = self.stats.clone();
        // In name order, which is their paths' (all under one parent), the
        // map is built in one pass: a search and an insert per participant
        // were most of a wide fan-out's end (K = 1,000: ~1,400
        // instructions a participant).
        let mut own = Vec::with_capacity(by_name.len());
        for &i in by_name {
            if let Some(Some((path, spent))) = self.own.get(i) {
                own.push((String::from(&**path), *spent));
            }
        }
        let own = BTreeMap::from_iter(own);
        if stats.agents.is_empty() {
            stats.agents = own;
        } else {
            for (path, own) in own {
                *stats.agents.entry(path).or_default() += own;
            }
        }
        stats
    }
}
