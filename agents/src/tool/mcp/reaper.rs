//! Stdio servers that never outlive their client, however it ends.
//!
//! The server's process group is killed when the connection ends
//! (`process.rs`), but a client killed with `SIGKILL`, or ended by a
//! signal before it dropped its connections (a `SIGHUP`, a Ctrl-C while a
//! server is still starting), runs no code at all. Something else must
//! notice, so on Linux a program that calls [`supervise_with`] starts each
//! stdio server under two small helper processes, the same program run
//! again (see [`run_if_asked`]):
//!
//! ```text
//! client ── guard ── reaper ── server (own process group) ── its children …
//! ```
//!
//! - the **guard** is the process the client spawns, talks through (its
//!   stdio is the server's) and kills: it only watches its parent, and
//!   exits when the client is gone or the reaper ended;
//! - the **reaper** is a child subreaper (`PR_SET_CHILD_SUBREAPER`), so
//!   whatever the server starts and leaves behind is re-parented to it,
//!   not to init; when its parent (the guard) is gone — killed by the
//!   client's connection guard or by rmcp, or ended because the client
//!   died — it kills the server's process group and every descendant
//!   re-parented to it, then exits. When the server exits by itself it
//!   does the same to what the server left, and exits with its status.
//!
//! Why two: the client kills the process it spawned with `SIGKILL` (rmcp
//! does on drop, and so does the group guard), and a process killed so
//! cannot clean up; the reaper is never the one killed. Why not the
//! parent-death signal (`PR_SET_PDEATHSIG`) on the server: it must be set
//! between fork and exec (`pre_exec`, which is `unsafe`, forbidden in this
//! workspace), it fires when the spawning *thread* ends (tokio's blocking
//! threads come and go), and it reaches the server only, not its children.
//! Why not a pidfd: polling the parent id every [`POLL`] is as prompt for
//! this purpose, needs no `unsafe` and no newer kernel, and costs one
//! system call per poll. Both helpers sit in process groups of their own,
//! so a Ctrl-C or hang-up sent to the terminal's foreground group reaches
//! the client only, which then ends them as above.

use std::ffi::OsString;
use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::Duration;

/// The first argument that makes [`run_if_asked`] be the guard.
pub const GUARD_ARG: &str = "__mcp-guard";
/// The first argument that makes [`run_if_asked`] be the reaper.
pub const REAPER_ARG: &str = "__mcp-reaper";

/// How often the helpers look whether their parent is still there.
pub const POLL: Duration = Duration::from_millis(50);

static PROGRAM: OnceLock<PathBuf> = OnceLock::new();

/// Starts every stdio MCP server of this process under the guard and the
/// reaper (Linux; elsewhere servers start as before). `program` must be
/// an executable that calls [`run_if_asked`] first thing in `main` — the
/// `troupe` binary passes itself. The first call wins.
pub fn supervise_with(program: PathBuf) {
    let _ = PROGRAM.set(program);
}

/// The helper program and its first arguments, when servers are
/// supervised: `[GUARD_ARG, <this pid>]`, then the server's command line.
pub(super) fn guard_command() -> Option<(&'static PathBuf, [OsString; 2])> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let program = PROGRAM.get()?;
    Some((
        program,
        [GUARD_ARG.into(), std::process::id().to_string().into()],
    ))
}

/// Runs the guard or the reaper when this process was started as one
/// (its first argument is [`GUARD_ARG`] or [`REAPER_ARG`]) and returns its
/// exit code; `None` for any other command line.
pub fn run_if_asked() -> Option<u8> {
    let mut args = std::env::args_os().skip(1);
    let role = args.next()?;
    let role = if role == GUARD_ARG {
        Role::Guard
    } else if role == REAPER_ARG {
        Role::Reaper
    } else {
        return None;
    };
    let rest: Vec<OsString> = args.collect();
    Some(helper::run(role, rest))
}

/// Which helper this process is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Guard,
    Reaper,
}

#[cfg(target_os = "linux")]
mod helper {
    use std::ffi::OsString;
    use std::os::unix::process::{CommandExt, ExitStatusExt};
    use std::process::{Command, ExitStatus};

    use nix::sys::signal::{Signal, kill, killpg};
    use nix::sys::wait::{WaitPidFlag, waitpid};
    use nix::unistd::Pid;

    use super::{POLL, REAPER_ARG, Role};

    /// How many rounds the reaper kills for (each [`ROUND`] apart) before
    /// it gives up on processes that keep coming back.
    const ROUNDS: usize = 50;
    const ROUND: std::time::Duration = std::time::Duration::from_millis(10);

