//! A chat completion's answer, settled or streamed: the chunks of
//! `/v1/chat/completions` with `stream: true`.
//!
//! The streamed content is the answering agent's words as its model
//! writes them (the `Event::TextDelta`s at its path, read from the run's
//! event log as they are logged), or its whole message when its model does
//! not stream. When the answering agent speaks more than once in a run (a
//! rewrite after a critic's note), each of its turns follows the last
//! after a blank line; the final answer is the last. A team that names no
//! answering agent (`answer:`) and has several participants sends its
//! final response in one piece when the run ends. With `troupe_progress`,
//! what the other agents say and the tools they call come as
//! `reasoning_content` deltas, each turn headed by the agent's path.

use std::collections::HashSet;
use std::convert::Infallible;
use std::sync::Arc;

use axum::response::sse::{Event as Sse, KeepAlive};
use serde_json::{Value, json};
use tokio::sync::watch;
use troupe::Event;

use super::error::ApiError;
use super::run::{Run, Status, usage_json};
use super::state::Shared;

/// What every response and chunk repeats.
pub(crate) struct Meta {
    /// `chatcmpl-<run id>`.
    pub(crate) id: String,
    /// Seconds since the epoch.
    pub(crate) created: u64,
    /// The team.
    pub(crate) model: String,
}

impl Meta {
    /// The object every response starts from.
    pub(crate) fn object(&self, object: &str) -> Value {
        json!({"id": self.id, "object": object, "created": self.created, "model": self.model})
    }

    fn chunk(&self, delta: Value, finish: Option<&str>) -> Sse {
        let mut c = self.object("chat.completion.chunk");
        c["choices"] = json!([{"index": 0, "delta": delta, "finish_reason": finish}]);
        Sse::default().data(c.to_string())
    }
}

/// A settled run's answer.
pub(crate) struct Answer {
    /// The final response (the questions, when the run waits for input).
    pub(crate) content: String,
    /// Its usage, as OpenAI shows it.
    pub(crate) usage: Value,
}

/// Waits for the run to stop running; its answer (the questions it asks,
/// when it waits for input), or the error it failed with.
pub(crate) async fn settle(run: &Run) -> Result<Answer, ApiError> {
    // Woken when the status changes, not at every event.
    let mut changes = run.watch_status();
    loop {
        changes.borrow_and_update();
        if let Some(settled) = settled(run) {
            return settled;
        }
        if changes.changed().await.is_err() {
            return Err(ApiError::internal(format!("run `{}` went away", run.id)));
        }
    }
}

/// The run's answer if it is no longer running.
fn settled(run: &Run) -> Option<Result<Answer, ApiError>> {
    let inner = run.inner();
    if inner.status() == Status::Running {
        return None;
    }
    let usage = inner.usage.map(usage_json).unwrap_or_else(|| {
        usage_json(troupe::message::Usage {
            prompt_tokens: 0,
            completion_tokens: 0,
        })
    });
    match inner.status() {
        Status::Running => None,
        Status::Failed => Some(Err(ApiError::internal(format!(
            "the team's run `{}` failed: {}",
            run.id,
            inner.error.as_deref().unwrap_or("unknown error")
        )))),
        Status::WaitingForInput => {
            let questions: Vec<String> = inner
                .requests
                .iter()
                .map(|q| format!("{} asks: {}", q.agent, q.prompt))
                .collect();
            Some(Ok(Answer {
                content: questions.join("\n"),
                usage,
            }))
        }
        _ => Some(Ok(Answer {
            content: inner.response.clone().unwrap_or_default(),
            usage,
        })),
    }
}

/// What a streamed answer is made of, besides the run.
pub(crate) struct Options {
    /// The paths whose words are the answer (`team/agent`).
    pub(crate) answering: Vec<String>,
    /// Send a usage chunk before `[DONE]`.
    pub(crate) include_usage: bool,
    /// Send the other agents' words and tool calls as `reasoning_content`.
    pub(crate) progress: bool,
}

