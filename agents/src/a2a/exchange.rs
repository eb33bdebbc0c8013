//! One exchange with the remote agent — the message sent, the task's
//! events read until it is over or waiting — on a task of its own, so a
//! turn that is cancelled or dropped still cancels what it started: the
//! exchange goes on reading until the remote agent names its task (within
//! [`CANCEL_GRACE`]) and then cancels it (`CancelTask`). A turn dropped
//! before the remote agent answered at all would otherwise leave the
//! remote task running, unnamed and uncancellable.
//!
//! A remote agent that streams is sent `SendStreamingMessage`; when its
//! stream drops (the connection lost or closed) before the task is over
//! or waiting, the exchange re-attaches with `SubscribeToTask` (up to
//! [`RESUBSCRIBES`] times, backing off), and falls back to asking
//! (`GetTask`) when the agent cannot re-attach it. One that does not
//! stream is sent a non-blocking `SendMessage` (`returnImmediately`) and
//! asked about until the task settles.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::{oneshot, watch};
use tokio::task::JoinHandle;
use troupe_runtime::RunContext;

use super::client::{A2aClient, A2aStream};
use super::error::A2aError;
use super::remote_task::Seen;
use super::types::{self, SendMessageRequest, StreamResponse, Task, TaskIdParams, method};

/// How often a task not settled yet is asked about (a server that answers
/// `SendMessage` before the task is over).
const POLL_EVERY: Duration = Duration::from_millis(200);

/// How many times a dropped stream is re-attached (`SubscribeToTask`).
const RESUBSCRIBES: u32 = 5;

/// The wait before re-attaching a dropped stream (doubling each time).
const RESUBSCRIBE_BACKOFF: Duration = Duration::from_millis(100);

/// The time an abandoned exchange gives the remote agent to name its task,
/// and then to take the cancel.
const CANCEL_GRACE: Duration = Duration::from_secs(5);

/// Abandoned exchanges not over yet: the remote task still to be named or
/// cancelled.
static CANCELLING: AtomicUsize = AtomicUsize::new(0);

