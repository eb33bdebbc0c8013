//! Inbox options: [`InboxConfig`], [`SenderFilter`] and [`Overflow`].

use std::collections::BTreeSet;
use std::fmt;
use std::time::Duration;

use crate::error::InboxConfigError;

/// Which senders an inbox accepts.
///
/// `From` conversions let a name, an array or a vector of names stand in for
/// `Only`:
///
/// ```
/// use troupe_router::SenderFilter;
///
/// let filter = SenderFilter::from(["planner", "critic"]);
/// assert!(filter.accepts("critic"));
/// assert!(!filter.accepts("writer"));
/// assert!(SenderFilter::Any.accepts("anyone"));
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub enum SenderFilter {
    /// Every sender.
    #[default]
    Any,
    /// Exactly these senders.
    Only(BTreeSet<String>),
}

impl SenderFilter {
    /// Accepts exactly the given names.
    pub fn only<I, S>(names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Self::Only(names.into_iter().map(Into::into).collect())
    }

    /// Whether a message from `sender` passes.
    #[inline]
    pub fn accepts(&self, sender: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Only(names) => names.contains(sender),
        }
    }

    /// Whether this is [`SenderFilter::Any`].
    pub fn is_any(&self) -> bool {
        matches!(self, Self::Any)
    }
}

impl From<&str> for SenderFilter {
    fn from(name: &str) -> Self {
        Self::only([name])
    }
}

impl From<String> for SenderFilter {
    fn from(name: String) -> Self {
        Self::only([name])
    }
}

impl From<Vec<&str>> for SenderFilter {
    fn from(names: Vec<&str>) -> Self {
        Self::only(names)
    }
}

impl From<Vec<String>> for SenderFilter {
    fn from(names: Vec<String>) -> Self {
        Self::only(names)
    }
}

impl<const N: usize> From<[&str; N]> for SenderFilter {
    fn from(names: [&str; N]) -> Self {
        Self::only(names)
    }
}

impl From<&[&str]> for SenderFilter {
    fn from(names: &[&str]) -> Self {
        Self::only(names.iter().copied())
    }
}

impl From<BTreeSet<String>> for SenderFilter {
    fn from(names: BTreeSet<String>) -> Self {
        Self::Only(names)
    }
}

/// What a full inbox does with one more message.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "schema", derive(serde::Deserialize, schemars::JsonSchema))]
#[cfg_attr(feature = "schema", serde(rename_all = "snake_case"))]
pub enum Overflow {
    /// Evict the oldest message to make room (reported as dropped).
    #[default]
    DropOldest,
    /// Drop the incoming message (reported as dropped).
    DropNewest,
    /// Refuse the incoming message and hand it back to the caller.
    Reject,
}

impl fmt::Display for Overflow {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Self::DropOldest => "drop oldest",
            Self::DropNewest => "drop newest",
            Self::Reject => "reject",
        })
    }
}

/// How one participant's inbox behaves.
///
/// All fields are public; the builder-style methods are shorthand. The default
/// accepts any sender, runs on every message (batch size 1), keeps messages
/// forever, is unbounded, and would drop the oldest message if it had a
/// capacity.
///
/// ```
/// use std::time::Duration;
/// use troupe_router::{InboxConfig, Overflow};
///
/// # fn main() -> Result<(), troupe_router::InboxConfigError> {
/// let config = InboxConfig::new()
///     .senders(["planner"])
///     .batch_size(10)
///     .ttl_str("1h")?
///     .capacity(100)
///     .overflow(Overflow::Reject)
///     .max_wait(Duration::from_secs(30));
/// assert_eq!(config.ttl, Some(Duration::from_secs(3600)));
/// config.validate()?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct InboxConfig {
    /// Which senders the inbox accepts.
    pub senders: SenderFilter,
    /// How many messages one invocation takes; at least 1.
    pub batch_size: usize,
    /// How long after its creation a message is dropped unread; `None` keeps it.
    pub ttl: Option<Duration>,
    /// The most messages the inbox holds; `None` is unbounded. When set, at
    /// least 1 and at least `batch_size`.
    pub capacity: Option<usize>,
    /// What a full inbox does with one more message.
    pub overflow: Overflow,
    /// How long a partial batch waits (from the arrival of its oldest message)
    /// before it is ready anyway; `None` waits until the batch is full or the
    /// caller flushes.
    pub max_wait: Option<Duration>,
}

impl Default for InboxConfig {
    fn default() -> Self {
        Self::new()
    }
}

impl InboxConfig {
    /// The default configuration (see the type's documentation).
    pub const fn new() -> Self {
        Self {
            senders: SenderFilter::Any,
            batch_size: 1,
            ttl: None,
            capacity: None,
            overflow: Overflow::DropOldest,
            max_wait: None,
        }
    }

    /// Accept only these senders (or [`SenderFilter::Any`]).
    pub fn senders(mut self, senders: impl Into<SenderFilter>) -> Self {
        self.senders = senders.into();
        self
    }

    /// Take up to `n` messages per invocation.
    pub fn batch_size(mut self, n: usize) -> Self {
        self.batch_size = n;
        self
    }

    /// Drop messages older than `ttl` (measured from their creation).
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// [`ttl`](Self::ttl) from a humantime string such as `"1h"` or `"30s"`.
    ///
    /// # Errors
    ///
    /// [`InboxConfigError::InvalidDuration`], naming the string, if it does not parse.
    pub fn ttl_str(self, ttl: &str) -> Result<Self, InboxConfigError> {
        Ok(self.ttl(parse_duration("ttl", ttl)?))
    }

