//! Each served team as an AG-UI agent (protocol 1.0, HTTP + SSE):
//! `POST /agui/{team}` takes a `RunAgentInput` and answers with the run's
//! events over SSE, behind the same token as every route.
//!
//! A thread is a troupe session (`threadId` is its id): a request runs the
//! team on the last user message of `messages` as the session's next turn
//! (the session's double-texting policy applies); a thread troupe has no
//! session of yet starts from the messages sent before that one. A run
//! that asks the user (`ask_user`, a tool waiting for approval, a `user:`
//! agent) ends with `RUN_FINISHED` carrying `outcome: {type: "interrupt",
//! interrupts}`, one interrupt per open question (its `id` the troupe
//! request id, its `toolCallId` the call it asks about); the next request
//! on the thread carries `resume: [{interruptId, status, payload}]`
//! answering every one (`payload`: a string, `{answer}`, or an approval's
//! `{approved, reason?}`; `status: "cancelled"` cancels the run) and
//! streams the run on — from the stored session when the run is gone
//! (`resume.rs`). A request that breaks that contract (no `resume` while
//! questions are open, an unknown interrupt id, a question left out,
//! nothing to resume) gets a stream of `RUN_STARTED` and `RUN_ERROR` (the
//! protocol's way), a body that is not a `RunAgentInput` a 400 naming the
//! field. `tools`, `context` and `forwardedProps` are accepted and not used.

mod input;
mod resume;
mod state;
mod stream;
mod translate;
mod wire;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State as Axum};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use troupe::Thread;

use self::input::RunAgentInput;
use self::resume::Resumed;
use self::stream::{Plan, refuse};
use super::body::JsonBody;
use super::completion::answering;
use super::drive::Start;
use super::error::ApiError;
use super::run::Run;
use super::state::Shared;
use super::texting;

/// The AG-UI route.
pub(crate) fn routes() -> Router<Shared> {
    Router::new().route("/agui/{team}", post(run))
}

/// `POST /agui/{team}`.
async fn run(
    Axum(state): Axum<Shared>,
    Path(team): Path<String>,
    JsonBody(body): JsonBody<serde_json::Value>,
) -> Result<Response, ApiError> {
    let team = state.team(Some(&team))?.name.clone();
    let input = input::parse(body)?;
    let waiting = resume::waiting_run(&state, &team, &input.thread_id).await?;
    let refused = |code: &str, message: String| -> Result<Response, ApiError> {
        Ok(refuse(
            &input.thread_id,
            &input.run_id,
            input.parent_run_id.as_deref(),
            code,
            &message,
        )
        .into_response())
    };
    let (run, from, pending) = match (input.resumes(), waiting) {
        (true, waiting) => match resume::resume(&state, &team, &input, waiting).await? {
            Resumed::Going(run, from, pending) => (run, from, pending),
            Resumed::Refused(why) => return refused("RESUME_INVALID", why),
        },
        (false, Some(run)) => {
            let open = resume::open_ids(&run).join(", ");
            return refused(
                "INTERRUPT_PENDING",
                format!(
                    "thread `{}` has open interrupts ({open}): send `resume` answering each",
                    input.thread_id
                ),
            );
        }
        (false, None) => (start(&state, &team, &input).await?, 0, Vec::new()),
    };
    let answering = answering(&state, &team)?;
    let whole = answering.is_empty();
    let run_state = state::RunState::new(input.client_state(), &team, &run.id);
    let translator = translate::Translator::new(&team, answering, &input.run_id, run_state);
    let plan = Plan {
        state: state.clone(),
        run,
        thread: input.thread_id,
        run_id: input.run_id,
        parent: input.parent_run_id,
        from,
        pending,
        whole,
        translator,
    };
    Ok(stream::stream(plan).into_response())
}

/// Starts a new run of `team` on the thread's next user message; a thread
/// troupe has no session of yet starts from the conversation the client
/// sent before it.
async fn start(state: &Shared, team: &str, input: &RunAgentInput) -> Result<Arc<Run>, ApiError> {
    let text = input.last_user_text()?;
    let session = input.thread_id.clone();
    let history = input.history();
    if !history.is_empty() {
        let threads = &state.team(Some(team))?.store.threads;
        let failed =
            |e| ApiError::internal(format!("cannot read or seed session `{session}`: {e}"));
        if threads
            .load_thread(&session)
            .await
            .map_err(failed)?
            .is_none()
        {
            let seed = Thread::from_messages(history);
            threads.save_thread(&session, &seed).await.map_err(failed)?;
        }
    }
    let slot = state.limits.run_slot()?;
    let (run, turn) = super::board::admit(state, team, Some(&session), None, || {
        state.runs.create(team, &text, Some(session.clone()))
    })
    .await?;
    texting::spawn(state.clone(), run.clone(), Start::Session(text), slot, turn);
    Ok(run)
}
