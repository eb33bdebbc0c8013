//! Forking a run: carrying on from any of its checkpoints as a new run,
//! optionally with its last message or its state values edited, the run
//! forked from left as it was (nothing of it is written, not even a
//! repair). The new run's [`Lineage`] is kept in the store.

use std::sync::Arc;

use super::api::Workflow;
use super::result::RunResult;
use super::snapshot::{self, Resumed, Snapshot};
use crate::context::RunContext;
use crate::error::CheckpointError;
use crate::message::{Content, Message, MessageId};
use crate::run_error::RunError;
use crate::state::StateDelta;
use crate::store::{CheckpointId, CheckpointStore, Lineage, check_run_id};
use crate::thread::Thread;

/// What a fork changes in the state it starts from.
///
/// ```
/// use troupe_runtime::ForkEdits;
///
/// let edits = ForkEdits::default()
///     .last_message("Write it in French.")
///     .set_state("tone", "formal");
/// assert_eq!(edits.state, [("tone".to_string(), "formal".to_string())]);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ForkEdits {
    /// New text for the checkpoint's last message (same id and sender;
    /// everywhere the message is: the run's thread, its child threads,
    /// the inboxes it waits in).
    pub last_message: Option<String>,
    /// State values to set (key, text), in order.
    pub state: Vec<(String, String)>,
}

impl ForkEdits {
    /// Replaces the last message's text with `text`.
    pub fn last_message(mut self, text: impl Into<String>) -> Self {
        self.last_message = Some(text.into());
        self
    }

    /// Sets state value `key` to `value`.
    pub fn set_state(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.state.push((key.into(), value.into()));
        self
    }
}

impl Workflow {
    /// Carries run `run_id` on from its checkpoint `checkpoint` in `store`
    /// as a new run `new_run_id`, with `edits` applied to the state it
    /// starts from. The checkpoint is checked as
    /// [`Workflow::run_from_checkpoint`] checks it; the run forked from is
    /// only read. The new run's checkpoints go to the workflow's own store,
    /// with its [`Lineage`] (refused, with a [`CheckpointError::Fork`],
    /// when that store already holds a run `new_run_id`, or for an edit of
    /// a last message there is not). Events carry `new_run_id`.
    pub async fn fork(
        &self,
        store: &dyn CheckpointStore,
        run_id: &str,
        checkpoint: CheckpointId,
        new_run_id: &str,
        edits: &ForkEdits,
        ctx: &RunContext,
    ) -> Result<RunResult, RunError> {
        let ctx = ctx.with_run_id(new_run_id);
        let resumed = self
            .prepare_fork(store, run_id, checkpoint, new_run_id, edits)
            .await?;
        self.execute(
            Thread::new(),
            ctx.child(&self.spec.name),
            true,
            Some(resumed),
            None,
        )
        .await
    }

    /// Checks a fork, loads and edits the state it starts from and keeps
    /// its lineage.
    async fn prepare_fork(
        &self,
        store: &dyn CheckpointStore,
        run_id: &str,
        checkpoint: CheckpointId,
        new_run_id: &str,
        edits: &ForkEdits,
    ) -> Result<Resumed, CheckpointError> {
        let refuse = |reason: String| CheckpointError::Fork {
            run_id: run_id.to_string(),
            reason,
        };
        let Some(own) = self.spec.store.clone() else {
            return Err(CheckpointError::NoStore(self.spec.name.clone()));
        };
        check_run_id(new_run_id)?;
        if new_run_id == run_id {
            return Err(refuse("the fork needs a run id of its own".into()));
        }
        if !own.list(new_run_id).await?.is_empty() {
            return Err(refuse(format!(
                "the store already holds a run '{new_run_id}'; name the fork otherwise"
            )));
        }
        let (cp, mut snapshot) =
            snapshot::load(&self.spec, store, run_id, Some(checkpoint)).await?;
        apply(&mut snapshot, edits).map_err(refuse)?;
        own.save_lineage(new_run_id, &Lineage::new(run_id, cp.id))
            .await?;
        Ok(Resumed {
            snapshot,
            parent: cp.id,
            run_id: new_run_id.to_string(),
        })
    }
}