/// Where a streamed answer stands.
struct Cursor {
    run: Arc<Run>,
    meta: Meta,
    options: Options,
    changes: watch::Receiver<u64>,
    /// The position of the next event of the run's log to read.
    next: usize,
    /// Whether the role chunk was sent.
    started: bool,
    /// Whether any content was sent.
    answered: bool,
    /// The answering turn's words sent so far.
    turn: String,
    /// Paths whose current turn sent words as progress.
    told: HashSet<Arc<str>>,
    /// The path progress last spoke for.
    last_path: Option<Arc<str>>,
    done: bool,
}

/// The streamed answer of `run`: the role, the answer's pieces as they
/// come (see the module's doc), the finish, the usage when asked for, and
/// `[DONE]`.
pub(crate) fn stream(
    run: Arc<Run>,
    meta: Meta,
    options: Options,
) -> axum::response::sse::Sse<impl futures::Stream<Item = Result<Sse, Infallible>>> {
    let cursor = Cursor {
        changes: run.watch(),
        run,
        meta,
        options,
        next: 0,
        started: false,
        answered: false,
        turn: String::new(),
        told: HashSet::new(),
        last_path: None,
        done: false,
    };
    let events = futures::stream::unfold(cursor, |mut c| async move {
        let items = next_items(&mut c).await?;
        Some((futures::stream::iter(items.into_iter().map(Ok)), c))
    });
    axum::response::sse::Sse::new(futures::StreamExt::flatten(events))
        .keep_alive(KeepAlive::default())
}

/// The next chunks, waiting for them; `None` once `[DONE]` was sent.
async fn next_items(c: &mut Cursor) -> Option<Vec<Sse>> {
    if c.done {
        return None;
    }
    if !c.started {
        c.started = true;
        return Some(vec![
            c.meta
                .chunk(json!({"role": "assistant", "content": ""}), None),
        ]);
    }
    loop {
        c.changes.borrow_and_update();
        let logged = c.run.inner().events.get(c.next);
        if let Some(logged) = logged {
            c.next += 1;
            let Some(event) = logged.event_of(Cursor::KINDS) else {
                continue;
            };
            let items = c.take(event);
            if !items.is_empty() {
                return Some(items);
            }
            continue;
        }
        if let Some(settled) = settled(&c.run) {
            c.done = true;
            return Some(c.end(settled));
        }
        if c.changes.changed().await.is_err() {
            return None;
        }
    }
}

impl Cursor {
    /// The kinds of event [`Cursor::take`] makes chunks of.
    const KINDS: &[&str] = &[
        "agent_started",
        "text_delta",
        "message_produced",
        "tool_call",
    ];

    /// Whether `path` is an answering agent's.
    fn answers(&self, path: &str) -> bool {
        self.options.answering.iter().any(|a| a == path)
    }

    /// The chunks an event of the run makes.
    fn take(&mut self, event: Event) -> Vec<Sse> {
        match event {
            Event::AgentStarted { path, .. } => {
                if self.answers(&path) {
                    self.turn.clear();
                } else {
                    self.told.remove(&path);
                }
                Vec::new()
            }
            Event::TextDelta { path, text } if !text.is_empty() => {
                if self.answers(&path) {
                    self.content(&text)
                } else {
                    self.told.insert(path.clone());
                    self.progress(&path, &text)
                }
            }
            Event::MessageProduced { path, message } => {
                let text = message.text_content();
                if self.answers(&path) {
                    // What the model did not stream (all of it, when it
                    // does not stream): the rest of the message.
                    let rest = text.strip_prefix(self.turn.as_str()).map(str::to_string);
                    let items = match rest {
                        Some(rest) if !rest.is_empty() => self.content(&rest),
                        _ => Vec::new(),
                    };
                    self.turn.clear();
                    items
                } else if !self.told.remove(&path) && !text.is_empty() {
                    self.progress(&path, &text)
                } else {
                    Vec::new()
                }
            }
            Event::ToolCall { path, call } if self.options.progress => {
                let line = format!("calls `{}`", call.name);
                self.last_path = None;
                self.progress(&path, &line)
            }
            _ => Vec::new(),
        }
    }

