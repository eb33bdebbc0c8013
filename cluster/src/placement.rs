//! Where a remote turn runs: finding the live replicas of an agent in its
//! process group and choosing one.

use std::collections::HashMap;
use std::str::FromStr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{LazyLock, Mutex};
use std::time::{Duration, Instant};

use ractor::{ActorCell, ActorStatus};

use crate::{ClusterError, group_name, node_of_host};

/// How a step picks among the live replicas of an agent.
///
/// ```
/// use troupe_cluster::Selection;
/// assert_eq!("least_busy".parse::<Selection>().unwrap(), Selection::LeastBusy);
/// assert_eq!("round_robin".parse::<Selection>().unwrap(), Selection::RoundRobin);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Selection {
    /// Each turn goes to the next replica in turn (by node name): the
    /// calls of a fan-out spread evenly over the nodes.
    #[default]
    RoundRobin,
    /// Each turn goes to the replica with the fewest turns under way, as
    /// this process counts its own calls and as hosts last reported.
    LeastBusy,
}

impl FromStr for Selection {
    type Err = ClusterError;
    fn from_str(s: &str) -> Result<Self, ClusterError> {
        match s {
            "round_robin" | "round-robin" | "spread" => Ok(Selection::RoundRobin),
            "least_busy" | "least-busy" => Ok(Selection::LeastBusy),
            other => Err(ClusterError::Config(format!(
                "unknown replica selection '{other}' (expected round_robin or least_busy)"
            ))),
        }
    }
}

/// Where the turns of a remote participant may run, as a config states it
/// (`placement: spread`, `node: b`).
///
/// ```
/// use troupe_cluster::{Placement, Selection};
/// assert_eq!("spread".parse::<Placement>().unwrap(), Placement::Any(Selection::RoundRobin));
/// assert_eq!("node:b".parse::<Placement>().unwrap(), Placement::Node("b".into()));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Placement {
    /// Any live replica, chosen this way.
    Any(Selection),
    /// Only the replica on this node.
    Node(String),
}

impl Default for Placement {
    fn default() -> Self {
        Placement::Any(Selection::default())
    }
}

impl FromStr for Placement {
    type Err = ClusterError;
    fn from_str(s: &str) -> Result<Self, ClusterError> {
        match s.strip_prefix("node:") {
            Some(node) => {
                crate::check_name("node", node)?;
                Ok(Placement::Node(node.to_string()))
            }
            None => match s {
                "any" => Ok(Placement::default()),
                other => other.parse().map(Placement::Any).map_err(|_| {
                    ClusterError::Config(format!(
                        "unknown placement '{other}' (expected spread, round_robin, least_busy, any or node:NAME)"
                    ))
                }),
            },
        }
    }
}

/// One live replica of an agent.
#[derive(Clone)]
pub(crate) struct Replica {
    pub(crate) cell: ActorCell,
    pub(crate) node: String,
    /// The host actor's name: the key of its counters below.
    pub(crate) id: String,
}

impl std::fmt::Debug for Replica {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Replica({})", self.id)
    }
}

/// What this process knows of a replica's load and health.
#[derive(Debug, Default, Clone, Copy)]
struct Stats {
    /// Calls from this process under way.
    outstanding: u32,
    /// The turns the host last said it had under way.
    reported: u32,
    /// Failed recently: avoided until then while other replicas are live.
    suspect_until: Option<Instant>,
}

static STATS: LazyLock<Mutex<HashMap<String, Stats>>> = LazyLock::new(Default::default);

fn with_stats<R>(f: impl FnOnce(&mut HashMap<String, Stats>) -> R) -> R {
    // A poisoned lock only means another caller panicked mid-update of
    // counters that are advisory anyway.
    f(&mut STATS.lock().unwrap_or_else(|p| p.into_inner()))
}

