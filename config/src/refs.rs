//! Participant references as a workflow writes them: `agent`, or
//! `agent@node` for an agent hosted on another node of the cluster; and
//! what a name may be.

/// Splits a participant reference: `agent` gives `(agent, None)`,
/// `agent@node` gives `(agent, Some(node))`; a malformed reference (an
/// empty part, two `@`) gives `None`.
pub(crate) fn split_ref(reference: &str) -> Option<(&str, Option<&str>)> {
    match reference.split_once('@') {
        None => Some((reference, None)),
        Some((agent, node)) if !agent.is_empty() && !node.is_empty() && !node.contains('@') => {
            Some((agent, Some(node)))
        }
        Some(_) => None,
    }
}

/// The participant id a reference stands for: the agent's name, without
/// an `@node` part.
pub(crate) fn ref_id(reference: &str) -> &str {
    reference
        .split_once('@')
        .map_or(reference, |(agent, _)| agent)
}

/// Whether `name` can name an agent or a node in a config (`node: NAME`,
/// `agent@NAME`): 1 to 64 ASCII letters, digits, `_` and `-`.
///
/// ```
/// use troupe_config::valid_name;
///
/// assert!(valid_name("node-b_2"));
/// assert!(!valid_name("a b") && !valid_name("") && !valid_name("a@b"));
/// ```
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_split() {
        assert_eq!(split_ref("a"), Some(("a", None)));
        assert_eq!(split_ref("a@b"), Some(("a", Some("b"))));
        for bad in ["a@", "@b", "a@b@c", "@"] {
            assert_eq!(split_ref(bad), None, "{bad}");
        }
        assert_eq!(ref_id("a@b"), "a");
        assert_eq!(ref_id("a"), "a");
    }
}
