//! [`Session`]: a team behind a chatbot — one stored conversation per id,
//! one user turn at a time per conversation.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, Weak};

use crate::context::{EventSink, EventStream, RunContext};
use crate::event::EventRecord;
use crate::message::Message;
use crate::run_error::RunError;
use crate::store::{StoreError, ThreadStore, check_conversation_id};
use crate::thread::Thread;
use crate::workflow::{RunResult, Workflow};

/// A workflow serving many conversations, each kept in a [`ThreadStore`].
///
/// [`Session::send`] runs one user turn: it loads the conversation's thread
/// (or starts a new one), appends the user's message, runs the workflow and
/// saves the thread the run returns. Turns of one conversation are
/// serialized — a second message waits until the first turn is saved, so
/// no turn works on a stale thread and no message is lost — while
/// different conversations run concurrently.
///
/// The serialization holds among the clones of one `Session` value (they
/// share their locks). Two separately made sessions, or two processes, over
/// the same store do not coordinate: give each conversation one session.
///
/// When a run fails, the thread the error carries (the conversation up to
/// the failure, including the user's message) is saved before the error is
/// returned, so nothing that happened is lost and the next message carries
/// on from there. A failure that carries no thread (the run could not
/// start) leaves the stored conversation as it was. If the caller stops
/// awaiting `send`, the run is cancelled and the stored conversation is
/// left as it was before the turn.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// use troupe_runtime::store::MemoryStore;
/// use troupe_runtime::{FnAgent, Session, Thread, Workflow};
///
/// let echo = FnAgent::sync("echo", |t: &Thread| {
///     Ok(format!("you said: {}", t.last().map(|m| m.text_content().into_owned()).unwrap_or_default()))
/// });
/// let team = Workflow::builder().participant(echo).build()?;
/// let session = Session::new(team, MemoryStore::new());
///
/// let reply = session.send("alice", "hello").await?;
/// assert_eq!(reply.final_text(), "you said: hello");
/// session.send("alice", "again").await?;
/// assert_eq!(session.history("alice").await?.len(), 4); // two questions, two answers
/// assert!(session.history("bob").await?.is_empty());
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Session {
    workflow: Workflow,
    store: Arc<dyn ThreadStore>,
    ctx: RunContext,
    locks: Arc<Mutex<TurnLocks>>,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("workflow", &self.workflow)
            .field("ctx", &self.ctx)
            .finish_non_exhaustive()
    }
}

/// One async lock per conversation with a turn under way or waiting.
///
/// Entries are weak: a lock lives while some turn holds or awaits it, so
/// the map does not grow with every conversation ever seen; dead entries
/// are swept whenever the map has doubled since the last sweep.
#[derive(Default)]
struct TurnLocks {
    map: HashMap<String, Weak<tokio::sync::Mutex<()>>>,
    sweep_at: usize,
}

/// A turn of a [`Session`] failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SessionError {
    /// The conversation could not be loaded or deleted, or its id is not
    /// valid.
    #[error("conversation '{conversation}': {source}")]
    Store {
        /// The conversation.
        conversation: String,
        /// What the store reported.
        #[source]
        source: StoreError,
    },
    /// The workflow run failed. The thread it carried, if any, was saved
    /// unless `save_error` says otherwise.
    #[error("conversation '{conversation}': {source}")]
    Run {
        /// The conversation.
        conversation: String,
        /// What the run reported.
        #[source]
        source: RunError,
        /// Saving the failed run's thread failed too.
        save_error: Option<StoreError>,
    },
    /// The run succeeded but its thread could not be saved: the answer is
    /// here, the stored conversation is as it was before the turn.
    #[error("conversation '{conversation}': the turn ran but was not saved: {source}")]
    Save {
        /// The conversation.
        conversation: String,
        /// What the store reported.
        #[source]
        source: StoreError,
        /// The run's result, for the caller to use or retry saving.
        result: Box<RunResult>,
    },
}

impl Session {
    /// A session running `workflow` over conversations kept in `store`.
    pub fn new(workflow: Workflow, store: impl ThreadStore + 'static) -> Self {
        Session {
            workflow,
            store: Arc::new(store),
            ctx: RunContext::new(),
            locks: Arc::default(),
        }
    }

    /// Runs every turn under `ctx` (events, cancellation, deadline).
    pub fn with_context(mut self, ctx: RunContext) -> Self {
        self.ctx = ctx;
        self
    }