/// Applies `edits` to a checkpoint's state; what cannot be applied, said.
fn apply(snapshot: &mut Snapshot, edits: &ForkEdits) -> Result<(), String> {
    if let Some(text) = &edits.last_message {
        let Some(last) = snapshot.thread.last().cloned() else {
            return Err("--edit-last: the checkpoint's thread has no message to edit".into());
        };
        let mut edited = Message::clone(&last);
        edited.content = match &last.content {
            Content::Structured(_) => Content::Structured(text.clone()),
            _ => Content::Text(text.clone()),
        };
        edited
            .metadata
            .insert("troupe.edited".into(), "fork".into());
        replace(&mut snapshot.thread, last.id, &Arc::new(edited));
        // The run goes on from the edited message as it stands.
        snapshot.status = None;
    }
    if !edits.state.is_empty() {
        let mut delta = StateDelta::new();
        for (k, v) in &edits.state {
            delta = delta.set(k.clone(), v.clone());
        }
        let state = snapshot
            .thread
            .state_mut()
            .get_or_insert_with(Default::default);
        state.scheduler.body_mut().values.apply(&delta);
    }
    Ok(())
}

/// Puts `with` in place of message `id` wherever it is in `thread`: its
/// messages, its child threads and the inboxes its state keeps.
fn replace(thread: &mut Thread, id: MessageId, with: &Arc<Message>) {
    if thread.contains(id) {
        let mut fresh = Thread::new();
        for m in thread.messages() {
            fresh.push_shared(if m.id == id { with.clone() } else { m.clone() });
        }
        *fresh.children_mut() = std::mem::take(thread.children_mut());
        *fresh.state_mut() = thread.state_mut().take();
        *thread = fresh;
    }
    if let Some(state) = thread.state_mut() {
        for inbox in state.pending.values_mut() {
            for m in inbox.iter_mut().filter(|m| m.id == id) {
                *m = with.clone();
            }
        }
    }
    for child in thread.children_mut().values_mut() {
        replace(child, id, with);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::store::MemoryStore;
    use crate::{FnAgent, Router};

    /// `draft` writes, `shout` repeats the last message in capitals (and
    /// the state value `tone`, if set).
    fn team(store: Arc<MemoryStore>) -> Workflow {
        let draft = FnAgent::sync("draft", |_: &Thread| Ok("a draft"));
        let shout = FnAgent::new("shout", |t: Arc<Thread>, ctx: RunContext| async move {
            let last = t.last().map(|m| m.text_content().to_uppercase());
            let tone = ctx.state().get("tone").unwrap_or("plain").to_string();
            Ok(format!("{} ({tone})", last.unwrap_or_default()))
        });
        Workflow::builder()
            .name("pair")
            .participant(draft)
            .participant(shout)
            .router(
                Router::builder()
                    .add_route("user", "draft")
                    .add_route("draft", "shout")
                    .output("shout"),
            )
            .checkpoint_store(store)
            .checkpoint_every(1)
            .build()
            .unwrap()
    }

    #[tokio::test]
    async fn a_fork_runs_on_from_an_edited_checkpoint_and_leaves_the_original_as_it_was() {
        let store = Arc::new(MemoryStore::new());
        let wf = team(store.clone());
        let first = wf
            .run_task("go", &RunContext::new().with_run_id("orig"))
            .await
            .unwrap();
        assert_eq!(first.final_text(), "A DRAFT (plain)");
        let before: Vec<_> = {
            let mut all = Vec::new();
            for m in store.list("orig").await.unwrap() {
                all.push(store.load("orig", &m.id).await.unwrap().unwrap());
            }
            all
        };
        // The checkpoint whose last message is the draft.
        let summaries = crate::workflow::summarize_checkpoints(store.as_ref(), "orig")
            .await
            .unwrap();
        let at = summaries
            .iter()
            .find(|c| c.last_speaker.as_deref() == Some("draft"))
            .map(|c| c.id)
            .expect("a checkpoint after the draft");
        let edits = ForkEdits::default()
            .last_message("an edited draft")
            .set_state("tone", "loud");
        let fork = wf
            .fork(
                store.as_ref(),
                "orig",
                at,
                "orig-2",
                &edits,
                &RunContext::new(),
            )
            .await
            .unwrap();
        assert_eq!(fork.final_text(), "AN EDITED DRAFT (loud)");
        let lineage = store.lineage("orig-2").await.unwrap().unwrap();
        assert_eq!(
            (lineage.parent_run.as_str(), lineage.checkpoint),
            ("orig", at)
        );
        assert_eq!(store.lineage("orig").await.unwrap(), None);
        let mut after = Vec::new();
        for m in store.list("orig").await.unwrap() {
            after.push(store.load("orig", &m.id).await.unwrap().unwrap());
        }
        assert_eq!(after, before, "the original's checkpoints changed");
        // A second fork of the same id is refused; so is the run's own id.
        for id in ["orig-2", "orig"] {
            let e = wf
                .fork(store.as_ref(), "orig", at, id, &edits, &RunContext::new())
                .await
                .unwrap_err();
            assert!(e.to_string().contains("cannot fork run 'orig'"), "{e}");
        }
    }
}
