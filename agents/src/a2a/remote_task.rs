//! The remote task as a turn sees it: what the exchange saw of it so far
//! ([`Seen`]: its ids, status and artifacts, the pieces of which are text
//! deltas).

use tokio::sync::watch;
use troupe_runtime::{Event, RunContext};

use super::types::{
    self, Artifact, StreamResponse, TaskArtifactUpdateEvent, TaskStatus, parts_text,
};

/// Adds streamed `pieces` to `parts`: text continuing text joins it (the
/// pieces of a streamed answer make one text), anything else follows.
fn append_parts(parts: &mut Vec<types::Part>, pieces: Vec<types::Part>) {
    let plain = |p: &types::Part| {
        p.text.is_some() && p.raw.is_none() && p.url.is_none() && p.data.is_none()
    };
    for piece in pieces {
        match (parts.last_mut(), &piece.text) {
            (Some(last), Some(more)) if plain(last) && plain(&piece) => {
                if let Some(text) = &mut last.text {
                    text.push_str(more);
                }
            }
            _ => parts.push(piece),
        }
    }
}

/// What an exchange saw of the remote task so far.
#[derive(Debug, Default)]
pub(super) struct Seen {
    /// Told the task while it is open (neither over nor waiting), for an
    /// abandoned exchange to cancel it.
    open: Option<watch::Sender<Option<String>>>,
    pub(super) task_id: Option<String>,
    pub(super) context_id: Option<String>,
    pub(super) status: Option<TaskStatus>,
    /// The artifacts, in the order they first appeared.
    pub(super) artifacts: Vec<Artifact>,
    /// A direct answer (a message instead of a task).
    pub(super) message: Option<types::A2aMessage>,
}

impl Seen {
    /// Nothing seen yet; `open` is told the task while it is open.
    pub(super) fn watched(open: watch::Sender<Option<String>>) -> Self {
        Seen {
            open: Some(open),
            ..Seen::default()
        }
    }

    /// Takes in one event of the exchange.
    pub(super) fn take(&mut self, event: StreamResponse, ctx: &RunContext) {
        if let Some(task) = event.task {
            self.ids(&task.id, &task.context_id);
            self.status = Some(task.status);
            if !task.artifacts.is_empty() {
                self.artifacts = task.artifacts;
            }
        }
        if let Some(message) = event.message {
            self.message = Some(message);
        }
        if let Some(update) = event.status_update {
            self.ids(&update.task_id, &update.context_id);
            self.status = Some(update.status);
        }
        if let Some(update) = event.artifact_update {
            self.ids(&update.task_id, &update.context_id);
            self.artifact(update, ctx);
        }
        if let Some(open) = &self.open {
            let now = self.unsettled();
            open.send_if_modified(|was| {
                let changed = *was != now;
                *was = now;
                changed
            });
        }
    }

    fn ids(&mut self, task: &str, context: &str) {
        if !task.is_empty() {
            self.task_id = Some(task.to_string());
        }
        if !context.is_empty() {
            self.context_id = Some(context.to_string());
        }
    }

    /// Applies an artifact's piece; its text is a delta unless it is the
    /// whole artifact again (a last piece replacing one already seen).
    fn artifact(&mut self, update: TaskArtifactUpdateEvent, ctx: &RunContext) {
        let piece = update.artifact;
        let known = self
            .artifacts
            .iter_mut()
            .find(|a| a.artifact_id == piece.artifact_id);
        let is_delta = update.append || known.is_none() || !update.last_chunk;
        let text = parts_text(&piece.parts);
        match known {
            Some(a) if update.append => append_parts(&mut a.parts, piece.parts),
            Some(a) => *a = piece,
            None => self.artifacts.push(piece),
        }
        if is_delta && !text.is_empty() {
            ctx.emit_with(|| Event::TextDelta {
                path: ctx.path().clone(),
                text,
            });
        }
    }

    /// Whether the task is over or waiting (or there is no task: a direct
    /// answer).
    pub(super) fn settled(&self) -> bool {
        self.message.is_some()
            || self
                .status
                .as_ref()
                .is_some_and(|s| s.state.is_terminal() || s.state.is_interrupted())
    }

    /// The task to ask about again, if it is not settled.
    pub(super) fn unsettled(&self) -> Option<String> {
        (!self.settled()).then(|| self.task_id.clone()).flatten()
    }

