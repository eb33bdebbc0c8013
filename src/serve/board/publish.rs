//! A run's publisher: writes what is new of a run this worker runs — its
//! events logged since the last write, and its record when its status or
//! JSON changed — to the board in one transaction, then wakes the other
//! workers. It runs beside the run, never in its way: the run only bumps
//! its change counter, as for the SSE readers of this worker; whatever
//! accumulates while a write is under way goes in the next one.

use std::sync::Arc;
use std::time::Duration;

use super::super::event_log::Logged;
use super::super::run::Run;
use super::super::say;
use super::Board;

/// How long to wait before writing again after a failed write.
const RETRY: Duration = Duration::from_secs(1);

/// Publishes `run` until it is over and everything is written.
pub(super) fn spawn(board: Arc<Board>, run: Arc<Run>) {
    tokio::spawn(async move {
        let mut changes = run.watch();
        let mut written = 0usize;
        let mut last: Option<(String, Option<serde_json::Value>)> = None;
        let mut failing = false;
        loop {
            changes.borrow_and_update();
            let record = board.record(&run);
            let (events, ended) = {
                let inner = run.inner();
                (inner.events.from(written), inner.status().ended())
            };
            // Written out of the run's lock, which its events wait on.
            let events: Vec<Arc<str>> = events.iter().map(Logged::line).collect();
            let key = (record.detail.to_string(), record.webhook.clone());
            let changed = last.as_ref() != Some(&key);
            if changed || !events.is_empty() {
                let first = u64::try_from(written).unwrap_or(u64::MAX);
                let sent = board
                    .shared
                    .publish(&run.id, changed.then_some(&record), first, &events)
                    .await;
                match sent {
                    Ok(()) => {
                        written += events.len();
                        last = Some(key);
                        failing = false;
                    }
                    Err(e) => {
                        if !failing {
                            say(&format!(
                                "troupe serve: run `{}`: cannot write its events for the other workers (trying again): {e}",
                                run.id
                            ));
                        }
                        failing = true;
                        tokio::time::sleep(RETRY).await;
                        continue;
                    }
                }
                // Logged while writing: the next batch, at once.
                continue;
            }
            if ended {
                return;
            }
            if changes.changed().await.is_err() {
                return;
            }
        }
    });
}