/// Waits until every exchange with a remote agent that a cancelled or
/// dropped turn abandoned has cancelled its task (or found it over, or
/// given up after a few seconds), or until `within` passed. A process
/// about to exit calls this so the cancels go out before it does. Returns
/// at once when none is under way.
pub async fn settle_cancels(within: Duration) {
    let deadline = Instant::now() + within;
    while CANCELLING.load(Ordering::Acquire) > 0 && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// The exchange is under way and its turn waits for it.
const RUNNING: u8 = 0;
/// Its turn is gone: the remote task is to be cancelled.
const ABANDONED: u8 = 1;
/// The exchange is over.
const OVER: u8 = 2;

/// A turn's exchange, running on a task of its own. Dropping it (the turn
/// cancelled or dropped) before it is over abandons it: the task then
/// cancels the remote task, once named.
pub(super) struct Exchange {
    task: JoinHandle<Result<Seen, A2aError>>,
    phase: Arc<AtomicU8>,
    /// Dropped with the exchange: tells the task its turn is gone.
    _turn: oneshot::Sender<()>,
}

impl Exchange {
    /// Sends `request` through `client` and reads the remote task's events
    /// into a [`Seen`], on a task of its own.
    pub(super) fn start(
        client: Arc<A2aClient>,
        request: SendMessageRequest,
        ctx: RunContext,
    ) -> Self {
        let phase = Arc::new(AtomicU8::new(RUNNING));
        let (turn, gone) = oneshot::channel();
        let task = tokio::spawn(drive(client, request, ctx, gone, phase.clone()));
        Exchange {
            task,
            phase,
            _turn: turn,
        }
    }

    /// What the exchange saw, once it is over.
    pub(super) async fn finish(&mut self) -> Result<Seen, A2aError> {
        match (&mut self.task).await {
            Ok(outcome) => outcome,
            // A panic of the exchange is the turn's panic.
            Err(e) if e.is_panic() => std::panic::resume_unwind(e.into_panic()),
            Err(_) => Err(A2aError::Config(
                "the runtime stopped during the exchange".into(),
            )),
        }
    }
}

impl Drop for Exchange {
    fn drop(&mut self) {
        // Counted before the phase changes, so the count never goes below
        // what `drive` takes off it.
        CANCELLING.fetch_add(1, Ordering::AcqRel);
        let abandoned = self
            .phase
            .compare_exchange(RUNNING, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
            .is_ok();
        if !abandoned {
            CANCELLING.fetch_sub(1, Ordering::AcqRel);
        }
    }
}

/// The exchange's task: the exchange, and if its turn goes away first,
/// the cancel of the remote task.
async fn drive(
    client: Arc<A2aClient>,
    request: SendMessageRequest,
    ctx: RunContext,
    mut gone: oneshot::Receiver<()>,
    phase: Arc<AtomicU8>,
) -> Result<Seen, A2aError> {
    let (open, mut named) = watch::channel(None);
    let mut seen = Seen::watched(open);
    let outcome = {
        let exchange = exchange(&client, &request, &mut seen, &ctx);
        tokio::pin!(exchange);
        let outcome = tokio::select! {
            biased;
            outcome = &mut exchange => Some(outcome),
            _ = &mut gone => None,
        };
        if outcome.is_none() {
            // Abandoned: read on until the task is named (or over).
            tokio::select! {
                _ = &mut exchange => {}
                _ = named.wait_for(Option::is_some) => {}
                _ = tokio::time::sleep(CANCEL_GRACE) => {}
            }
        }
        outcome
    };
    if outcome.is_none() {
        let id = named.borrow().clone();
        match id {
            Some(id) => cancel_remote(&client, id).await,
            None if seen.task_id.is_none() && !seen.settled() => tracing::warn!(
                url = %client.card_url(),
                "the remote A2A agent did not name its task in time: it is not cancelled"
            ),
            None => {}
        }
    }
    if phase.swap(OVER, Ordering::AcqRel) == ABANDONED {
        CANCELLING.fetch_sub(1, Ordering::AcqRel);
    }
    match outcome {
        Some(Ok(())) => Ok(seen),
        Some(Err(e)) => Err(e),
        // Nobody waits for it any more.
        None => Ok(seen),
    }
}

/// One exchange with the remote agent, recorded in `seen` as it goes.
async fn exchange(
    client: &A2aClient,
    request: &SendMessageRequest,
    seen: &mut Seen,
    ctx: &RunContext,
) -> Result<(), A2aError> {
    let streams = client.card().await?.capabilities.streaming == Some(true);
    if streams {
        let params = serde_json::to_value(request).map_err(|e| A2aError::Config(e.to_string()))?;
        let stream = client.stream(method::STREAM, params).await?;
        follow(client, stream, seen, ctx).await?;
    } else {
        // Non-blocking: the task comes back under way and is asked about.
        let mut request = request.clone();
        request
            .configuration
            .get_or_insert_with(Default::default)
            .return_immediately = true;
        let params = serde_json::to_value(&request).map_err(|e| A2aError::Config(e.to_string()))?;
        let answer: types::SendMessageResponse = client.call(method::SEND, params).await?;
        seen.take(
            StreamResponse {
                task: answer.task,
                message: answer.message,
                ..StreamResponse::default()
            },
            ctx,
        );
    }
    // A task neither over nor waiting (a stream that ended early, a server
    // that answered at once): asked about until it settles.
    while let Some(id) = seen.unsettled() {
        tokio::time::sleep(POLL_EVERY).await;
        let params = serde_json::to_value(TaskIdParams {
            id: id.clone(),
            history_length: Some(0),
        })
        .map_err(|e| A2aError::Config(e.to_string()))?;
        let task: Task = client.call(method::GET_TASK, params).await?;
        seen.take(
            StreamResponse {
                task: Some(task),
                ..StreamResponse::default()
            },
            ctx,
        );
    }
    Ok(())
}

/// Reads `stream` into `seen`; when it drops before the task settles,
/// re-attaches with `SubscribeToTask`. Returns once the stream ended
/// with the task settled, or when the agent cannot re-attach it (the
/// caller then asks about the task).
async fn follow(
    client: &A2aClient,
    mut stream: A2aStream,
    seen: &mut Seen,
    ctx: &RunContext,
) -> Result<(), A2aError> {
    let mut wait = RESUBSCRIBE_BACKOFF;
    let mut left = RESUBSCRIBES;
    loop {
        let dropped = loop {
            match stream.next().await {
                Some(Ok(event)) => seen.take(event, ctx),
                Some(Err(e @ A2aError::Unreachable { .. })) => break Some(e),
                Some(Err(e)) => return Err(e),
                None => break None,
            }
        };
        let Some(id) = seen.unsettled() else {
            return Ok(());
        };
        // Dropped with the task under way: re-attach, a few times.
        loop {
            if left == 0 {
                return match dropped {
                    Some(e) => Err(e),
                    None => Ok(()),
                };
            }
            left -= 1;
            tokio::time::sleep(wait).await;
            wait *= 2;
            tracing::info!(task = %id, url = %client.card_url(), "the A2A stream dropped; re-subscribing");
            match client
                .stream(method::SUBSCRIBE, serde_json::json!({"id": id}))
                .await
            {
                Ok(s) => {
                    stream = s;
                    break;
                }
                Err(A2aError::Unreachable { .. }) => continue,
                // Over already (-32004), or no SubscribeToTask: asked about instead.
                Err(A2aError::Rpc { .. } | A2aError::Http { .. }) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }
}

/// Cancels the remote task `id`, giving up after a short while (the turn
/// is cancelled either way).
async fn cancel_remote(client: &A2aClient, id: String) {
    let params = serde_json::json!({"id": id});
    match tokio::time::timeout(
        CANCEL_GRACE,
        client.call::<Value>(method::CANCEL_TASK, params),
    )
    .await
    {
        Ok(Ok(_)) => tracing::debug!(task = %id, "remote A2A task cancelled"),
        Ok(Err(e)) => tracing::warn!(task = %id, error = %e, "cannot cancel the remote A2A task"),
        Err(_) => {
            tracing::warn!(task = %id, "the remote A2A agent did not take the cancel in time")
        }
    }
}
