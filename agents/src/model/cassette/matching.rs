//! Which recorded call answers a call made now.
//!
//! A call is made by an agent path (`team/nested_team/agent`) and numbered
//! among that path's calls in the order they start. Replaying, the call
//! takes one of its path's recorded calls not yet used:
//!
//! - **strict** (the default): the first unused one (lowest index) whose
//!   request equals this one. The same index when the run goes as
//!   recorded; when turns of one path run in parallel, whichever starts
//!   first takes the call recorded with its request, so the replay does not
//!   depend on the order the scheduler happens to start them in. No equal
//!   request: an error naming the path and the call, with a diff against
//!   the recorded call of the same index (else the first unused one).
//! - **lenient**: an equal request if there is one, else the unused call
//!   whose request is nearest (most pretty-printed JSON lines in common;
//!   the lowest index on a tie).
//!
//! Cassettes of an older troupe keyed calls by the agent's name: a path
//! with no recorded call at all takes those recorded under the name of
//! the agent making the call.

use std::collections::HashSet;

use super::diff;

/// How a replayed call is matched with a recorded one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ReplayMode {
    /// By position among the path's calls, the request equal (see the
    /// module's doc).
    #[default]
    Strict,
    /// By content: an equal request, else the nearest.
    Lenient,
}

/// A recorded call, as matching sees it.
pub(super) trait Recorded {
    /// The path of the agent that made it.
    fn agent(&self) -> &str;
    /// Its index among that path's calls.
    fn call(&self) -> u64;
    /// What was asked, as compared.
    fn request(&self) -> serde_json::Value;
}

/// The kinds of calls, for messages.
#[derive(Debug, Clone, Copy)]
pub(super) enum Kind {
    Model,
    Tool,
    Agent,
}

impl Kind {
    fn noun(self) -> &'static str {
        match self {
            Kind::Model => "call",
            Kind::Tool => "tool call",
            Kind::Agent => "remote agent turn",
        }
    }
}

/// The index in `entries` of the recorded call answering call `call` of
/// `path` (made by the agent named `name`) asking `now`, among those not
/// in `used`; or the error to stop the run with.
#[allow(clippy::too_many_arguments)]
pub(super) fn pick<T: Recorded>(
    entries: &[T],
    used: &HashSet<usize>,
    path: &str,
    name: &str,
    call: u64,
    now: &serde_json::Value,
    mode: ReplayMode,
    kind: Kind,
) -> Result<usize, String> {
    let key = key_of(entries, path, name);
    let all: Vec<usize> = (0..entries.len())
        .filter(|&i| entries[i].agent() == key)
        .collect();
    let mut free: Vec<usize> = all.iter().copied().filter(|i| !used.contains(i)).collect();
    free.sort_by_key(|&i| entries[i].call());
    let noun = kind.noun();
    if free.is_empty() {
        return Err(format!(
            "cassette: agent `{path}` made {noun} {call}, which is not in the cassette (it holds {} {noun}(s) of `{path}`, all used)",
            all.len()
        ));
    }
    let requests: Vec<(usize, serde_json::Value)> =
        free.iter().map(|&i| (i, entries[i].request())).collect();
    if let Some((i, _)) = requests.iter().find(|(_, r)| r == now) {
        return Ok(*i);
    }
    match mode {
        ReplayMode::Lenient => {
            let now_lines = diff::pretty(now);
            let best = requests
                .iter()
                .map(|(i, r)| (*i, common_lines(&diff::pretty(r), &now_lines)))
                .max_by_key(|(i, n)| (*n, std::cmp::Reverse(entries[*i].call())));
            best.map(|(i, _)| i)
                .ok_or_else(|| format!("cassette: agent `{path}` {noun} {call}: nothing left"))
        }
        ReplayMode::Strict => {
            let (_, recorded) = requests
                .iter()
                .find(|(i, _)| entries[*i].call() == call)
                .unwrap_or(&requests[0]);
            Err(format!(
                "cassette: agent `{path}` {noun} {call}: the request differs from the recorded one:\n{}",
                diff::lines(recorded, now)
            ))
        }
    }
}

/// The key `path`'s calls are recorded under: the path, or for a cassette
/// keyed by agent names, the agent's `name`.
fn key_of<'a, T: Recorded>(entries: &[T], path: &'a str, name: &'a str) -> &'a str {
    if entries.iter().any(|e| e.agent() == path) || !entries.iter().any(|e| e.agent() == name) {
        return path;
    }
    name
}

/// How many lines `a` and `b` have in common (as multisets).
fn common_lines(a: &str, b: &str) -> usize {
    let mut count = std::collections::HashMap::<&str, usize>::new();
    for l in a.lines() {
        *count.entry(l).or_default() += 1;
    }
    b.lines()
        .filter(|l| match count.get_mut(l) {
            Some(n) if *n > 0 => {
                *n -= 1;
                true
            }
            _ => false,
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct E(&'static str, u64, serde_json::Value);
    impl Recorded for E {
        fn agent(&self) -> &str {
            self.0
        }
        fn call(&self) -> u64 {
            self.1
        }
        fn request(&self) -> serde_json::Value {
            self.2.clone()
        }
    }

    fn entries() -> Vec<E> {
        vec![
            E("t/a", 0, json!({"q": "one"})),
            E("t/b", 0, json!({"q": "x"})),
            E("t/a", 1, json!({"q": "two", "n": 1})),
        ]
    }

    #[test]
    fn parallel_calls_of_one_path_match_by_request_whatever_their_order() {
        let e = entries();
        let mut used = HashSet::new();
        // The second recorded call started first this time.
        let i = pick(
            &e,
            &used,
            "t/a",
            "a",
            0,
            &json!({"q": "two", "n": 1}),
            ReplayMode::Strict,
            Kind::Model,
        );
        assert_eq!(i, Ok(2));
        used.insert(2);
        let j = pick(
            &e,
            &used,
            "t/a",
            "a",
            1,
            &json!({"q": "one"}),
            ReplayMode::Strict,
            Kind::Model,
        );
        assert_eq!(j, Ok(0));
        used.insert(0);
        let k = pick(
            &e,
            &used,
            "t/a",
            "a",
            2,
            &json!({"q": "one"}),
            ReplayMode::Strict,
            Kind::Model,
        );
        assert!(
            k.unwrap_err()
                .contains("agent `t/a` made call 2, which is not in the cassette")
        );
    }

    #[test]
    fn strict_names_the_call_and_diffs_lenient_takes_the_nearest() {
        let e = entries();
        let used = HashSet::new();
        let now = json!({"q": "two", "n": 2});
        let err = pick(
            &e,
            &used,
            "t/a",
            "a",
            1,
            &now,
            ReplayMode::Strict,
            Kind::Model,
        )
        .unwrap_err();
        assert!(
            err.contains("agent `t/a` call 1: the request differs"),
            "{err}"
        );
        assert!(
            err.contains("-   \"n\": 1") && err.contains("+   \"n\": 2"),
            "{err}"
        );
        assert_eq!(
            pick(
                &e,
                &used,
                "t/a",
                "a",
                1,
                &now,
                ReplayMode::Lenient,
                Kind::Model
            ),
            Ok(2)
        );
    }

    #[test]
    fn a_cassette_keyed_by_agent_names_still_replays() {
        let e = vec![E("writer", 0, json!(1))];
        let used = HashSet::new();
        assert_eq!(
            pick(
                &e,
                &used,
                "team/step",
                "writer",
                0,
                &json!(1),
                ReplayMode::Strict,
                Kind::Model
            ),
            Ok(0)
        );
    }
}
