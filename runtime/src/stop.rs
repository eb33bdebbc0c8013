//! Stop conditions: when a run should end although agents could go on.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use tokio::sync::Notify;

use crate::message::Message;

/// A handle the caller keeps to stop a run from outside
/// ([`StopCondition::External`]). The run stops gracefully: turns already
/// under way finish, no new turn starts. The handle stays set until
/// [`StopHandle::reset`].
#[derive(Clone, Default)]
pub struct StopHandle {
    inner: Arc<HandleInner>,
}

#[derive(Default)]
struct HandleInner {
    set: AtomicBool,
    notify: Notify,
}

impl fmt::Debug for StopHandle {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("StopHandle")
            .field("set", &self.is_set())
            .finish()
    }
}

impl StopHandle {
    /// A handle that is not set.
    pub fn new() -> Self {
        Self::default()
    }
    /// Asks every run watching this handle to stop.
    pub fn stop(&self) {
        self.inner.set.store(true, Ordering::SeqCst);
        self.inner.notify.notify_waiters();
    }
    /// Whether [`StopHandle::stop`] was called (and not reset since).
    pub fn is_set(&self) -> bool {
        self.inner.set.load(Ordering::SeqCst)
    }
    /// Clears the handle so later runs are not stopped by it.
    pub fn reset(&self) {
        self.inner.set.store(false, Ordering::SeqCst);
    }
    /// Completes once the handle is set.
    pub async fn stopped(&self) {
        loop {
            let notified = self.inner.notify.notified();
            if self.is_set() {
                return;
            }
            notified.await;
        }
    }
}

/// When a run stops. Combine with `|` (any) and `&` (all).
///
/// Content conditions (text mention, source, handoff, custom) look at the
/// messages agents produce; counting conditions (max messages, token budget)
/// count the run's input messages too, as AutoGen does.
///
/// ```
/// use std::time::Duration;
/// use troupe_runtime::StopCondition;
///
/// let stop = StopCondition::text_mention("TERMINATE")
///     | StopCondition::max_messages(20)
///     | StopCondition::timeout(Duration::from_secs(60));
/// assert_eq!(stop.to_string(), "text_mention(\"TERMINATE\") | max_messages(20) | timeout(1m)");
/// ```
#[derive(Clone)]
#[non_exhaustive]
pub enum StopCondition {
    /// After this many messages in the run (inputs included).
    MaxMessages(u64),
    /// When a produced message's text contains `text` (optionally only from
    /// the given sources).
    TextMention {
        /// The text to look for.
        text: String,
        /// Only messages from these sources count; `None` for any.
        sources: Option<Vec<String>>,
    },
    /// When any of these sources produces a message.
    SourceMatch(Vec<String>),
    /// When a message hands off to this target (for example `user`).
    Handoff(String),
    /// When the run has spent this many tokens.
    TokenBudget(u64),
    /// After this many agent turns.
    MaxTurns(u64),
    /// When the run has lasted this long; fires during a long turn too,
    /// cancelling turns under way.
    Timeout(Duration),
    /// When the caller sets the handle.
    External(StopHandle),
    /// When the function says so of a produced message.
    Custom(String, Arc<dyn Fn(&Message) -> bool + Send + Sync>),
    /// When any of these holds.
    Any(Vec<StopCondition>),
    /// When all of these have held (each at some point of the run).
    All(Vec<StopCondition>),
}

impl StopCondition {
    /// Stop after `n` messages.
    pub fn max_messages(n: u64) -> Self {
        StopCondition::MaxMessages(n)
    }
    /// Stop when a produced message mentions `text`.
    pub fn text_mention(text: impl Into<String>) -> Self {
        StopCondition::TextMention {
            text: text.into(),
            sources: None,
        }
    }
    /// Stop when one of `sources` produces a message mentioning `text`.
    pub fn text_mention_from<S: Into<String>>(
        text: impl Into<String>,
        sources: impl IntoIterator<Item = S>,
    ) -> Self {
        StopCondition::TextMention {
            text: text.into(),
            sources: Some(sources.into_iter().map(Into::into).collect()),
        }
    }
    /// Stop when one of `sources` produces a message.
    pub fn source_match<S: Into<String>>(sources: impl IntoIterator<Item = S>) -> Self {
        StopCondition::SourceMatch(sources.into_iter().map(Into::into).collect())
    }
    /// Stop on a handoff to `target`.
    pub fn handoff(target: impl Into<String>) -> Self {
        StopCondition::Handoff(target.into())
    }
    /// Stop once `tokens` have been spent.
    pub fn token_budget(tokens: u64) -> Self {
        StopCondition::TokenBudget(tokens)
    }
    /// Stop after `n` turns.
    pub fn max_turns(n: u64) -> Self {
        StopCondition::MaxTurns(n)
    }
    /// Stop after `d`.
    pub fn timeout(d: Duration) -> Self {
        StopCondition::Timeout(d)
    }
    /// Stop after a humantime duration such as `"30s"` or `"1h"`.
    pub fn timeout_str(s: &str) -> Result<Self, humantime::DurationError> {
        Ok(StopCondition::Timeout(humantime::parse_duration(s)?))
    }
    /// Stop when `handle` is set.
    pub fn external(handle: &StopHandle) -> Self {
        StopCondition::External(handle.clone())
    }
    /// Stop when `f` holds for a produced message.
    pub fn custom(
        name: impl Into<String>,
        f: impl Fn(&Message) -> bool + Send + Sync + 'static,
    ) -> Self {
        StopCondition::Custom(name.into(), Arc::new(f))
    }

