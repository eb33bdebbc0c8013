//! [`deserialize_all`]: deserialize, and on an error record it, remove the
//! node at fault and try again, so every error is reported at once.

use serde::de::DeserializeOwned;

use super::error::DeError;
use super::node::{Collector, NodeDe};
use crate::tree::{FieldPath, Node};

/// Deserializes a `T` from the tree, reporting every error found: unknown
/// fields as they are met, other errors by removing the node at fault and
/// trying again. Returns the value (if what remained deserialized), every
/// error, and the paths removed on the way.
pub(crate) fn deserialize_all<T: DeserializeOwned>(
    tree: &Node,
) -> (Option<T>, Vec<DeError>, Vec<FieldPath>) {
    let mut tree = tree.clone();
    let mut errors: Vec<DeError> = Vec::new();
    let mut removed: Vec<FieldPath> = Vec::new();
    // Each round removes a node, so this ends; the cap bounds the work on
    // a file with thousands of errors.
    for _ in 0..ROUNDS {
        let items = removed
            .iter()
            .filter(|p| matches!(p.0.last(), Some(crate::tree::Seg::Index(_))))
            .cloned()
            .collect();
        let collector = Collector::skipping(items);
        let result = T::deserialize(NodeDe::new(&tree, FieldPath::root(), &collector));
        for e in collector.into_unknown() {
            if !errors.contains(&e) {
                errors.push(e);
            }
        }
        match result {
            Ok(value) => return (Some(value), capped(errors, true), removed),
            Err(e) => {
                let mut path = e.path.clone().unwrap_or_default();
                // A node already removed (a list item left as null) that
                // fails again takes its parent with it; its error was
                // reported the first time.
                let again = removed.contains(&path);
                while removed.contains(&path) {
                    match path.0.pop() {
                        Some(_) => {}
                        None => return (None, capped(errors, true), removed),
                    }
                }
                // "missing field x" after we removed x is our own doing: the
                // first error already said what was wrong with x.
                let consequence = e
                    .missing
                    .as_ref()
                    .is_some_and(|m| removed.iter().any(|r| *r == path.key(m.clone())));
                if !consequence && !again && !errors.contains(&e) {
                    errors.push(e);
                }
                if !tree.remove(&path) {
                    return (None, capped(errors, true), removed);
                }
                removed.push(path);
            }
        }
    }
    (None, capped(errors, false), removed)
}

/// Rounds of removal at most: each removes one node at fault, and each
/// deserializes the whole tree again.
const ROUNDS: usize = 3 * crate::error::MAX_DIAGNOSTICS;

/// The errors, and when the rounds ran out before every node at fault
/// was removed (`complete` false), one more that says so.
fn capped(mut errors: Vec<DeError>, complete: bool) -> Vec<DeError> {
    if !complete {
        let mut note = DeError::new(format!(
            "checking stopped after {ROUNDS} problems in the structure; there may be more after this one"
        ));
        note.at = errors.last().and_then(|e| e.at);
        errors.push(note);
    }
    errors
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::{ROUNDS, deserialize_all};
    use crate::tree;

    /// `n` entries whose values are not numbers.
    fn bad_entries(n: usize) -> tree::Node {
        let text: String = (0..n).map(|i| format!("k{i}: x\n")).collect();
        tree::parse(&text).unwrap()
    }

    #[test]
    fn every_error_is_found_up_to_the_cap_and_the_cap_is_said() {
        let (value, errors, removed) =
            deserialize_all::<BTreeMap<String, u32>>(&bad_entries(ROUNDS - 1));
        assert!(value.is_some());
        assert_eq!(errors.len(), ROUNDS - 1);
        assert_eq!(removed.len(), ROUNDS - 1);

        let (value, errors, _) = deserialize_all::<BTreeMap<String, u32>>(&bad_entries(ROUNDS + 5));
        assert!(value.is_none());
        assert_eq!(errors.len(), ROUNDS + 1);
        let last = &errors[ROUNDS];
        assert!(
            last.message
                .contains("checking stopped after 1536 problems"),
            "{}",
            last.message
        );
        assert_eq!(last.at, errors[ROUNDS - 1].at);
    }
}
