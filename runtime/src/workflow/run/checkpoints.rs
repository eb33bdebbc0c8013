//! Checkpointing a run: when one is due, and saving it — the snapshot
//! encoded, stored under the run's id after the one before, and reported.
//! A checkpoint that cannot be saved fails the run, or, if its store says
//! so ([`SaveErrors::Warn`]), is a warning and the run goes on.
//!
//! A nested run under a run that checkpoints has no store: at the same
//! points it reports its thread (its counters inside) to the run above,
//! which checkpoints in turn (see `progress.rs`).

use std::sync::Arc;

use crate::checkpoint::snapshot_delta::{Counters, DeltaWriter, TreeView};
use crate::context::RunContext;
use crate::event::Event;
use crate::progress::Progress;
use crate::store::{Checkpoint, CheckpointId, CheckpointStore, Durability, SaveErrors, StoreError};
use crate::thread::Thread;

/// A checkpoint that could not be saved, the store saying to fail.
pub(super) struct NotSaved {
    /// The run.
    pub(super) run_id: String,
    /// Why.
    pub(super) error: StoreError,
    /// The last checkpoint saved before.
    pub(super) last_saved: Option<CheckpointId>,
}

/// The checkpoints of one run.
pub(super) struct Checkpointer {
    /// Where they go (top-level runs of a workflow with a store only).
    store: Option<Arc<dyn CheckpointStore>>,
    /// Where a nested run reports them instead (when the run above
    /// checkpoints).
    progress: Option<Progress>,
    /// A checkpoint is due at the next chance (a nested run reported, or
    /// a nested router-only run completed a turn).
    due: bool,
    run_id: String,
    /// The last checkpoint saved (or resumed from).
    parent: Option<CheckpointId>,
    /// The run's delivery count at the last checkpoint.
    delivered_at: u64,
    /// Something besides deliveries happened since the last checkpoint.
    changed: bool,
    /// The last checkpoint records how the run ended (so `troupe runs`
    /// sees the status without a checkpoint of its own).
    ended: bool,
    /// What the checkpoints so far hold, so the next is a delta. Made at
    /// the first checkpoint: most runs take none, and every run's state
    /// held one.
    writer: Option<Box<DeltaWriter>>,
    /// Checkpoints are saved only when the run stops ([`Durability::Exit`]).
    at_exit_only: bool,
}

impl Checkpointer {
    /// Checkpoints of run `run_id` into `store`, following `parent`, or
    /// reported through `progress`.
    /// `durability` overrides the store's own (see [`Durability`]).
    pub(super) fn new(
        store: Option<Arc<dyn CheckpointStore>>,
        progress: Option<Progress>,
        run_id: String,
        parent: Option<CheckpointId>,
        durability: Option<Durability>,
    ) -> Self {
        let at_exit_only = store
            .as_ref()
            .is_some_and(|s| durability.unwrap_or_else(|| s.durability()) == Durability::Exit);
        Checkpointer {
            writer: None,
            at_exit_only,
            store,
            progress,
            due: false,
            run_id,
            parent,
            delivered_at: 0,
            changed: true,
            ended: false,
        }
    }

    /// The run's id.
    pub(super) fn run_id(&self) -> &str {
        &self.run_id
    }

    /// The last checkpoint saved or resumed from.
    pub(super) fn parent(&self) -> Option<CheckpointId> {
        self.parent
    }

    /// Whether checkpoints are taken at all (saved or reported).
    #[inline]
    pub(super) fn enabled(&self) -> bool {
        self.store.is_some() || self.progress.is_some()
    }

    /// Whether checkpoints are saved in a store.
    #[inline]
    pub(super) fn stores(&self) -> bool {
        self.store.is_some()
    }

    /// Whether checkpoints are saved only when the run stops.
    #[inline]
    pub(super) fn at_exit_only(&self) -> bool {
        self.at_exit_only
    }

    /// Whether this is a nested run reporting its progress.
    #[inline]
    pub(super) fn reports(&self) -> bool {
        self.progress.is_some()
    }

