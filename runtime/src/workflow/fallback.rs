//! Where a resumed run carries on from when its store is damaged: the
//! store is first made safe to append to (a torn tail cut off), and a
//! newest checkpoint that cannot be read gives way to the newest one
//! before it that can. Both are said as warnings.

use super::snapshot::{self, Snapshot};
use super::spec::Spec;
use crate::context::RunContext;
use crate::error::CheckpointError;
use crate::event::Event;
use crate::store::{Checkpoint, CheckpointId, CheckpointStore};

/// How many older checkpoints a resume tries when the newest is damaged.
const TRIES: usize = 64;

/// Repairs run `run_id`'s storage in `store`, saying so on `ctx`; what
/// was repaired, if anything.
pub(super) async fn repair(
    store: &dyn CheckpointStore,
    run_id: &str,
    ctx: &RunContext,
) -> Result<Option<String>, CheckpointError> {
    let repaired = store.repair(run_id).await?;
    if let Some(text) = &repaired {
        // The store logged the repair already (a warning on stderr).
        ctx.emit_with(|| Event::Warning {
            path: ctx.path().clone(),
            text: text.clone(),
        });
    }
    Ok(repaired)
}

/// The checkpoint to resume run `run_id` from: `id`, or with none the
/// newest that can be read. A newest one that is damaged (its bytes fail
/// their checksum, its chain is broken) is skipped for the newest good one
/// before it, with a warning naming what was skipped; with no good one,
/// the newest one's error stands.
pub(super) async fn load(
    spec: &Spec,
    store: &dyn CheckpointStore,
    run_id: &str,
    id: Option<CheckpointId>,
    ctx: &RunContext,
) -> Result<(Checkpoint, Snapshot), CheckpointError> {
    let repaired = repair(store, run_id, ctx).await?;
    let first = snapshot::load(spec, store, run_id, id).await;
    // A repair that left no whole checkpoint (its first record was the
    // damaged one): the run is damaged, not missing.
    if let (Some(text), Err(CheckpointError::NotFound { .. })) = (&repaired, &first) {
        return Err(CheckpointError::Corrupt {
            run_id: run_id.to_string(),
            id: "log".into(),
            reason: text.clone(),
        });
    }
    if id.is_some() || !first.as_ref().is_err_and(is_damage) {
        return first;
    }
    let metas = store.list(run_id).await?;
    let mut skipped = Vec::new();
    for meta in metas.iter().rev().take(TRIES) {
        match snapshot::load(spec, store, run_id, Some(meta.id)).await {
            Ok(found) => {
                if skipped.is_empty() {
                    // Saved since the first try: nothing was skipped.
                    return Ok(found);
                }
                let why = first
                    .as_ref()
                    .err()
                    .map(|e| e.to_string())
                    .unwrap_or_default();
                warn(
                    ctx,
                    format!(
                        "skipped {} damaged checkpoint(s) of run '{run_id}' ({}), carrying on from checkpoint {} (superstep {}): {why}",
                        skipped.len(),
                        skipped.join(", "),
                        meta.id,
                        meta.superstep
                    ),
                );
                return Ok(found);
            }
            Err(e) if is_damage(&e) => skipped.push(meta.id.to_string()),
            Err(other) => return Err(other),
        }
    }
    first
}

/// Whether a checkpoint failed to load for damage to its bytes.
fn is_damage(e: &CheckpointError) -> bool {
    match e {
        CheckpointError::Corrupt { .. } => true,
        CheckpointError::Store(s) => s.is_corrupt(),
        _ => false,
    }
}

/// A warning, logged (on stderr, from the CLI) and as an event.
fn warn(ctx: &RunContext, text: String) {
    tracing::warn!(target: "troupe::store", "{text}");
    ctx.emit_with(|| Event::Warning {
        path: ctx.path().clone(),
        text,
    });
}
