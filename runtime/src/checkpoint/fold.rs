//! Folding a chain of checkpoints (oldest first, the first whole) into
//! one whole checkpoint, and checking its links. The stores walk their
//! chains (`store/chain.rs`) and fold them with these.

use super::delta::{ChainPayload, Folded};
use super::record::{Checkpoint, CheckpointId, CheckpointKind};
use crate::store::StoreError;

/// Names a checkpoint in errors.
pub(crate) fn what(cp: &Checkpoint) -> String {
    format!("checkpoint {} of run '{}'", cp.id, cp.run_id)
}

/// Applies one checkpoint of a chain to `folded`.
pub(crate) fn apply(folded: &mut Folded, cp: &Checkpoint) -> Result<(), StoreError> {
    let (delta, payload) = ChainPayload::decode(&cp.payload, cp.format_version)
        .map_err(|e| StoreError::corrupt(what(cp), e.to_string()))?;
    folded.apply(delta, payload);
    Ok(())
}

/// One whole checkpoint equal to the end of `chain` (oldest first, the
/// first whole): the last one's metadata with the folded payload. A
/// chain of one whole checkpoint is that checkpoint.
pub fn fold(chain: &[Checkpoint]) -> Result<Option<Checkpoint>, StoreError> {
    let Some(last) = chain.last() else {
        return Ok(None);
    };
    if last.kind() == CheckpointKind::Full {
        return Ok(Some(last.clone()));
    }
    let mut folded = Folded::default();
    for cp in chain {
        apply(&mut folded, cp)?;
    }
    whole(last, &folded).map(Some)
}

/// A whole checkpoint with `like`'s metadata holding `folded`.
pub(crate) fn whole(like: &Checkpoint, folded: &Folded) -> Result<Checkpoint, StoreError> {
    let payload = folded
        .to_payload()
        .encode(false, like.format_version)
        .map_err(|source| StoreError::Encode {
            what: what(like),
            source,
        })?;
    let mut cp = like.clone();
    cp.checksum = crate::checkpoint::record::checksum(&payload);
    cp.payload = payload;
    Ok(cp)
}

/// Checks that `chain` (oldest first) starts whole and that each link
/// names the one before as its parent; `target` names it in errors.
pub(crate) fn check_links(
    chain: &[Checkpoint],
    run_id: &str,
    target: &CheckpointId,
) -> Result<(), StoreError> {
    let broken = |reason: String| {
        StoreError::corrupt(format!("checkpoint {target} of run '{run_id}'"), reason)
    };
    match chain.first() {
        Some(first) if first.kind() == CheckpointKind::Delta => {
            return Err(broken(format!(
                "its chain needs checkpoint {}, which is not stored",
                first.parent.map_or_else(|| "?".into(), |p| p.to_string())
            )));
        }
        _ => {}
    }
    for pair in chain.windows(2) {
        if pair[1].kind() == CheckpointKind::Delta && pair[1].parent != Some(pair[0].id) {
            return Err(broken(format!(
                "checkpoint {} follows {:?}, not {}",
                pair[1].id, pair[1].parent, pair[0].id
            )));
        }
    }
    Ok(())
}