    /// `text` as the answer's next piece (after a blank line when it
    /// starts another turn of the answering agent).
    fn content(&mut self, text: &str) -> Vec<Sse> {
        let piece = if self.turn.is_empty() && self.answered {
            format!("\n\n{text}")
        } else {
            text.to_string()
        };
        self.turn.push_str(text);
        self.answered = true;
        vec![self.meta.chunk(json!({"content": piece}), None)]
    }

    /// `text` of the agent at `path` as progress, when asked for; headed
    /// by the path when another agent spoke last.
    fn progress(&mut self, path: &Arc<str>, text: &str) -> Vec<Sse> {
        if !self.options.progress {
            return Vec::new();
        }
        let piece = if self.last_path.as_ref() == Some(path) {
            text.to_string()
        } else {
            self.last_path = Some(path.clone());
            format!("\n[{path}] {text}")
        };
        vec![self.meta.chunk(json!({"reasoning_content": piece}), None)]
    }

    /// The last chunks: the answer when nothing of it was streamed (or
    /// the error), the finish, the usage when asked for, `[DONE]`.
    fn end(&mut self, settled: Result<Answer, ApiError>) -> Vec<Sse> {
        let mut items = Vec::new();
        match settled {
            Ok(a) => {
                if !self.answered && !a.content.is_empty() {
                    items.push(self.meta.chunk(json!({"content": a.content}), None));
                }
                items.push(self.meta.chunk(json!({}), Some("stop")));
                if self.options.include_usage {
                    let mut c = self.meta.object("chat.completion.chunk");
                    c["choices"] = json!([]);
                    c["usage"] = a.usage;
                    items.push(Sse::default().data(c.to_string()));
                }
            }
            Err(e) => items.push(Sse::default().data(
                json!({"error": {"message": e.message, "type": "server_error"}}).to_string(),
            )),
        }
        items.push(Sse::default().data("[DONE]"));
        items
    }
}

/// The paths whose words are team `team`'s answer, streamed as they come:
/// its answering agents (`answer:`), or its one participant; none when it
/// has several and names none (the final response then comes whole).
pub(crate) fn answering(state: &Shared, team: &str) -> Result<Vec<String>, ApiError> {
    let workflow = &state.team(Some(team))?.built.workflow;
    let name = workflow.name();
    let mut paths: Vec<String> = workflow
        .answering()
        .map(|a| format!("{name}/{a}"))
        .collect();
    let mut all = workflow.participants();
    if paths.is_empty()
        && let (Some(only), None) = (all.next(), all.next())
    {
        paths.push(format!("{name}/{only}"));
    }
    Ok(paths)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use troupe::event::EventRecord;
    use troupe::message::{Message, ToolCall};

    use super::super::event_log::Logged;
    use super::*;

    #[test]
    fn the_kinds_a_stream_decodes_are_those_it_takes() {
        // One event of each kind `Cursor::take` turns into chunks: each
        // decoded from its log line, none passed over.
        let path: Arc<str> = "trio/c".into();
        let taken = [
            Event::AgentStarted {
                path: path.clone(),
                batch: 1,
            },
            Event::TextDelta {
                path: path.clone(),
                text: "hi".into(),
            },
            Event::MessageProduced {
                path: path.clone(),
                message: Arc::new(Message::text("c", "hi")),
            },
            Event::ToolCall {
                path: path.clone(),
                call: ToolCall {
                    id: "1".into(),
                    name: "look".into(),
                    arguments: "{}".into(),
                },
            },
        ];
        for event in taken {
            let line = serde_json::to_string(&EventRecord::new("r", 0, event.clone())).unwrap();
            assert_eq!(
                Logged::Line(line.as_str().into()).event_of(Cursor::KINDS),
                Some(event),
                "{line}"
            );
        }
        let passed = Event::Warning {
            path,
            text: "late".into(),
        };
        let line = serde_json::to_string(&EventRecord::new("r", 0, passed)).unwrap();
        assert_eq!(Logged::Line(line.into()).event_of(Cursor::KINDS), None);
    }
}