    /// The shortest timeout anywhere in the condition.
    pub(crate) fn shortest_timeout(&self) -> Option<Duration> {
        match self {
            StopCondition::Timeout(d) => Some(*d),
            StopCondition::Any(v) | StopCondition::All(v) => {
                v.iter().filter_map(|c| c.shortest_timeout()).min()
            }
            _ => None,
        }
    }

    /// Every external handle in the condition.
    pub(crate) fn external_handles(&self, out: &mut Vec<StopHandle>) {
        match self {
            StopCondition::External(h) => out.push(h.clone()),
            StopCondition::Any(v) | StopCondition::All(v) => {
                v.iter().for_each(|c| c.external_handles(out))
            }
            _ => {}
        }
    }

    fn node_count(&self) -> usize {
        match self {
            StopCondition::Any(v) | StopCondition::All(v) => {
                1 + v.iter().map(|c| c.node_count()).sum::<usize>()
            }
            _ => 1,
        }
    }
}

impl fmt::Display for StopCondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let join = |f: &mut fmt::Formatter<'_>, v: &[StopCondition], op: &str| {
            for (i, c) in v.iter().enumerate() {
                if i > 0 {
                    write!(f, " {op} ")?;
                }
                match c {
                    StopCondition::Any(_) | StopCondition::All(_) => write!(f, "({c})")?,
                    _ => write!(f, "{c}")?,
                }
            }
            Ok(())
        };
        match self {
            StopCondition::MaxMessages(n) => write!(f, "max_messages({n})"),
            StopCondition::TextMention { text, sources } => match sources {
                None => write!(f, "text_mention({text:?})"),
                Some(s) => write!(f, "text_mention({text:?} from {})", s.join(", ")),
            },
            StopCondition::SourceMatch(s) => write!(f, "source_match({})", s.join(", ")),
            StopCondition::Handoff(t) => write!(f, "handoff({t})"),
            StopCondition::TokenBudget(n) => write!(f, "token_budget({n})"),
            StopCondition::MaxTurns(n) => write!(f, "max_turns({n})"),
            StopCondition::Timeout(d) => write!(f, "timeout({})", humantime::format_duration(*d)),
            StopCondition::External(_) => write!(f, "external"),
            StopCondition::Custom(name, _) => write!(f, "custom({name})"),
            StopCondition::Any(v) => join(f, v, "|"),
            StopCondition::All(v) => join(f, v, "&"),
        }
    }
}

impl fmt::Debug for StopCondition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "StopCondition({self})")
    }
}

impl std::ops::BitOr for StopCondition {
    type Output = StopCondition;
    fn bitor(self, rhs: StopCondition) -> StopCondition {
        match (self, rhs) {
            (StopCondition::Any(mut a), StopCondition::Any(b)) => {
                a.extend(b);
                StopCondition::Any(a)
            }
            (StopCondition::Any(mut a), c) => {
                a.push(c);
                StopCondition::Any(a)
            }
            (c, StopCondition::Any(mut b)) => {
                b.insert(0, c);
                StopCondition::Any(b)
            }
            (a, b) => StopCondition::Any(vec![a, b]),
        }
    }
}

impl std::ops::BitAnd for StopCondition {
    type Output = StopCondition;
    fn bitand(self, rhs: StopCondition) -> StopCondition {
        match (self, rhs) {
            (StopCondition::All(mut a), StopCondition::All(b)) => {
                a.extend(b);
                StopCondition::All(a)
            }
            (StopCondition::All(mut a), c) => {
                a.push(c);
                StopCondition::All(a)
            }
            (c, StopCondition::All(mut b)) => {
                b.insert(0, c);
                StopCondition::All(b)
            }
            (a, b) => StopCondition::All(vec![a, b]),
        }
    }
}