    /// Hold at most `n` messages.
    pub fn capacity(mut self, n: usize) -> Self {
        self.capacity = Some(n);
        self
    }

    /// What to do when the inbox is full.
    pub fn overflow(mut self, overflow: Overflow) -> Self {
        self.overflow = overflow;
        self
    }

    /// Let a partial batch run once its oldest message has waited this long.
    pub fn max_wait(mut self, wait: Duration) -> Self {
        self.max_wait = Some(wait);
        self
    }

    /// [`max_wait`](Self::max_wait) from a humantime string such as `"500ms"`.
    ///
    /// # Errors
    ///
    /// [`InboxConfigError::InvalidDuration`], naming the string, if it does not parse.
    pub fn max_wait_str(self, wait: &str) -> Result<Self, InboxConfigError> {
        Ok(self.max_wait(parse_duration("max_wait", wait)?))
    }

    /// Checks the options that cannot work together.
    ///
    /// # Errors
    ///
    /// A batch size or capacity of 0, or a capacity below the batch size.
    pub fn validate(&self) -> Result<(), InboxConfigError> {
        if self.batch_size == 0 {
            return Err(InboxConfigError::ZeroBatchSize);
        }
        match self.capacity {
            Some(0) => Err(InboxConfigError::ZeroCapacity),
            Some(capacity) if capacity < self.batch_size => {
                Err(InboxConfigError::CapacityBelowBatchSize {
                    capacity,
                    batch_size: self.batch_size,
                })
            }
            _ => Ok(()),
        }
    }
}

fn parse_duration(option: &'static str, input: &str) -> Result<Duration, InboxConfigError> {
    humantime::parse_duration(input).map_err(|source| InboxConfigError::InvalidDuration {
        option,
        input: input.to_owned(),
        source,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults() {
        let c = InboxConfig::default();
        assert_eq!(c.senders, SenderFilter::Any);
        assert_eq!(c.batch_size, 1);
        assert_eq!(c.ttl, None);
        assert_eq!(c.capacity, None);
        assert_eq!(c.overflow, Overflow::DropOldest);
        assert_eq!(c.max_wait, None);
        assert_eq!(c.validate(), Ok(()));
    }

    #[test]
    fn ttl_str_parses_humantime() -> Result<(), InboxConfigError> {
        let c = InboxConfig::new().ttl_str("1h")?;
        assert_eq!(c.ttl, Some(Duration::from_secs(3600)));
        let c = InboxConfig::new().max_wait_str("30s")?;
        assert_eq!(c.max_wait, Some(Duration::from_secs(30)));
        Ok(())
    }

    #[test]
    fn bad_duration_names_the_string() {
        let err = InboxConfig::new()
            .ttl_str("an hour")
            .expect_err("not a humantime duration");
        assert!(matches!(
            &err,
            InboxConfigError::InvalidDuration { option: "ttl", input, .. } if input == "an hour"
        ));
        let text = err.to_string();
        assert!(
            text.contains("\"an hour\"") && text.contains("ttl"),
            "{text}"
        );

        let err = InboxConfig::new()
            .max_wait_str("5 parsecs")
            .expect_err("not a humantime duration");
        assert!(err.to_string().contains("\"5 parsecs\""), "{err}");
    }

    #[test]
    fn validation_rules() {
        let zero_batch = InboxConfig::new().batch_size(0);
        assert_eq!(zero_batch.validate(), Err(InboxConfigError::ZeroBatchSize));
        let zero_cap = InboxConfig::new().capacity(0);
        assert_eq!(zero_cap.validate(), Err(InboxConfigError::ZeroCapacity));
        let small = InboxConfig::new().batch_size(5).capacity(4);
        assert_eq!(
            small.validate(),
            Err(InboxConfigError::CapacityBelowBatchSize {
                capacity: 4,
                batch_size: 5
            })
        );
        assert_eq!(
            InboxConfig::new().batch_size(5).capacity(5).validate(),
            Ok(())
        );
    }

    #[test]
    fn sender_filter_conversions() {
        assert!(SenderFilter::from("a").accepts("a"));
        assert!(!SenderFilter::from("a").accepts("b"));
        assert!(SenderFilter::from(String::from("a")).accepts("a"));
        assert!(SenderFilter::from(vec!["a", "b"]).accepts("b"));
        assert!(SenderFilter::from(vec![String::from("b")]).accepts("b"));
        let slice: &[&str] = &["x"];
        assert!(SenderFilter::from(slice).accepts("x"));
        assert!(SenderFilter::from(BTreeSet::from(["y".to_owned()])).accepts("y"));
        assert!(SenderFilter::Any.is_any());
        assert!(!SenderFilter::only(Vec::<String>::new()).accepts(""));
    }

    #[test]
    fn builder_methods_set_fields() {
        let c = InboxConfig::new()
            .senders(["a"])
            .batch_size(3)
            .ttl(Duration::from_secs(1))
            .capacity(9)
            .overflow(Overflow::DropNewest)
            .max_wait(Duration::from_secs(2));
        assert_eq!(
            c,
            InboxConfig {
                senders: SenderFilter::only(["a"]),
                batch_size: 3,
                ttl: Some(Duration::from_secs(1)),
                capacity: Some(9),
                overflow: Overflow::DropNewest,
                max_wait: Some(Duration::from_secs(2)),
            }
        );
        assert_eq!(Overflow::Reject.to_string(), "reject");
    }
}