/// Live replicas of `agent` (on `node` only, if given), by node name.
pub(crate) fn replicas(agent: &str, node: Option<&str>) -> Vec<Replica> {
    let mut out: Vec<Replica> = ractor::pg::get_members(&group_name(agent))
        .into_iter()
        .filter(|c| {
            !matches!(
                c.get_status(),
                ActorStatus::Stopping | ActorStatus::Stopped | ActorStatus::Draining
            )
        })
        .filter_map(|cell| {
            let id = cell.get_name()?;
            let host_node = node_of_host(&id)?.to_string();
            if node.is_some_and(|n| n != host_node) {
                return None;
            }
            Some(Replica {
                cell,
                node: host_node,
                id,
            })
        })
        .collect();
    out.sort_by(|a, b| a.node.cmp(&b.node));
    out
}

/// Picks a replica among `live`, avoiding those that failed recently (and
/// those in `exclude`) while others are there.
pub(crate) fn choose(
    live: &[Replica],
    selection: Selection,
    cursor: &AtomicUsize,
    exclude: &[String],
) -> Option<Replica> {
    if live.is_empty() {
        return None;
    }
    let now = Instant::now();
    let healthy: Vec<&Replica> = with_stats(|stats| {
        live.iter()
            .filter(|r| !exclude.contains(&r.node))
            .filter(|r| {
                stats
                    .get(&r.id)
                    .and_then(|s| s.suspect_until)
                    .is_none_or(|t| t <= now)
            })
            .collect()
    });
    let pool: Vec<&Replica> = if !healthy.is_empty() {
        healthy
    } else {
        // Every replica failed lately: try one anyway (it may be back), but
        // not one this turn already failed on if another exists.
        let others: Vec<&Replica> = live.iter().filter(|r| !exclude.contains(&r.node)).collect();
        if others.is_empty() {
            live.iter().collect()
        } else {
            others
        }
    };
    let turn = cursor.fetch_add(1, Ordering::Relaxed);
    let picked = match selection {
        Selection::RoundRobin => pool[turn % pool.len()],
        Selection::LeastBusy => with_stats(|stats| {
            let busy = |r: &Replica| {
                stats
                    .get(&r.id)
                    .map_or(0, |s| s.outstanding.saturating_add(s.reported))
            };
            let least = pool.iter().map(|r| busy(r)).min().unwrap_or(0);
            let ties: Vec<&&Replica> = pool.iter().filter(|r| busy(r) == least).collect();
            *ties[turn % ties.len()]
        }),
    };
    Some(picked.clone())
}

/// Counts a call to `replica` as under way until dropped.
pub(crate) struct InFlight {
    id: String,
}

impl InFlight {
    pub(crate) fn start(replica: &Replica) -> Self {
        with_stats(|s| s.entry(replica.id.clone()).or_default().outstanding += 1);
        InFlight {
            id: replica.id.clone(),
        }
    }

    /// The host's own count of turns under way.
    pub(crate) fn reported(&self, load: u32) {
        with_stats(|s| s.entry(self.id.clone()).or_default().reported = load);
    }

    /// The call failed because the node is lost: avoid it for a while.
    pub(crate) fn suspect(&self, for_how_long: Duration) {
        with_stats(|s| {
            s.entry(self.id.clone()).or_default().suspect_until =
                Some(Instant::now() + for_how_long)
        });
    }

    /// The call succeeded: the node is fine.
    pub(crate) fn healthy(&self) {
        with_stats(|s| s.entry(self.id.clone()).or_default().suspect_until = None);
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        with_stats(|s| {
            if let Some(stats) = s.get_mut(&self.id) {
                stats.outstanding = stats.outstanding.saturating_sub(1);
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placements_parse() {
        assert_eq!(
            "least_busy".parse::<Placement>().unwrap(),
            Placement::Any(Selection::LeastBusy)
        );
        assert_eq!("any".parse::<Placement>().unwrap(), Placement::default());
        assert!("node:".parse::<Placement>().is_err());
        assert!("sometimes".parse::<Placement>().is_err());
        assert!("fastest".parse::<Selection>().is_err());
    }
}
