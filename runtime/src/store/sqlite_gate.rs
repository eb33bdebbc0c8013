//! One blocking task at a time on a [`SqliteStore`]'s connection.
//!
//! The store has one connection behind a mutex, and its work runs on
//! tokio's blocking pool. Handing every operation to the pool at once
//! parks as many pool threads on that mutex as there are operations in
//! flight: at 1,000 served sessions on one store, ~400 threads, each with
//! its stack and its allocator's heap (~400 MiB of RSS in all), all waking
//! in turn for one connection. The
//! gate queues the operations as futures instead (a fair semaphore, first
//! come first served) and lets one through to the pool at a time: the same
//! order of work on the connection, one thread.
//!
//! [`SqliteStore`]: super::SqliteStore

use std::sync::Arc;

use tokio::sync::Semaphore;
use tokio::task::JoinError;

/// The queue in front of a store's connection (cloned with the store).
#[derive(Debug, Clone)]
pub(super) struct Gate(Arc<Semaphore>);

impl Gate {
    /// A gate letting one blocking task through at a time.
    pub(super) fn new() -> Self {
        Gate(Arc::new(Semaphore::new(1)))
    }

    /// Runs `f` on the blocking pool once the tasks queued before it are
    /// done. A caller that stops waiting leaves its place; a task already
    /// running keeps its place until it ends.
    pub(super) async fn run<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> Result<T, JoinError> {
        // The semaphore is never closed, so the permit is always given.
        let permit = self.0.clone().acquire_owned().await.ok();
        tokio::task::spawn_blocking(move || {
            let _permit = permit;
            f()
        })
        .await
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn one_task_at_a_time_in_the_order_they_came() {
        let gate = Gate::new();
        let inside = Arc::new(AtomicUsize::new(0));
        let order = Arc::new(std::sync::Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..64 {
            let (gate, inside, order) = (gate.clone(), inside.clone(), order.clone());
            tasks.push(async move {
                gate.run(move || {
                    assert_eq!(inside.fetch_add(1, Ordering::SeqCst), 0, "two tasks inside");
                    std::thread::sleep(std::time::Duration::from_micros(200));
                    order.lock().unwrap().push(i);
                    inside.fetch_sub(1, Ordering::SeqCst);
                })
                .await
            });
        }
        // Polled in order, so queued in order.
        for t in futures::future::join_all(tasks).await {
            t.unwrap();
        }
        assert_eq!(*order.lock().unwrap(), (0..64).collect::<Vec<_>>());
    }
}
