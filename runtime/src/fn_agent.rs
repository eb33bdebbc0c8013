//! [`FnAgent`]: an agent made of a closure.

use std::fmt;
use std::future::Future;
use std::sync::Arc;

use async_trait::async_trait;
use futures::future::BoxFuture;

use crate::agent::{Agent, AgentError, Reply};
use crate::context::RunContext;
use crate::thread::Thread;

type AsyncBody =
    dyn Fn(Arc<Thread>, RunContext) -> BoxFuture<'static, Result<Reply, AgentError>> + Send + Sync;
type SyncBody = dyn Fn(&Thread) -> Result<Reply, AgentError> + Send + Sync;

enum Body {
    Async(Box<AsyncBody>),
    Sync(Box<SyncBody>),
}

/// An agent whose turn is a closure.
///
/// ```
/// use troupe_runtime::{FnAgent, AgentError};
///
/// // An async body: gets the thread and the run context.
/// let shout = FnAgent::new("shout", |thread, _ctx| async move {
///     let last = thread.last().map(|m| m.text_content().to_uppercase()).unwrap_or_default();
///     Ok::<_, AgentError>(last)
/// });
/// // A synchronous body: no future to build, for cheap steps.
/// let count = FnAgent::sync("count", |thread| Ok(format!("{} messages", thread.len())));
/// ```
pub struct FnAgent {
    name: String,
    description: String,
    handoffs: Vec<String>,
    body: Body,
}

impl fmt::Debug for FnAgent {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FnAgent").field("name", &self.name).finish()
    }
}

impl FnAgent {
    /// An agent running `body` as an async function of its thread and context.
    pub fn new<F, Fut, R>(name: impl Into<String>, body: F) -> Self
    where
        F: Fn(Arc<Thread>, RunContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, AgentError>> + Send + 'static,
        R: Into<Reply>,
    {
        let body =
            move |t: Arc<Thread>, c: RunContext| -> BoxFuture<'static, Result<Reply, AgentError>> {
                let fut = body(t, c);
                Box::pin(async move { fut.await.map(Into::into) })
            };
        FnAgent {
            name: name.into(),
            description: String::new(),
            handoffs: Vec::new(),
            body: Body::Async(Box::new(body)),
        }
    }

    /// An agent running `body` synchronously over its thread.
    pub fn sync<F, R>(name: impl Into<String>, body: F) -> Self
    where
        F: Fn(&Thread) -> Result<R, AgentError> + Send + Sync + 'static,
        R: Into<Reply>,
    {
        FnAgent {
            name: name.into(),
            description: String::new(),
            handoffs: Vec::new(),
            body: Body::Sync(Box::new(move |t| body(t).map(Into::into))),
        }
    }

    /// Sets the description.
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Declares the agents this one may hand off to.
    pub fn with_handoffs<S: Into<String>>(mut self, targets: impl IntoIterator<Item = S>) -> Self {
        self.handoffs = targets.into_iter().map(Into::into).collect();
        self
    }
}

#[async_trait]
impl Agent for FnAgent {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn handoffs(&self) -> Vec<String> {
        self.handoffs.clone()
    }

    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError> {
        match &self.body {
            Body::Async(f) => f(thread, ctx).await,
            Body::Sync(f) => f(&thread),
        }
    }
}