    /// `args`: the parent's pid, then the server's command line.
    pub(super) fn run(role: Role, args: Vec<OsString>) -> u8 {
        let mut args = args.into_iter();
        let parent = args
            .next()
            .and_then(|p| p.to_str().and_then(|p| p.parse::<u32>().ok()));
        let (Some(parent), Some(command)) = (parent, args.next()) else {
            eprintln!("troupe: {REAPER_ARG}: usage: PARENT_PID COMMAND [ARGS...]");
            return 2;
        };
        let rest: Vec<OsString> = args.collect();
        if role == Role::Reaper {
            // Without it, what the server leaves goes to init, out of
            // reach; with it failing, the process group is still killed.
            let _ = nix::sys::prctl::set_child_subreaper(true);
        }
        // The parent died before we looked: nothing to start.
        if std::os::unix::process::parent_id() != parent {
            return 1;
        }
        let mut cmd = match role {
            Role::Guard => {
                let mut c = match std::env::current_exe() {
                    Ok(exe) => Command::new(exe),
                    Err(e) => {
                        eprintln!(
                            "troupe: cannot find its own executable to supervise '{}': {e}",
                            command.to_string_lossy()
                        );
                        return 127;
                    }
                };
                c.arg(REAPER_ARG)
                    .arg(std::process::id().to_string())
                    .arg(&command);
                c
            }
            Role::Reaper => Command::new(&command),
        };
        cmd.args(&rest);
        // A group of its own: the reaper's is killed whole, and the guard
        // (whose group the client kills) must not take the reaper with it.
        cmd.process_group(0);
        let mut child = match cmd.spawn() {
            Ok(c) => c,
            Err(e) => {
                eprintln!("cannot start '{}': {e}", command.to_string_lossy());
                return 127;
            }
        };
        let pgid = child.id();
        loop {
            match child.try_wait() {
                Ok(Some(status)) => {
                    if role == Role::Reaper {
                        kill_tree(pgid);
                    }
                    return code(status);
                }
                Ok(None) => {}
                Err(_) => {
                    if role == Role::Reaper {
                        kill_tree(pgid);
                    }
                    return 1;
                }
            }
            if std::os::unix::process::parent_id() != parent {
                // The guard exits and its reaper sees it; the reaper
                // kills everything below it.
                if role == Role::Reaper {
                    kill_tree(pgid);
                }
                return 1;
            }
            std::thread::sleep(POLL);
        }
    }

    /// The exit code a status maps to (`128 + signal` for a signal).
    fn code(status: ExitStatus) -> u8 {
        match (status.code(), status.signal()) {
            (Some(c), _) => u8::try_from(c).unwrap_or(1),
            (None, Some(s)) => u8::try_from(128 + s).unwrap_or(1),
            (None, None) => 1,
        }
    }

    /// Kills the server's process group and every descendant re-parented
    /// to this process, until none is left (or after [`ROUNDS`] rounds).
    fn kill_tree(pgid: u32) {
        let group = i32::try_from(pgid).ok().map(Pid::from_raw);
        let me = std::process::id();
        for _ in 0..ROUNDS {
            if let Some(g) = group {
                let _ = killpg(g, Signal::SIGKILL);
            }
            let children = children_of(me);
            for &pid in &children {
                let p = Pid::from_raw(pid);
                // A child that leads a group of its own takes its group
                // with it (ESRCH where it leads none).
                let _ = killpg(p, Signal::SIGKILL);
                let _ = kill(p, Signal::SIGKILL);
                let _ = waitpid(p, Some(WaitPidFlag::WNOHANG));
            }
            let group_left = group.is_some_and(|g| killpg(g, None).is_ok());
            if children.is_empty() && !group_left {
                return;
            }
            std::thread::sleep(ROUND);
        }
    }

    /// The processes whose parent is `parent` (zombies included), from
    /// `/proc`.
    fn children_of(parent: u32) -> Vec<i32> {
        let Ok(dir) = std::fs::read_dir("/proc") else {
            return Vec::new();
        };
        dir.flatten()
            .filter_map(|e| e.file_name().to_str()?.parse::<i32>().ok())
            .filter(|pid| {
                std::fs::read_to_string(format!("/proc/{pid}/stat"))
                    .ok()
                    .and_then(|stat| {
                        // After the command name (in parentheses, which may
                        // hold anything): state, then the parent's pid.
                        let (_, rest) = stat.rsplit_once(')')?;
                        rest.split_whitespace().nth(1)?.parse::<u32>().ok()
                    })
                    == Some(parent)
            })
            .collect()
    }
}

#[cfg(not(target_os = "linux"))]
mod helper {
    use std::ffi::OsString;

    use super::Role;

    /// Servers are never started under the helpers off Linux.
    pub(super) fn run(_role: Role, _args: Vec<OsString>) -> u8 {
        eprintln!("troupe: the MCP server helpers run on Linux only");
        2
    }
}
