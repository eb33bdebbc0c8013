//! A team's board: the shared record of the workers on its PostgreSQL
//! store, and the runs of other workers followed here. Its own file, so a
//! served team (`team.rs`) holds one without importing the board's routes.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use troupe::store::{BoardRun, RunBoard};

use super::super::run::Run;

/// A team's board, and the runs of other workers followed here.
pub(crate) struct Board {
    /// The shared record.
    pub(crate) shared: Arc<dyn RunBoard>,
    pub(super) mirrors: Mutex<HashMap<String, Arc<Run>>>,
}

impl Board {
    /// The board of the PostgreSQL database at `url`.
    pub(crate) async fn open(url: &str) -> Result<Arc<Board>, String> {
        let shared = open_shared(url).await?;
        Ok(Arc::new(Board {
            shared,
            mirrors: Mutex::default(),
        }))
    }

    pub(super) fn mirrors(&self) -> MutexGuard<'_, HashMap<String, Arc<Run>>> {
        self.mirrors.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `run`'s record as this worker writes it.
    pub(crate) fn record(&self, run: &Run) -> BoardRun {
        let detail = run.detail();
        let inner = run.inner();
        BoardRun {
            id: run.id.clone(),
            team: run.team.clone(),
            session: run.session.clone(),
            worker: self.shared.worker().to_string(),
            status: inner.status().as_str().to_string(),
            started_ms: run.started_ms(),
            detail,
            webhook: inner.webhook.clone(),
            alive: true,
        }
    }
}

#[cfg(feature = "postgres")]
async fn open_shared(url: &str) -> Result<Arc<dyn RunBoard>, String> {
    let board = troupe::store::PostgresBoard::connect(url)
        .await
        .map_err(|e| e.to_string())?;
    Ok(Arc::new(board))
}

#[cfg(not(feature = "postgres"))]
async fn open_shared(_url: &str) -> Result<Arc<dyn RunBoard>, String> {
    Err("this troupe was built without the `postgres` feature".into())
}