/// Which condition stopped a run, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct StopReason {
    /// The condition that held, as written (`max_messages(10)`).
    pub condition: String,
    /// What made it hold.
    pub detail: String,
}

impl fmt::Display for StopReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.condition, self.detail)
    }
}

/// What just happened, for a condition to judge.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Trigger<'a> {
    /// A message entered the run; `produced` is false for inputs.
    Message {
        message: &'a Message,
        produced: bool,
    },
    /// A turn ended.
    Turn,
    /// The run has lasted its shortest timeout.
    Timeout,
    /// An external handle was set.
    External,
}

/// A condition with the counters and latches of one run.
#[derive(Debug, Clone)]
pub(crate) struct StopTracker {
    condition: StopCondition,
    latched: Vec<bool>,
    messages: u64,
    turns: u64,
    tokens: u64,
    timed_out: bool,
}

/// What a [`StopTracker`] has counted, as kept in checkpoints.
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
pub(crate) struct TrackerState {
    latched: Vec<bool>,
    messages: u64,
    turns: u64,
    tokens: u64,
    timed_out: bool,
}

impl StopTracker {
    /// The counters, for a checkpoint.
    pub(crate) fn state(&self) -> TrackerState {
        TrackerState {
            latched: self.latched.clone(),
            messages: self.messages,
            turns: self.turns,
            tokens: self.tokens,
            timed_out: self.timed_out,
        }
    }

    /// Picks up the counting where a checkpoint left it (ignored if it was
    /// taken under another condition's shape).
    pub(crate) fn restore(&mut self, state: TrackerState) {
        if state.latched.len() == self.latched.len() {
            self.latched = state.latched;
        }
        self.messages = state.messages;
        self.turns = state.turns;
        self.tokens = state.tokens;
        self.timed_out = state.timed_out;
    }

    pub(crate) fn new(condition: StopCondition) -> Self {
        StopTracker {
            latched: vec![false; condition.node_count()],
            condition,
            messages: 0,
            turns: 0,
            tokens: 0,
            timed_out: false,
        }
    }

    /// Records what happened; returns the reason if the run should stop.
    pub(crate) fn observe(&mut self, trigger: Trigger<'_>) -> Option<StopReason> {
        match trigger {
            Trigger::Message { message, .. } => {
                self.messages += 1;
                self.tokens += message.usage.map(|u| u.total()).unwrap_or(0);
            }
            Trigger::Turn => self.turns += 1,
            Trigger::Timeout => self.timed_out = true,
            Trigger::External => {}
        }
        let counters = Counters {
            messages: self.messages,
            turns: self.turns,
            tokens: self.tokens,
            timed_out: self.timed_out,
        };
        let mut index = 0;
        eval(
            &self.condition,
            &mut self.latched,
            &mut index,
            &counters,
            &trigger,
        )
    }
}

struct Counters {
    messages: u64,
    turns: u64,
    tokens: u64,
    timed_out: bool,
}

