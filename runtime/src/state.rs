//! Run state: string values a run keeps beside its conversation (as
//! Google ADK's session state), changed only through what turns give
//! back, and kept in the thread so that it survives checkpoints, sessions
//! and processes.
//!
//! - [`StateSnapshot`]: the state as a turn sees it — read-only, taken
//!   when the turn starts ([`RunContext::state`](crate::RunContext::state)).
//! - [`StateDelta`]: what a turn changes ([`Reply::with_state`](crate::Reply::with_state));
//!   the run's supervisor applies it when it applies the reply.
//!
//! Values are text (JSON text if they are structured): the checkpoint
//! codec cannot carry free-form JSON values.

use std::collections::BTreeMap;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// A read-only snapshot of a run's state: keys to text values, cheap to
/// clone (one shared map).
///
/// A turn's [`RunContext::state`](crate::RunContext::state) holds the state
/// as it was when the turn started; what the turn changes goes back in its
/// [`Reply`](crate::Reply) as a [`StateDelta`]. Derefs to the map.
///
/// ```
/// use troupe_runtime::{state::StateDelta, state::StateSnapshot};
///
/// let mut state = StateSnapshot::default();
/// state.apply(&StateDelta::new().set("topic", "actors"));
/// assert_eq!(state.get("topic"), Some("actors"));
/// assert_eq!(state.len(), 1);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StateSnapshot(Arc<BTreeMap<String, String>>);

impl StateSnapshot {
    /// The value of `key`, if set.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    /// Applies `delta`: its values set, its removals removed. Copies the
    /// map only if another snapshot still shares it and `delta` changes
    /// something.
    pub fn apply(&mut self, delta: &StateDelta) {
        if delta.is_empty() {
            return;
        }
        let map = Arc::make_mut(&mut self.0);
        for (k, v) in &delta.0 {
            match v {
                Some(v) => {
                    map.insert(k.clone(), v.clone());
                }
                None => {
                    map.remove(k);
                }
            }
        }
    }

    /// What changed from `base` to this snapshot, as a delta that turns
    /// `base` into it.
    ///
    /// ```
    /// use troupe_runtime::{state::StateDelta, state::StateSnapshot};
    ///
    /// let mut base = StateSnapshot::default();
    /// base.apply(&StateDelta::new().set("a", "1").set("b", "2"));
    /// let mut now = base.clone();
    /// now.apply(&StateDelta::new().set("a", "3").remove("b"));
    /// let delta = now.changes_since(&base);
    /// assert_eq!(delta, StateDelta::new().set("a", "3").remove("b"));
    /// base.apply(&delta);
    /// assert_eq!(base, now);
    /// ```
    pub fn changes_since(&self, base: &StateSnapshot) -> StateDelta {
        if Arc::ptr_eq(&self.0, &base.0) {
            return StateDelta::default();
        }
        let mut delta = StateDelta::default();
        for (k, v) in self.0.iter() {
            if base.0.get(k) != Some(v) {
                delta.0.insert(k.clone(), Some(v.clone()));
            }
        }
        for k in base.0.keys() {
            if !self.0.contains_key(k) {
                delta.0.insert(k.clone(), None);
            }
        }
        delta
    }

    /// Whether two snapshots share one map (so nothing changed between
    /// them); cheaper than comparing them.
    pub fn same_as(&self, other: &StateSnapshot) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

impl Deref for StateSnapshot {
    type Target = BTreeMap<String, String>;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl From<BTreeMap<String, String>> for StateSnapshot {
    fn from(map: BTreeMap<String, String>) -> Self {
        StateSnapshot(Arc::new(map))
    }
}

impl<K: Into<String>, V: Into<String>> FromIterator<(K, V)> for StateSnapshot {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        StateSnapshot(Arc::new(
            iter.into_iter()
                .map(|(k, v)| (k.into(), v.into()))
                .collect(),
        ))
    }
}

/// What one turn changes in its run's state: keys set to a value, or
/// removed (`None`). The last change of a key wins.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct StateDelta(BTreeMap<String, Option<String>>);

impl StateDelta {
    /// A delta changing nothing.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets `key` to `value`.
    pub fn set(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.0.insert(key.into(), Some(value.into()));
        self
    }

    /// Removes `key`.
    pub fn remove(mut self, key: impl Into<String>) -> Self {
        self.0.insert(key.into(), None);
        self
    }

    /// Adds `other`'s changes; where both change a key, `other`'s wins.
    pub fn merge(&mut self, other: StateDelta) {
        self.0.extend(other.0);
    }

    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// The changes by key: `Some(value)` sets, `None` removes.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Option<&str>)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v.as_deref()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn applying_copies_a_shared_map_only_when_it_changes() {
        let base: StateSnapshot = [("a", "1")].into_iter().collect();
        let mut next = base.clone();
        next.apply(&StateDelta::new());
        assert!(next.same_as(&base));
        next.apply(&StateDelta::new().set("b", "2"));
        assert!(!next.same_as(&base));
        assert_eq!(base.len(), 1, "the earlier snapshot is untouched");
        assert_eq!(next.get("b"), Some("2"));
        assert!(next.changes_since(&next.clone()).is_empty());
    }

    #[test]
    fn both_round_trip_through_the_codec_and_json() {
        let state: StateSnapshot = [("k", "{\"x\": 1}")].into_iter().collect();
        let delta = StateDelta::new().set("a", "b").remove("c");
        let back: StateSnapshot =
            crate::checkpoint::codec::decode(&crate::checkpoint::codec::encode(&state).unwrap())
                .unwrap();
        assert_eq!(back, state);
        let back: StateDelta =
            crate::checkpoint::codec::decode(&crate::checkpoint::codec::encode(&delta).unwrap())
                .unwrap();
        assert_eq!(back, delta);
        let json = serde_json::to_string(&delta).unwrap();
        assert_eq!(json, r#"{"a":"b","c":null}"#);
    }
}
