//! The runs started since the server started, by id and in order; the
//! oldest finished ones go first when there are too many.

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use super::error::ApiError;
use super::run::Run;

/// How many finished runs are kept (the oldest go first).
const KEPT: usize = 1000;

/// The runs, by id and in the order they started.
#[derive(Default)]
pub(crate) struct Registry {
    runs: Mutex<Table>,
    counter: AtomicU64,
}

/// The runs by id, and their ids oldest first.
#[derive(Default)]
struct Table {
    map: BTreeMap<String, Arc<Run>>,
    order: VecDeque<String>,
}

impl Registry {
    fn lock(&self) -> MutexGuard<'_, Table> {
        self.runs.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A new run, registered (the oldest finished runs beyond [`KEPT`] go).
    pub(crate) fn create(&self, team: &str, task: &str, session: Option<String>) -> Arc<Run> {
        let n = self.counter.fetch_add(1, Ordering::Relaxed);
        let millis = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        let id = format!("run-{millis}-{n}");
        let run = Run::new(id.clone(), team.to_string(), task.to_string(), session);
        let mut guard = self.lock();
        let Table { map, order } = &mut *guard;
        map.insert(id.clone(), run.clone());
        order.push_back(id);
        if order.len() > KEPT {
            let ended: Vec<String> = order
                .iter()
                .filter(|id| map.get(*id).is_some_and(|r| r.inner().status().ended()))
                .take(order.len() - KEPT)
                .cloned()
                .collect();
            for id in ended {
                map.remove(&id);
                order.retain(|o| *o != id);
            }
        }
        run
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
