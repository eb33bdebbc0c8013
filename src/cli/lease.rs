//! One owner per run on the command line: `troupe run` takes the run's
//! lease in the config's store before it runs it, and refuses (exit 2) a
//! run another process holds, naming the holder, or a `--run-id` that
//! would silently start a stored run over (`--replace` says to).

use troupe::config::Built;
use troupe::store::{LeaseError, RunLease};

use super::{FAILED, INVALID, store};

/// Takes run `run_id`'s lease in `built`'s store (none without a store).
/// `named`: the run id was given with `--run-id` for a new run, so a
/// stored run of that id is refused unless `replace`, and dropped with it.
pub(crate) async fn claim(
    named: bool,
    replace: bool,
    built: &Built,
    run_id: &str,
) -> Result<Option<RunLease>, u8> {
    let Some(store) = &built.store else {
        return Ok(None);
    };
    let lease = match store.leases.acquire(run_id).await {
        Ok(lease) => lease,
        Err(e @ LeaseError::Held { .. }) => {
            eprintln!(
                "troupe run: {e}; one process runs a run at a time: wait for it to end, or stop it (a holder that died is taken over)"
            );
            return Err(INVALID);
        }
        Err(e) => {
            eprintln!(
                "troupe run: cannot take the lease on run `{run_id}` in the {}: {e}",
                store::describe(store)
            );
            return Err(FAILED);
        }
    };
    if !named {
        return Ok(Some(lease));
    }
    // Under the lease: no other process starts or resumes it meanwhile.
    let stored = match store.checkpoints.list(run_id).await {
        Ok(list) => !list.is_empty(),
        Err(e) => {
            eprintln!(
                "troupe run: cannot read run `{run_id}` in the {}: {e}",
                store::describe(store)
            );
            return Err(FAILED);
        }
    };
    if !stored {
        return Ok(Some(lease));
    }
    if !replace {
        eprintln!(
            "troupe run: run `{run_id}` already exists in the {}; `--resume {run_id}` carries it on, `--replace` starts it over (dropping its checkpoints and the questions it waits on)",
            store::describe(store)
        );
        return Err(INVALID);
    }
    if let Err(e) = store.checkpoints.prune(run_id, 0).await {
        eprintln!(
            "troupe run: --replace: cannot drop run `{run_id}` from the {}: {e}",
            store::describe(store)
        );
        return Err(FAILED);
    }
    Ok(Some(lease))
}