    /// The workflow.
    pub fn workflow(&self) -> &Workflow {
        &self.workflow
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn ThreadStore> {
        &self.store
    }

    /// Runs one user turn of `conversation` with a text message.
    pub async fn send(
        &self,
        conversation: &str,
        text: impl Into<String>,
    ) -> Result<RunResult, SessionError> {
        self.send_message(conversation, Message::user(text)).await
    }

    /// Runs one turn of `conversation` with any message (structured
    /// content, metadata).
    pub async fn send_message(
        &self,
        conversation: &str,
        message: Message,
    ) -> Result<RunResult, SessionError> {
        let store_error = |source| SessionError::Store {
            conversation: conversation.to_string(),
            source,
        };
        // Checked before waiting or running, so a bad id costs no model call.
        check_conversation_id(conversation).map_err(store_error)?;
        let lock = self.lock_for(conversation);
        let _turn = lock.lock().await;

        let mut thread = self
            .store
            .load_thread(conversation)
            .await
            .map_err(store_error)?
            .unwrap_or_default();
        thread.push(message);
        // The conversation id names the run, so a workflow with a checkpoint
        // store can resume a turn that crashed (`Workflow::resume`).
        let ctx = match self.ctx.run_id() {
            Some(_) => self.ctx.clone(),
            None => self.ctx.with_run_id(conversation),
        };
        match self.workflow.run(thread, &ctx).await {
            Ok(result) => match self.store.save_thread(conversation, &result.thread).await {
                Ok(()) => Ok(result),
                Err(source) => Err(SessionError::Save {
                    conversation: conversation.to_string(),
                    source,
                    result: Box::new(result),
                }),
            },
            Err(source) => {
                let save_error = match source.thread() {
                    Some(thread) => self.store.save_thread(conversation, thread).await.err(),
                    None => None,
                };
                Err(SessionError::Run {
                    conversation: conversation.to_string(),
                    source,
                    save_error,
                })
            }
        }
    }

    /// Runs one user turn of `conversation` in the background, streaming
    /// its events live — the answer's pieces as the model writes them
    /// ([`Event::TextDelta`](crate::Event::TextDelta)), from whatever
    /// depth they come — then its result, as [`Session::send`] gives it.
    /// The events also go wherever the session's context sends them.
    ///
    /// The turn goes on if the stream is dropped (as a
    /// [`RunStream`](crate::RunStream)'s run does); cancel it through the
    /// session's context.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use troupe_runtime::store::MemoryStore;
    /// use troupe_runtime::{Event, FnAgent, Session, Thread, Workflow};
    ///
    /// let echo = FnAgent::sync("echo", |_: &Thread| Ok("hello"));
    /// let session = Session::new(Workflow::builder().participant(echo).build()?, MemoryStore::new());
    /// let mut turn = session.send_stream("alice", "hi");
    /// let mut spoke = false;
    /// while let Some(record) = turn.next().await {
    ///     spoke |= matches!(record.event, Event::MessageProduced { .. });
    /// }
    /// assert!(spoke);
    /// assert_eq!(turn.result().await?.final_text(), "hello");
    /// # Ok(()) }
    /// ```
    pub fn send_stream(&self, conversation: &str, text: impl Into<String>) -> SessionStream {
        self.send_message_stream(conversation, Message::user(text))
    }

    /// [`Session::send_stream`] with any message.
    pub fn send_message_stream(&self, conversation: &str, message: Message) -> SessionStream {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let sink = match self.ctx.sink() {
            EventSink::None => EventSink::Channel(tx),
            other => EventSink::Many(vec![other.clone(), EventSink::Channel(tx)]),
        };
        // A clone shares the turn locks: turns stay one at a time.
        let session = Session {
            ctx: self.ctx.with_events(sink),
            ..self.clone()
        };
        let id = conversation.to_string();
        let handle = tokio::spawn(async move { session.send_message(&id, message).await });
        SessionStream {
            conversation: conversation.to_string(),
            events: EventStream::from_receiver(rx),
            handle,
        }
    }

    /// The stored thread of `conversation` (empty if it has none).
    pub async fn history(&self, conversation: &str) -> Result<Thread, SessionError> {
        self.store
            .load_thread(conversation)
            .await
            .map(Option::unwrap_or_default)
            .map_err(|source| SessionError::Store {
                conversation: conversation.to_string(),
                source,
            })
    }

    /// Forgets `conversation` (after a turn under way finishes); returns
    /// whether it was stored.
    pub async fn reset(&self, conversation: &str) -> Result<bool, SessionError> {
        let store_error = |source| SessionError::Store {
            conversation: conversation.to_string(),
            source,
        };
        check_conversation_id(conversation).map_err(store_error)?;
        let lock = self.lock_for(conversation);
        let _turn = lock.lock().await;
        self.store
            .delete_thread(conversation)
            .await
            .map_err(store_error)
    }

    /// The turn lock of `conversation`, shared with every turn holding or
    /// awaiting it.
    fn lock_for(&self, conversation: &str) -> Arc<tokio::sync::Mutex<()>> {
        // Held for map operations only; a poisoned map is still a valid map.
        let mut locks = self.locks.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(lock) = locks.map.get(conversation).and_then(Weak::upgrade) {
            return lock;
        }
        let lock = Arc::new(tokio::sync::Mutex::new(()));
        locks
            .map
            .insert(conversation.to_string(), Arc::downgrade(&lock));
        if locks.map.len() > locks.sweep_at {
            locks.map.retain(|_, w| w.strong_count() > 0);
            locks.sweep_at = (locks.map.len() * 2).max(64);
        }
        lock
    }
}

/// A [`Session`] turn running in the background ([`Session::send_stream`]):
/// its events as they happen, then its result.
#[derive(Debug)]
pub struct SessionStream {
    conversation: String,
    events: EventStream,
    handle: tokio::task::JoinHandle<Result<RunResult, SessionError>>,
}

impl SessionStream {
    /// The next event; `None` once the turn is over and every event was
    /// read.
    pub async fn next(&mut self) -> Option<EventRecord> {
        self.events.next().await
    }

    /// Waits for the turn's result (events not read yet are dropped).
    pub async fn result(self) -> Result<RunResult, SessionError> {
        match self.handle.await {
            Ok(result) => result,
            Err(e) => Err(SessionError::Run {
                conversation: self.conversation,
                source: RunError::Runtime {
                    workflow: String::new(),
                    reason: format!("the turn's task ended abnormally: {e}"),
                },
                save_error: None,
            }),
        }
    }
}

impl futures::Stream for SessionStream {
    type Item = EventRecord;
    fn poll_next(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Option<EventRecord>> {
        std::pin::Pin::new(&mut self.events).poll_next(cx)
    }
}