/// Evaluates node `*index` (pre-order numbering) and its subtree, latching
/// what held so that `All` means "each has held at some point".
fn eval(
    cond: &StopCondition,
    latched: &mut [bool],
    index: &mut usize,
    c: &Counters,
    trigger: &Trigger<'_>,
) -> Option<StopReason> {
    let me = *index;
    *index += 1;
    let produced = match trigger {
        Trigger::Message {
            message,
            produced: true,
        } => Some(*message),
        _ => None,
    };
    let reason = |detail: String| {
        Some(StopReason {
            condition: cond.to_string(),
            detail,
        })
    };
    let now = match cond {
        StopCondition::MaxMessages(n) => (c.messages >= *n)
            .then(|| reason(format!("{} messages", c.messages)))
            .flatten(),
        StopCondition::MaxTurns(n) => (c.turns >= *n)
            .then(|| reason(format!("{} turns", c.turns)))
            .flatten(),
        StopCondition::TokenBudget(n) => (c.tokens >= *n)
            .then(|| reason(format!("{} tokens spent", c.tokens)))
            .flatten(),
        StopCondition::Timeout(d) => c
            .timed_out
            .then(|| reason(format!("ran for {}", humantime::format_duration(*d))))
            .flatten(),
        StopCondition::External(h) => h
            .is_set()
            .then(|| reason("stopped by the caller".into()))
            .flatten(),
        StopCondition::TextMention { text, sources } => produced
            .filter(|m| {
                sources
                    .as_ref()
                    .is_none_or(|s| s.iter().any(|s| **s == *m.source))
                    && m.text_content().contains(text.as_str())
            })
            .and_then(|m| reason(format!("'{}' mentioned it", m.source))),
        StopCondition::SourceMatch(sources) => produced
            .filter(|m| sources.iter().any(|s| **s == *m.source))
            .and_then(|m| reason(format!("'{}' spoke", m.source))),
        StopCondition::Handoff(target) => produced
            .filter(|m| m.handoff_target() == Some(target.as_str()))
            .and_then(|m| reason(format!("'{}' handed off to '{target}'", m.source))),
        StopCondition::Custom(_, f) => produced
            .filter(|m| f(m))
            .and_then(|m| reason(format!("held for a message of '{}'", m.source))),
        StopCondition::Any(v) => {
            let mut first = None;
            for child in v {
                // Every child is evaluated so that latches and indexes stay right.
                let r = eval(child, latched, index, c, trigger);
                if first.is_none() {
                    first = r;
                }
            }
            first
        }
        StopCondition::All(v) => {
            let mut all = true;
            let mut details = Vec::new();
            for child in v {
                match eval(child, latched, index, c, trigger) {
                    Some(r) => details.push(r.detail),
                    None => all = false,
                }
            }
            all.then(|| reason(details.join("; "))).flatten()
        }
    };
    if now.is_some() {
        latched[me] = true;
        now
    } else if latched[me] {
        reason("held earlier in the run".into())
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Usage;

    fn produced(m: &Message) -> Trigger<'_> {
        Trigger::Message {
            message: m,
            produced: true,
        }
    }

    #[test]
    fn max_messages_counts_inputs() {
        let mut t = StopTracker::new(StopCondition::max_messages(2));
        let u = Message::user("task");
        assert!(
            t.observe(Trigger::Message {
                message: &u,
                produced: false
            })
            .is_none()
        );
        let r = t.observe(produced(&Message::text("a", "x"))).unwrap();
        assert_eq!(r.condition, "max_messages(2)");
    }

    #[test]
    fn text_mention_ignores_inputs_and_other_sources() {
        let mut t = StopTracker::new(StopCondition::text_mention_from("DONE", ["b"]));
        let u = Message::user("say DONE");
        assert!(
            t.observe(Trigger::Message {
                message: &u,
                produced: false
            })
            .is_none()
        );
        assert!(t.observe(produced(&Message::text("a", "DONE"))).is_none());
        let r = t.observe(produced(&Message::text("b", "DONE!"))).unwrap();
        assert!(r.detail.contains("'b'"));
    }

    #[test]
    fn all_latches_each_part() {
        let mut t =
            StopTracker::new(StopCondition::text_mention("X") & StopCondition::source_match(["c"]));
        assert!(t.observe(produced(&Message::text("a", "X"))).is_none());
        assert!(
            t.observe(produced(&Message::text("b", "nothing")))
                .is_none()
        );
        assert!(t.observe(produced(&Message::text("c", "hello"))).is_some());
    }

    #[test]
    fn handoff_tokens_turns_external() {
        let mut t = StopTracker::new(StopCondition::handoff("user"));
        assert!(
            t.observe(produced(&Message::handoff("a", "b", "")))
                .is_none()
        );
        assert!(
            t.observe(produced(&Message::handoff("a", "user", "")))
                .is_some()
        );

        let mut t = StopTracker::new(StopCondition::token_budget(10));
        let m = Message::text("a", "x").with_usage(Usage {
            prompt_tokens: 6,
            completion_tokens: 5,
        });
        assert!(t.observe(produced(&m)).is_some());

        let mut t = StopTracker::new(StopCondition::max_turns(2));
        assert!(t.observe(Trigger::Turn).is_none());
        assert!(t.observe(Trigger::Turn).is_some());

        let h = StopHandle::new();
        let mut t = StopTracker::new(StopCondition::external(&h) | StopCondition::max_turns(9));
        assert!(t.observe(Trigger::External).is_none());
        h.stop();
        assert_eq!(t.observe(Trigger::External).unwrap().condition, "external");
    }

    #[test]
    fn operators_flatten_and_display() {
        let c =
            StopCondition::max_turns(1) | StopCondition::max_turns(2) | StopCondition::max_turns(3);
        assert!(matches!(&c, StopCondition::Any(v) if v.len() == 3));
        let d = (StopCondition::max_turns(1) | StopCondition::max_turns(2))
            & StopCondition::handoff("u");
        assert_eq!(d.to_string(), "(max_turns(1) | max_turns(2)) & handoff(u)");
        assert!(StopCondition::timeout_str("nope").is_err());
        assert_eq!(
            StopCondition::timeout_str("1h").unwrap().shortest_timeout(),
            Some(Duration::from_secs(3600))
        );
    }
}
