//! A stdio MCP server's process: started in a process group of its own
//! with the environment it is allowed, and a [`ProcessGroup`] guard that
//! kills the whole group — a wrapper (`sh -c`, `npx`, `uvx`) and every
//! process it started — when the connection ends, whichever way it ends.
//! Where the client itself may die first, the server runs under the
//! helpers of `reaper.rs`, and the group killed is the guard's, whose
//! death makes the reaper kill the server's whole tree.

use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

use rmcp::transport::TokioChildProcess;

use super::env::child_env;

/// What a stdio server is started from.
pub(super) struct Launch<'a> {
    pub command: &'a str,
    pub args: &'a [String],
    pub env: &'a [(String, String)],
    pub inherit_env: &'a [String],
    pub cwd: Option<&'a PathBuf>,
}

/// The process groups of the stdio servers alive in this process, for
/// [`kill_mcp_servers`].
static LIVE: Mutex<Vec<i32>> = Mutex::new(Vec::new());

fn live() -> MutexGuard<'static, Vec<i32>> {
    // A list of ids stays meaningful even if a holder panicked.
    LIVE.lock().unwrap_or_else(|p| p.into_inner())
}

/// Kills every stdio MCP server this process started and has not yet
/// stopped, each with its whole process group. For a program about to
/// exit without dropping its clients (`std::process::exit`, a second
/// Ctrl-C): the `troupe` CLI calls it before such an exit.
pub fn kill_mcp_servers() {
    let groups: Vec<i32> = std::mem::take(&mut *live());
    for pgid in groups {
        kill_group(pgid);
    }
}

#[cfg(unix)]
fn kill_group(pgid: i32) {
    use nix::sys::signal::{Signal, killpg};
    use nix::unistd::Pid;
    // ESRCH (the group is gone already) is what we want anyway.
    let _ = killpg(Pid::from_raw(pgid), Signal::SIGKILL);
}

#[cfg(not(unix))]
fn kill_group(_pgid: i32) {
    // No process groups: the child itself is killed on drop
    // (`kill_on_drop`), its own children are not.
}

/// Owns a stdio server's process group: dropping it kills the whole
/// group (`SIGKILL` to every process in it), on close, on a failed
/// startup, on cancellation, and while a panic unwinds.
#[derive(Debug)]
pub(super) struct ProcessGroup {
    pgid: Option<i32>,
}

impl ProcessGroup {
    /// The group the child `pid` leads (it was started with
    /// `process_group(0)`).
    fn led_by(pid: Option<u32>) -> Self {
        let pgid = pid.and_then(|p| i32::try_from(p).ok()).filter(|p| *p > 0);
        if let Some(p) = pgid {
            live().push(p);
        }
        ProcessGroup { pgid }
    }

    /// The group's id (the leader's process id), if there is a group.
    pub(super) fn id(&self) -> Option<i32> {
        self.pgid
    }

    /// Kills the whole group now (once).
    pub(super) fn kill(&mut self) {
        if let Some(pgid) = self.pgid.take() {
            live().retain(|p| *p != pgid);
            kill_group(pgid);
        }
    }
}

impl Drop for ProcessGroup {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts the server: its own process group, only the environment it is
/// allowed, stdio piped for MCP, and its stderr copied line by line to
/// troupe's with registered secrets masked (a server that logs the token
/// it was given does not print it). Must run inside a Tokio runtime.
pub(super) fn spawn(launch: &Launch<'_>) -> std::io::Result<(TokioChildProcess, ProcessGroup)> {
    // Supervised (see `reaper.rs`): the guard is started, and it starts
    // the reaper, which starts the server.
    let mut cmd = match super::reaper::guard_command() {
        Some((program, first)) => {
            let mut cmd = tokio::process::Command::new(program);
            cmd.args(first).arg(launch.command);
            cmd
        }
        None => tokio::process::Command::new(launch.command),
    };
    cmd.args(launch.args);
    cmd.env_clear();
    cmd.envs(child_env(
        std::env::vars_os(),
        launch.inherit_env,
        launch.env,
    ));
    if let Some(dir) = launch.cwd {
        cmd.current_dir(dir);
    }
    #[cfg(unix)]
    cmd.process_group(0);
    // A backstop where there are no process groups.
    cmd.kill_on_drop(true);
    let (transport, stderr) = TokioChildProcess::builder(cmd)
        .stderr(std::process::Stdio::piped())
        .spawn()?;
    let group = ProcessGroup::led_by(transport.id());
    if let Some(stderr) = stderr {
        tokio::spawn(copy_stderr(stderr));
    }
    Ok((transport, group))
}

/// Copies a server's stderr to troupe's, a line at a time, masked; ends
/// when the server's last process closes it.
async fn copy_stderr(stderr: tokio::process::ChildStderr) {
    use std::io::Write;
    use tokio::io::AsyncBufReadExt;
    let mut reader = tokio::io::BufReader::new(stderr);
    let mut line = Vec::new();
    // Bytes, not `lines()`: a line that is not UTF-8 must not stop the
    // copy (the server would block on a full pipe).
    while matches!(reader.read_until(b'\n', &mut line).await, Ok(n) if n > 0) {
        let text = String::from_utf8_lossy(&line);
        let masked = troupe_runtime::secrets::redact(text.trim_end_matches(['\n', '\r']));
        let _ = writeln!(std::io::stderr().lock(), "{masked}");
        line.clear();
    }
}
