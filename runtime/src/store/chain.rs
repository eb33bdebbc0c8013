//! Chains of checkpoints in a store: a delta loads with the checkpoints
//! back to a whole one, folded (the folding itself is the format's,
//! `checkpoint/fold.rs`); removing checkpoints never leaves a delta
//! without its base ([`keep_bases_before_delete`], [`keep_bases_before_prune`]).

use super::error::StoreError;
use super::traits::CheckpointStore;
use crate::checkpoint::delta::Folded;
pub use crate::checkpoint::fold::fold;
use crate::checkpoint::fold::{apply, check_links, what, whole};
use crate::checkpoint::record::{Checkpoint, CheckpointId, CheckpointKind};

/// Loads checkpoint `id` of a run (the newest when `None`) as one whole
/// checkpoint: a delta comes with its chain, folded. `None` if there is
/// no such checkpoint.
pub async fn load_whole(
    store: &(impl CheckpointStore + ?Sized),
    run_id: &str,
    id: Option<CheckpointId>,
) -> Result<Option<Checkpoint>, StoreError> {
    let found = match id {
        Some(id) => store.load(run_id, &id).await?,
        None => store.latest(run_id).await?,
    };
    match found {
        Some(target) => complete(store, target).await.map(Some),
        None => Ok(None),
    }
}

/// Checkpoint `target` as one whole checkpoint: itself if it is whole,
/// else its chain (from `store`) folded.
pub async fn complete(
    store: &(impl CheckpointStore + ?Sized),
    target: Checkpoint,
) -> Result<Checkpoint, StoreError> {
    match fold_chain(store, &target).await? {
        Some(folded) => whole(&target, &folded),
        None => Ok(target),
    }
}

/// Checkpoint `target`'s chain (from `store`, checked link by link)
/// folded, or `None` if it is whole: what [`complete`] holds before it
/// encodes it again as one payload — a resume reads the state from here.
pub(crate) async fn fold_chain(
    store: &(impl CheckpointStore + ?Sized),
    target: &Checkpoint,
) -> Result<Option<Folded>, StoreError> {
    let run_id = target.run_id.as_str();
    if target.kind() == CheckpointKind::Full {
        return Ok(None);
    }
    let chain = store.chain(run_id, &target.id).await?;
    if chain.last().map(|c| c.id) != Some(target.id) {
        return Err(StoreError::corrupt(
            what(target),
            "its chain does not end with it",
        ));
    }
    check_links(&chain, run_id, &target.id)?;
    let mut folded = Folded::default();
    for cp in &chain {
        apply(&mut folded, cp)?;
    }
    Ok(Some(folded))
}

/// Before checkpoint `id` is deleted: a delta that follows it becomes
/// whole (saved in place), so it loads without it.
pub(crate) async fn keep_bases_before_delete(
    store: &(impl CheckpointStore + ?Sized),
    run_id: &str,
    id: &CheckpointId,
) -> Result<(), StoreError> {
    // A run that cannot be listed (a damaged record) has no chain to
    // keep: the damaged checkpoint may still be deleted.
    let Ok(metas) = store.list(run_id).await else {
        return Ok(());
    };
    for meta in metas.iter().filter(|m| m.parent == Some(*id)) {
        if let Some(cp) = store.load(run_id, &meta.id).await?
            && cp.kind() == CheckpointKind::Delta
            && let Some(whole) = load_whole(store, run_id, Some(cp.id)).await?
        {
            store.save(&whole).await?;
        }
    }
    Ok(())
}

/// Before all but the newest `keep_last` checkpoints are deleted: the
/// oldest one kept becomes whole (saved in place) if it is a delta.
pub(crate) async fn keep_bases_before_prune(
    store: &(impl CheckpointStore + ?Sized),
    run_id: &str,
    keep_last: usize,
) -> Result<(), StoreError> {
    let metas = store.list(run_id).await?;
    let excess = metas.len().saturating_sub(keep_last);
    if excess == 0 || keep_last == 0 {
        return Ok(());
    }
    let oldest_kept = metas[excess].id;
    if let Some(cp) = store.load(run_id, &oldest_kept).await?
        && cp.kind() == CheckpointKind::Delta
        && let Some(whole) = load_whole(store, run_id, Some(oldest_kept)).await?
    {
        store.save(&whole).await?;
    }
    Ok(())
}
