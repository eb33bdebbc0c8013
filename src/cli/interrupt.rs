//! Ctrl-C and SIGTERM during a run: the first asks the run to stop
//! gracefully (the turns under way finish, a checkpoint is saved) within a
//! grace period, after which it is cancelled; the second quits at once.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use troupe::RunContext;

use super::INTERRUPTED;

/// Whether a run was interrupted by a signal.
#[derive(Clone)]
pub(crate) struct Interrupt {
    flag: Arc<AtomicBool>,
}

impl Interrupt {
    /// Watches for Ctrl-C and SIGTERM on behalf of `ctx`'s run. The first
    /// stops the run gracefully and cancels it after `grace`; the second
    /// exits with code 130 at once, printing `hint` (how to resume) if
    /// given.
    pub(crate) fn watch(ctx: &RunContext, grace: Duration, hint: Option<String>) -> Self {
        let flag = Arc::new(AtomicBool::new(false));
        let mut signals = Signals::new();
        let (f, ctx) = (flag.clone(), ctx.clone());
        tokio::spawn(async move {
            if !signals.next().await {
                return;
            }
            f.store(true, Ordering::SeqCst);
            eprintln!(
                "\ninterrupted: letting the turns under way finish (up to {}; Ctrl-C again to quit at once)",
                seconds(grace)
            );
            ctx.stop_gracefully();
            tokio::select! {
                _ = tokio::time::sleep(grace) => {
                    eprintln!("interrupted: the grace period is over, cancelling the run");
                    ctx.cancel();
                }
                more = signals.next() => if more { quit(hint.as_deref()) },
            }
            if signals.next().await {
                quit(hint.as_deref());
            }
        });
        Interrupt { flag }
    }

    /// Whether a signal arrived.
    pub(crate) fn happened(&self) -> bool {
        self.flag.load(Ordering::SeqCst)
    }

    /// Completes once a signal arrived.
    pub(crate) async fn wait(&self) {
        while !self.happened() {
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }
}

/// Exits at once with code 130, killing the MCP servers first (an exit
/// drops nothing, and each runs in a process group of its own).
fn quit(hint: Option<&str>) -> ! {
    troupe::agents::kill_mcp_servers();
    eprintln!("aborted");
    if let Some(h) = hint {
        eprintln!("{h}");
    }
    // The spans of the run so far still go out.
    super::telemetry::shutdown();
    std::process::exit(i32::from(INTERRUPTED))
}

fn seconds(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s.fract() == 0.0 {
        format!("{s:.0}s")
    } else {
        format!("{s:.1}s")
    }
}

/// Ctrl-C and, on Unix, SIGTERM, registered when made (so a signal that
/// arrives before the watching task first runs is not missed).
struct Signals {
    #[cfg(unix)]
    interrupt: Option<tokio::signal::unix::Signal>,
    #[cfg(unix)]
    terminate: Option<tokio::signal::unix::Signal>,
}

impl Signals {
    fn new() -> Self {
        #[cfg(unix)]
        {
            use tokio::signal::unix::{SignalKind, signal};
            let open = |kind: SignalKind, name: &str| match signal(kind) {
                Ok(s) => Some(s),
                Err(e) => {
                    eprintln!("troupe: cannot watch for {name}: {e}");
                    None
                }
            };
            Signals {
                interrupt: open(SignalKind::interrupt(), "Ctrl-C"),
                terminate: open(SignalKind::terminate(), "SIGTERM"),
            }
        }
        #[cfg(not(unix))]
        {
            Signals {}
        }
    }

    /// Waits for the next signal; `false` when none can come any more.
    async fn next(&mut self) -> bool {
        #[cfg(unix)]
        {
            async fn one(s: &mut Option<tokio::signal::unix::Signal>) -> Option<()> {
                match s {
                    Some(s) => s.recv().await,
                    None => std::future::pending().await,
                }
            }
            if self.interrupt.is_none() && self.terminate.is_none() {
                return false;
            }
            tokio::select! {
                r = one(&mut self.interrupt) => r.is_some(),
                r = one(&mut self.terminate) => r.is_some(),
            }
        }
        #[cfg(not(unix))]
        {
            tokio::signal::ctrl_c().await.is_ok()
        }
    }
}
