//! Serving until Ctrl-C or SIGTERM, then shutting down gracefully: no new
//! connection is accepted, every run under way is stopped gracefully (its
//! turns under way finish and, when the config has a store, a checkpoint
//! is saved, so `troupe run FILE --resume RUN_ID` carries it on), runs
//! still going after the grace period are cancelled, and runs waiting for
//! input end interrupted (their streams close).

use std::time::Duration;

use axum::Router;
use tokio::net::TcpListener;

use super::run::Status;
use super::state::Shared;
use super::{FAILED, OK, say};

/// How long open connections get to close after the runs ended.
const DRAIN: Duration = Duration::from_secs(2);

/// Serves `router` on `listener` until a signal, then shuts down; the exit
/// code.
pub(crate) async fn run(
    listener: TcpListener,
    router: Router,
    state: Shared,
    grace: Duration,
) -> u8 {
    let (tx, rx) = tokio::sync::oneshot::channel::<()>();
    let mut server = tokio::spawn(super::listen::serve(
        listener,
        router,
        state.limits.max_connections,
        state.limits.timeouts,
        async move {
            let _ = rx.await;
        },
    ));
    tokio::select! {
        r = &mut server => return ended(r),
        () = signal() => {}
    }
    say(
        "troupe serve: stopping: no new connections; letting the runs under way finish their turns",
    );
    // The listener closes at once; the connections open (a run's event
    // stream, an answer being computed) end as their runs do.
    let _ = tx.send(());
    stop_runs(&state, grace).await;
    match tokio::time::timeout(DRAIN, &mut server).await {
        Ok(r) => ended(r),
        Err(_) => {
            say("troupe serve: connections still open after the runs ended; closing them");
            server.abort();
            OK
        }
    }
}

fn ended(r: Result<(), tokio::task::JoinError>) -> u8 {
    match r {
        Ok(()) => OK,
        Err(e) => {
            say(&format!(
                "troupe serve: the server's task ended abnormally: {e}"
            ));
            FAILED
        }
    }
}

/// Stops every run gracefully, cancelling those still going after `grace`;
/// runs waiting for input end interrupted.
async fn stop_runs(state: &Shared, grace: Duration) {
    let runs = state.runs.all();
    let mut going = Vec::new();
    for run in &runs {
        let status = run.inner().status();
        match status {
            Status::Running => {
                run.ctx.stop_gracefully();
                going.push(run.clone());
            }
            Status::WaitingForInput => run.interrupt(),
            _ => {}
        }
    }
    let all_done = async {
        for run in &going {
            let mut changes = run.watch();
            while run.inner().status() == Status::Running {
                if changes.changed().await.is_err() {
                    break;
                }
            }
        }
    };
    if tokio::time::timeout(grace, all_done).await.is_err() {
        say("troupe serve: the grace period is over; cancelling the runs still going");
        for run in &going {
            run.ctx.cancel();
        }
        let settle = async {
            for run in &going {
                let mut changes = run.watch();
                while run.inner().status() == Status::Running {
                    if changes.changed().await.is_err() {
                        break;
                    }
                }
            }
        };
        let _ = tokio::time::timeout(DRAIN, settle).await;
    }
}

/// Completes at the first Ctrl-C or SIGTERM.
async fn signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let Ok(mut term) = signal(SignalKind::terminate()) else {
            let _ = tokio::signal::ctrl_c().await;
            return;
        };
        tokio::select! {
            _ = tokio::signal::ctrl_c() => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}
