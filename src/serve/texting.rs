//! Double texting: what a message to a session whose run is still going
//! does. The policy is the request's (the runs API's `double_texting`
//! field, the OpenAI endpoint's `X-Troupe-Double-Texting` header, an A2A
//! message's `troupe.double_texting` metadata), else the team's
//! (`serve: {double_texting: …}`), else `enqueue`:
//!
//! - `reject`: 409; the run under way goes on.
//! - `enqueue`: the new run waits for the one under way to end.
//! - `interrupt`: the run under way is stopped gracefully (its turns under
//!   way finish, what it did stays in the session, it ends `interrupted`);
//!   then the new run starts the workflow afresh from the new message (what
//!   the interrupted run had still to do is dropped).
//! - `rollback`: the run under way is cancelled (it ends `cancelled`) and
//!   the session is put back as it was before that run; then the new run
//!   starts.
//!
//! A run "under way" is one `running` (a run waiting for input is not:
//! the next message answers its question).

use std::sync::{Arc, OnceLock};

use tokio::sync::OwnedSemaphorePermit;
use troupe::config::DoubleTexting;
use troupe::{Thread, WorkflowState};

use super::drive::{self, Start};
use super::error::ApiError;
use super::run::{Run, Status};
use super::state::Shared;
use super::texting_table::Entry;

/// The run a new one follows, and what to do once it ended.
struct Prior {
    run: Arc<Run>,
    before: Arc<OnceLock<Option<Thread>>>,
    policy: DoubleTexting,
}

/// Where a new session run stands among its session's runs: the run it
/// follows, and where it keeps the session as it was before it.
#[derive(Default)]
pub(crate) struct Turn {
    prior: Option<Prior>,
    before: Option<Arc<OnceLock<Option<Thread>>>>,
}

/// A policy as a request writes it; 400 for anything else.
pub(crate) fn parse(text: &str) -> Result<DoubleTexting, ApiError> {
    match text {
        "reject" => Ok(DoubleTexting::Reject),
        "enqueue" => Ok(DoubleTexting::Enqueue),
        "interrupt" => Ok(DoubleTexting::Interrupt),
        "rollback" => Ok(DoubleTexting::Rollback),
        other => Err(ApiError::bad_request(format!(
            "unknown double_texting `{other}`: reject, enqueue, interrupt or rollback"
        ))),
    }
}

/// The header a chat completion request names its policy in.
const HEADER: &str = "x-troupe-double-texting";

/// The policy a chat completion request's header asks for, if any.
pub(crate) fn asked(headers: &axum::http::HeaderMap) -> Result<Option<DoubleTexting>, ApiError> {
    headers
        .get(HEADER)
        .map(|v| {
            v.to_str()
                .map_err(|_| ApiError::bad_request(format!("`{HEADER}` is not text")))
                .and_then(parse)
        })
        .transpose()
}

/// The policy for a message to `team`: `asked`, else the team's, else
/// `enqueue`.
pub(crate) fn policy(state: &Shared, team: &str, asked: Option<DoubleTexting>) -> DoubleTexting {
    asked
        .or_else(|| {
            state
                .teams
                .get(team)
                .and_then(|t| t.config.spec().serve.as_ref())
                .and_then(|s| s.double_texting)
        })
        .unwrap_or(DoubleTexting::Enqueue)
}

impl Turn {
    /// When the run of this worker the new run follows started, if it
    /// follows one.
    pub(crate) fn prior_started_ms(&self) -> Option<i64> {
        self.prior.as_ref().map(|p| p.run.started_ms())
    }

    /// Has the new run follow `run` (of another worker, `board/`) under
    /// `policy`: it starts once `run` has ended.
    pub(crate) fn follow(&mut self, run: Arc<Run>, policy: DoubleTexting) {
        self.prior = Some(Prior {
            run,
            before: Arc::default(),
            policy,
        });
    }
}

/// Admits a new run of `team` (made by `create`) in `session` under the
/// policy (`asked`, else the team's, else `enqueue`): 409 when it is
/// `reject` and a run is under way there; otherwise the new run, made and
/// recorded as the session's latest, and the run it follows (stopped or
/// cancelled already when the policy says so).
pub(crate) fn admit(
    state: &Shared,
    team: &str,
    session: Option<&str>,
    asked: Option<DoubleTexting>,
    create: impl FnOnce() -> Arc<Run>,
) -> Result<(Arc<Run>, Turn), ApiError> {
    let Some(session) = session else {
        return Ok((create(), Turn::default()));
    };
    let policy = policy(state, team, asked);
    let mut latest = state.texting.lock();
    state.texting.sweep(&mut latest);
    let key = (team.to_string(), session.to_string());
    let going = latest.get(&key).and_then(|e| {
        let run = e.run.upgrade()?;
        let going = run.inner().status() == Status::Running;
        going.then(|| Prior {
            run,
            before: e.before.clone(),
            policy,
        })
    });
    if let Some(p) = &going {
        match policy {
            DoubleTexting::Reject => {
                return Err(ApiError::conflict(format!(
                    "session `{session}` has run `{}` under way (double_texting: reject); send again when it ends, or ask for enqueue, interrupt or rollback",
                    p.run.id
                )));
            }
            DoubleTexting::Enqueue => {}
            DoubleTexting::Interrupt => p.run.ctx.stop_gracefully(),
            DoubleTexting::Rollback => p.run.ctx.cancel(),
        }
    }
    let run = create();
    let before: Arc<OnceLock<Option<Thread>>> = Arc::default();
    latest.insert(
        key,
        Entry {
            run: Arc::downgrade(&run),
            before: before.clone(),
        },
    );
    Ok((
        run,
        Turn {
            prior: going,
            before: Some(before),
        },
    ))
}