    /// Makes a checkpoint due at the next chance.
    #[inline]
    pub(super) fn request(&mut self) {
        self.due = true;
    }

    /// Whether a checkpoint was made due, clearing it.
    #[inline]
    pub(super) fn take_due(&mut self) -> bool {
        std::mem::take(&mut self.due)
    }

    /// Notes that the run's state changed.
    #[inline]
    pub(super) fn touch(&mut self) {
        self.changed = true;
    }

    /// Whether `every` deliveries have been made since the last checkpoint,
    /// the run having made `delivered` in all.
    #[inline]
    pub(super) fn due_every(&self, every: Option<u64>, delivered: u64) -> bool {
        every.is_some_and(|n| delivered - self.delivered_at >= n)
    }

    /// Whether the run's end needs a checkpoint: something changed since
    /// the last one, there is none yet, or the last one does not say how
    /// the run ended.
    pub(super) fn due_at_end(&self, delivered: u64) -> bool {
        self.changed || delivered != self.delivered_at || self.parent.is_none() || !self.ended
    }

    /// The run carries on from a checkpoint that records how it ended, and
    /// will end so again without changing anything: that checkpoint stays
    /// the last one (`delivered`: the deliveries its restored inboxes
    /// made), rather than a copy of it being saved at every resume.
    pub(super) fn resumed_ended(&mut self, delivered: u64) {
        self.delivered_at = delivered;
        self.changed = false;
        self.ended = true;
    }

    /// Reports `thread` (put together with the run's counters) to the run
    /// above, the run having made `delivered` deliveries.
    pub(super) fn report(&mut self, thread: Thread, delivered: u64) {
        if let Some(progress) = &self.progress {
            self.delivered_at = delivered;
            self.changed = false;
            progress.report(thread);
        }
    }

    /// Encodes the run's thread tree `tree` and `counters` (as a delta
    /// against the last checkpoint saved, if any) and saves them as the
    /// checkpoint after superstep `superstep` of a workflow of topology
    /// `topology`. A failure is the run's to fail with, or with
    /// [`SaveErrors::Warn`] a warning; the next checkpoint is then whole.
    pub(super) async fn save(
        &mut self,
        ctx: &RunContext,
        tree: &TreeView<'_>,
        counters: &Counters<'_>,
        superstep: u64,
        topology: u64,
        delivered: u64,
    ) -> Result<(), NotSaved> {
        let Some(store) = self.store.clone() else {
            return Ok(());
        };
        self.delivered_at = delivered;
        self.changed = false;
        self.ended = counters.status.is_some();
        let saved = match self.writer.get_or_insert_default().encode(tree, counters) {
            Ok((payload, _delta)) => {
                let bytes = payload.len();
                let cp = Checkpoint::new(
                    self.run_id.clone(),
                    self.parent,
                    superstep,
                    topology,
                    payload,
                );
                store.save(&cp).await.map(|_| (cp.id, bytes))
            }
            Err(source) => Err(StoreError::Encode {
                what: format!("a checkpoint of run '{}'", self.run_id),
                source,
            }),
        };
        match saved {
            Ok((id, bytes)) => {
                self.parent = Some(id);
                ctx.emit_with(|| Event::CheckpointSaved {
                    path: ctx.path().clone(),
                    run_id: self.run_id.clone(),
                    checkpoint: id.to_string(),
                    superstep,
                    bytes,
                });
            }
            Err(error) => {
                if let Some(writer) = self.writer.as_mut() {
                    writer.reset();
                }
                if store.save_errors() == SaveErrors::Fail {
                    return Err(NotSaved {
                        run_id: self.run_id.clone(),
                        error,
                        last_saved: self.parent,
                    });
                }
                let text = format!("checkpoint of run '{}' not saved: {error}", self.run_id);
                tracing::warn!(target: "troupe::store", "{text}");
                ctx.emit_with(|| Event::Warning {
                    path: ctx.path().clone(),
                    text,
                })
            }
        }
        Ok(())
    }
}