    pub(super) fn artifacts_text(&self) -> Option<String> {
        (!self.artifacts.is_empty()).then(|| {
            self.artifacts
                .iter()
                .map(|a| {
                    // Pieces appended to an artifact are kept as parts of
                    // their own by some servers: they make one text. An
                    // artifact with text (troupe adds a JSON answer as data
                    // after its text) is its text; one without, its data
                    // and URLs.
                    let texts: String = a.parts.iter().filter_map(|p| p.text.clone()).collect();
                    if texts.is_empty() {
                        a.parts
                            .iter()
                            .filter_map(types::Part::as_text)
                            .collect::<String>()
                    } else {
                        texts
                    }
                })
                .collect::<Vec<_>>()
                .join("\n")
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::a2a::types::{Part, Task, TaskState, TaskStatusUpdateEvent};

    fn piece(text: &str, append: bool, last_chunk: bool) -> StreamResponse {
        StreamResponse {
            artifact_update: Some(TaskArtifactUpdateEvent {
                task_id: "t".into(),
                context_id: "c".into(),
                artifact: Artifact {
                    artifact_id: "a".into(),
                    parts: vec![Part::text(text)],
                    ..Artifact::default()
                },
                append,
                last_chunk,
                metadata: None,
            }),
            ..StreamResponse::default()
        }
    }

    fn status(state: TaskState) -> StreamResponse {
        StreamResponse {
            status_update: Some(TaskStatusUpdateEvent {
                task_id: "t".into(),
                context_id: "c".into(),
                status: TaskStatus {
                    state,
                    ..TaskStatus::default()
                },
                metadata: None,
            }),
            ..StreamResponse::default()
        }
    }

    fn deltas(events: &mut troupe_runtime::EventStream) -> Vec<String> {
        events
            .drain_ready()
            .into_iter()
            .filter_map(|r| match r.into_event() {
                Event::TextDelta { text, .. } => Some(text),
                _ => None,
            })
            .collect()
    }

    #[tokio::test]
    async fn pieces_are_deltas_and_make_one_text_and_the_whole_again_is_not() {
        let (ctx, mut events) = RunContext::stream();
        let (open, named) = watch::channel(None);
        let mut seen = Seen::watched(open);
        seen.take(
            StreamResponse {
                task: Some(Task {
                    id: "t".into(),
                    context_id: "c".into(),
                    status: TaskStatus {
                        state: TaskState::Working,
                        ..TaskStatus::default()
                    },
                    ..Task::default()
                }),
                ..StreamResponse::default()
            },
            &ctx,
        );
        // Open while working: a cancelled turn would cancel it.
        assert_eq!(named.borrow().as_deref(), Some("t"));
        seen.take(piece("Hello", false, false), &ctx);
        seen.take(piece(", world", true, false), &ctx);
        // A new turn's stream replaces what was there, and is a delta.
        seen.take(piece("Bye", false, false), &ctx);
        seen.take(piece(" now", true, false), &ctx);
        // The whole answer again, last: not a delta.
        seen.take(piece("Bye now", false, true), &ctx);
        seen.take(status(TaskState::Completed), &ctx);
        assert_eq!(deltas(&mut events), ["Hello", ", world", "Bye", " now"]);
        assert_eq!(seen.artifacts_text().as_deref(), Some("Bye now"));
        assert_eq!(seen.artifacts[0].parts.len(), 1);
        assert!(seen.settled());
        assert_eq!(*named.borrow(), None);
        assert_eq!(seen.context_id.as_deref(), Some("c"));
    }

    #[tokio::test]
    async fn a_single_last_piece_is_a_delta_and_input_required_settles() {
        let (ctx, mut events) = RunContext::stream();
        let mut seen = Seen::default();
        seen.take(piece("all at once", false, true), &ctx);
        assert_eq!(deltas(&mut events), ["all at once"]);
        assert_eq!(seen.unsettled().as_deref(), Some("t"));
        seen.take(status(TaskState::InputRequired), &ctx);
        assert_eq!(seen.unsettled(), None);
    }

    #[test]
    fn appended_text_joins_and_other_parts_follow() {
        let mut parts = vec![Part::text("a")];
        let data = Part {
            data: Some(serde_json::json!({"k": 1})),
            ..Part::default()
        };
        append_parts(
            &mut parts,
            vec![Part::text("b"), data.clone(), Part::text("c")],
        );
        assert_eq!(parts, vec![Part::text("ab"), data, Part::text("c")]);
    }
}
