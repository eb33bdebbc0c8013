//! The runs started since the server started, by id and in order; the
//! oldest finished ones go first when there are more than [`KEPT`] or
//! their records (task, events, response) weigh more than [`KEPT_BYTES`].
//!
//! A run's record is weighed once it has ended: a run tells the registry
//! when its stretch ends (`Run::finish`), and the runs that ended another
//! way (cancelled before they began) are found by a walk over every run
//! made once per as many new runs as there are runs — so a new run costs
//! the same whether 10 or 10,000 are under way.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{SystemTime, UNIX_EPOCH};

use super::error::ApiError;
use super::run::{Ended, Run};

/// How many finished runs are kept (the oldest go first).
const KEPT: usize = 1000;

/// How many bytes of finished runs' records are kept (the oldest go first;
/// the newest finished run is kept whatever its size).
pub(crate) const KEPT_BYTES: usize = 64 << 20;

/// The runs, by id and in the order they started.
#[derive(Default)]
pub(crate) struct Registry {
    runs: Mutex<Table>,
    /// The ids of runs that ended since the last new run, to weigh.
    ended: Ended,
    counter: AtomicU64,
    /// Called with each run [`Registry::create`] makes (the board's
    /// publisher on a shared database, `board/`).
    on_new: OnceLock<OnNew>,
}

/// What is done with each new run.
type OnNew = Box<dyn Fn(&Arc<Run>) + Send + Sync>;

/// The runs by id, and their ids oldest first.
#[derive(Default)]
struct Table {
    map: BTreeMap<String, Arc<Run>>,
    order: VecDeque<String>,
    /// The weight of each finished run's record, measured once it ended.
    weights: BTreeMap<String, usize>,
    /// The sum of `weights`, kept as they come and go (summing them at
    /// every new run was a walk over up to [`KEPT`] of them).
    weighed: usize,
    /// New runs since the last walk over every run.
    since_walk: usize,
}

impl Registry {
    fn lock(&self) -> MutexGuard<'_, Table> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new run, registered (the oldest finished runs beyond [`KEPT`] or
    /// [`KEPT_BYTES`] go).
    pub(crate) fn create(&self, team: &str, task: &str, session: Option<String>) -> Arc<Run> {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        // The worker's tag keeps ids apart across workers sharing one
        // database, which may start runs in the same millisecond.
        let id = format!("run-{millis}-{n}-{}", worker_tag());
        let run = Run::new(id.clone(), team.to_string(), task.to_string(), session);
        run.tell_end(self.ended.clone());
        let ended = std::mem::take(&mut *self.ended.lock().unwrap_or_else(|p| p.into_inner()));
        let mut guard = self.lock();
        let Table {
            map,
            order,
            weights,
            weighed,
            since_walk,
        } = &mut *guard;
        map.insert(id.clone(), run.clone());
        order.push_back(id);
        for id in ended {
            if let Some(r) = map.get(&id)
                && !weights.contains_key(&id)
            {
                let w = r.weight();
                *weighed += w;
                weights.insert(id, w);
            }
        }
        *since_walk += 1;
        if *since_walk >= map.len().max(64) {
            *since_walk = 0;
            for (id, r) in map.iter() {
                if !weights.contains_key(id) && r.inner().status().ended() {
                    let w = r.weight();
                    *weighed += w;
                    weights.insert(id.clone(), w);
                }
            }
        }
        let mut total = order.len();
        let mut finished = weights.len();
        let mut bytes = *weighed;
        let mut gone = Vec::new();
        // How many of the oldest ids were looked at: the ones that go are
        // among them.
        let mut looked = 0;
        for id in order.iter() {
            if (total <= KEPT && bytes <= KEPT_BYTES) || finished <= 1 {
                break;
            }
            looked += 1;
            if let Some(w) = weights.get(id) {
                gone.push(id.clone());
                total -= 1;
                finished -= 1;
                bytes = bytes.saturating_sub(*w);
            }
        }
        if !gone.is_empty() {
            for id in &gone {
                map.remove(id);
                if let Some(w) = weights.remove(id) {
                    *weighed = weighed.saturating_sub(w);
                }
            }
            // Only the ids looked at are walked again (the whole list, at
            // every new run once it was full, was most of a served turn's
            // time past the first [`KEPT`] runs); those kept go back in
            // front, in their order.
            let kept: Vec<String> = order
                .drain(..looked)
                .filter(|o| map.contains_key(o))
                .collect();
            for id in kept.into_iter().rev() {
                order.push_front(id);
            }
        }
        drop(guard);
        if let Some(f) = self.on_new.get() {
            f(&run);
        }
        run
    }