/// Runs `run` in the background once the run it follows has ended (and,
/// for a rollback, its session is put back), holding a run slot.
pub(crate) fn spawn(
    state: Shared,
    run: Arc<Run>,
    start: Start,
    slot: OwnedSemaphorePermit,
    turn: Turn,
) {
    let (Some(session), Some(keep)) = (run.session.clone(), turn.before) else {
        drive::spawn(state, run, start, slot);
        return;
    };
    tokio::spawn(async move {
        if let Some(p) = turn.prior {
            ended(&p.run).await;
            let settled = match p.policy {
                DoubleTexting::Rollback => match p.before.get() {
                    Some(before) => restore(&state, &run.team, &session, before).await,
                    None => Ok(()),
                },
                DoubleTexting::Interrupt if p.run.inner().status() == Status::Interrupted => {
                    close(&state, &run.team, &session).await
                }
                _ => Ok(()),
            };
            if let Err(e) = settled {
                run.finish(Err(e));
                drop(slot);
                return;
            }
        }
        if run.ctx.is_cancelled() {
            // Cancelled (or rolled back) before it began: nothing ran.
            run.inner().status = Some(Status::Cancelled);
            run.bump();
            drop(slot);
            return;
        }
        let loaded = match state.team(Some(&run.team)) {
            Ok(team) => team.store.threads.load_thread(&session).await.ok(),
            Err(_) => None,
        };
        let result = match loaded {
            // Kept for a rollback, and the turn runs on it: loaded once.
            Some(before) => {
                let _ = keep.set(before.clone());
                drive::drive(&state, &run, start, Some(before.map(Box::new))).await
            }
            // The stretch loads it again and fails, naming why.
            None => drive::drive(&state, &run, start, None).await,
        };
        run.finish(result);
        // Its entry goes with it (a worker of a shared board keeps it: a
        // rollback forwarded from another worker may still come).
        if state
            .teams
            .get(&run.team)
            .is_some_and(|t| t.board.is_none())
        {
            state.texting.ended(&(run.team.clone(), session), &run);
        }
        drop(slot);
    });
}

/// Rolls `run` (a session run of this worker) back for a double text
/// through another worker (`board/forward.rs`): cancels it and, once it
/// ended, puts its session back as it was before it (as `admit` and
/// `spawn` do for one through this worker).
pub(crate) async fn roll_back(state: &Shared, run: &Arc<Run>) -> Result<(), String> {
    let Some(session) = run.session.clone() else {
        return Err(format!("run `{}` is not a session's run", run.id));
    };
    let before = state
        .texting
        .lock()
        .get(&(run.team.clone(), session.clone()))
        .filter(|e| e.run.upgrade().is_some_and(|r| Arc::ptr_eq(&r, run)))
        .map(|e| e.before.clone());
    if run.inner().status() == Status::Running {
        run.ctx.cancel();
    }
    ended(run).await;
    match before.as_ref().and_then(|b| b.get()) {
        Some(before) => restore(state, &run.team, &session, before).await,
        // Not begun (nothing of it in the session), or followed by a
        // newer run here, which keeps the session.
        None => Ok(()),
    }
}

/// Waits until `run` is no longer running.
async fn ended(run: &Run) {
    let mut changes = run.watch_status();
    loop {
        changes.borrow_and_update();
        if run.inner().status() != Status::Running || changes.changed().await.is_err() {
            return;
        }
    }
}

/// Closes the stretch an interrupted run left open in session `id`: its
/// messages stay, but what it had still to do (messages waiting in inboxes,
/// the steps or nodes ahead) is dropped, so the next message starts the
/// workflow afresh instead of carrying the interrupted run on.
async fn close(state: &Shared, team: &str, id: &str) -> Result<(), String> {
    let team = state.team(Some(team)).map_err(|e| e.message)?;
    let threads = &team.store.threads;
    let failed = |e| format!("cannot close the interrupted run in session `{id}`: {e}");
    let Some(mut thread) = threads.load_thread(id).await.map_err(failed)? else {
        return Ok(());
    };
    let consumed = thread.len();
    if let Some(old) = thread.state_mut().take() {
        *thread.state_mut() = Some(WorkflowState {
            consumed,
            turns: old.turns,
            last_speaker: old.last_speaker,
            ..WorkflowState::default()
        });
    }
    threads.save_thread(id, &thread).await.map_err(failed)
}

/// Puts session `id` back as it was (`before`; none: deleted).
async fn restore(
    state: &Shared,
    team: &str,
    id: &str,
    before: &Option<Thread>,
) -> Result<(), String> {
    let team = state.team(Some(team)).map_err(|e| e.message)?;
    let threads = &team.store.threads;
    let done = match before {
        Some(thread) => threads.save_thread(id, thread).await,
        None => threads.delete_thread(id).await.map(|_| ()),
    };
    done.map_err(|e| format!("cannot roll session `{id}` back: {e}"))
}