    /// Has `f` called with each run created from now on (set once).
    pub(crate) fn on_new(&self, f: impl Fn(&Arc<Run>) + Send + Sync + 'static) {
        let _ = self.on_new.set(Box::new(f));
    }

    /// Registers run `id` of `team` (of `task`, a turn of `session`),
    /// stored by another worker and taken over here; `None` if this
    /// server already has a run `id`.
    pub(crate) fn adopt(
        &self,
        id: &str,
        team: &str,
        task: &str,
        session: Option<String>,
    ) -> Option<Arc<Run>> {
        let mut guard = self.lock();
        if guard.map.contains_key(id) {
            return None;
        }
        let run = Run::new(id.to_string(), team.to_string(), task.to_string(), session);
        guard.map.insert(id.to_string(), run.clone());
        guard.order.push_back(id.to_string());
        Some(run)
    }

    /// The run `id`, or 404.
    pub(crate) fn get(&self, id: &str) -> Result<Arc<Run>, ApiError> {
        self.lock()
            .map
            .get(id)
            .cloned()
            .ok_or_else(|| ApiError::not_found(format!("no run `{id}`")))
    }

    /// Every run, newest first.
    pub(crate) fn all(&self) -> Vec<Arc<Run>> {
        let guard = self.lock();
        guard
            .order
            .iter()
            .rev()
            .filter_map(|id| guard.map.get(id).cloned())
            .collect()
    }
}

/// Eight hex digits drawn once per process (the standard library's
/// randomly keyed hasher over the pid and the time).
fn worker_tag() -> &'static str {
    use std::hash::{BuildHasher, Hasher};
    static TAG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TAG.get_or_init(|| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u32(std::process::id());
        h.write_u128(
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        format!("{:08x}", h.finish() as u32)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The ids the registry lists, oldest first.
    fn ids(registry: &Registry) -> Vec<String> {
        registry.all().iter().rev().map(|r| r.id.clone()).collect()
    }

    #[test]
    fn the_oldest_finished_runs_go_past_kept_and_running_ones_stay_in_order() {
        let registry = Registry::default();
        let mut made = Vec::new();
        for i in 0..KEPT + 40 {
            let run = registry.create("team", "task", None);
            // Every third of the first 30 runs is still running.
            if i >= 30 || i % 3 != 0 {
                run.finish(Err("done".into()));
            }
            made.push(run);
        }
        let listed = ids(&registry);
        // Each new run past KEPT let the oldest finished one go (the ones
        // ending later are weighed at the next new run: one stays over).
        assert!(listed.len() <= KEPT + 1, "{} kept", listed.len());
        // The runs still running are all there, and everything keeps the
        // order it was made in.
        for (i, run) in made.iter().enumerate().take(30) {
            if i % 3 == 0 {
                assert!(listed.contains(&run.id), "running run {i} went");
            }
        }
        let order: Vec<usize> = listed
            .iter()
            .map(|id| made.iter().position(|r| &r.id == id).unwrap())
            .collect();
        assert!(order.windows(2).all(|w| w[0] < w[1]), "{order:?}");
        // The newest are all kept; what went is the oldest finished.
        assert!(
            made[made.len() - KEPT + 20..]
                .iter()
                .all(|r| listed.contains(&r.id))
        );
        assert!(!listed.contains(&made[1].id));
        // The order holds every run the registry has, and no other.
        let table = registry.lock();
        assert_eq!(table.order.len(), table.map.len());
        assert_eq!(listed.len(), table.map.len());
    }
}
