//! What the serving benches share (`examples/serve_load.rs`,
//! `examples/serve_ttft.rs` and `bench serve`): the `troupe` binary they
//! start, starting `troupe serve` and reading the address it listens on,
//! a server's resident memory from `/proc`, and percentiles.
#![allow(dead_code)]

use std::error::Error;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The server binary: `troupe` next to the example's directory
/// (`target/<profile>/troupe` for `target/<profile>/examples/NAME`), or
/// the one `TROUPE_BIN` names.
pub fn troupe_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("TROUPE_BIN") {
        return PathBuf::from(bin);
    }
    std::env::current_exe()
        .ok()
        .and_then(|exe| Some(exe.parent()?.parent()?.join("troupe")))
        .unwrap_or_else(|| PathBuf::from("troupe"))
}

/// Starts `troupe serve --listen 127.0.0.1:0 [extra] CONFIG` with no
/// token, as a user runs it, and waits until it says where it listens:
/// the child and its base URL (`http://127.0.0.1:PORT`). `env` is added to
/// the server's environment. Its stderr is read to the end in the
/// background (so it never blocks on a full pipe).
pub fn start_troupe_serve(
    bin: &Path,
    config: &Path,
    extra: &[String],
    env: &[(&str, &str)],
) -> Result<(Child, String), Box<dyn Error>> {
    let mut cmd = Command::new(bin);
    cmd.args(["serve", "--listen", "127.0.0.1:0"])
        .args(extra)
        .arg(config)
        .env_remove("TROUPE_SERVE_TOKEN")
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    for (k, v) in env {
        cmd.env(k, v);
    }
    start_listening(cmd)
}

/// Starts a server's command (stderr piped) and waits until it says where
/// it listens (`http://…` on stderr): the child and that base URL.
pub fn start_listening(mut cmd: Command) -> Result<(Child, String), Box<dyn Error>> {
    let bin = PathBuf::from(cmd.get_program());
    let mut server = cmd
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start {}: {e}", bin.display()))?;
    let stderr = server.stderr.take().ok_or("no stderr pipe")?;
    let mut lines = BufReader::new(stderr).lines();
    let base = loop {
        let Some(line) = lines.next() else {
            let _ = server.wait();
            return Err(format!("{} serve exited before listening", bin.display()).into());
        };
        let line = line?;
        if let Some(at) = line.find("http://") {
            break line[at..]
                .split_whitespace()
                .next()
                .unwrap_or("")
                .to_string();
        }
    };
    std::thread::spawn(move || for _ in lines {});
    Ok((server, base))
}

/// A `KiB` field of `/proc/PID/status` (0 when the process is gone).
fn status_field(pid: u32, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|n| n.parse().ok())
        })
        .unwrap_or(0)
}

/// The process's resident memory, KiB.
pub fn rss_kib(pid: u32) -> u64 {
    status_field(pid, "VmRSS:")
}

/// The process's resident anonymous memory, KiB: its heap and stacks,
/// without the pages of files it maps (its program's code, which the
/// kernel maps in folios of up to 2 MiB, as the page cache holds them:
/// the same binary measured 27–34 MiB idle from one copy to another).
pub fn anon_kib(pid: u32) -> u64 {
    status_field(pid, "RssAnon:")
}

/// [`anon_kib`] of a process and every process under it.
pub fn tree_anon_kib(pid: u32) -> u64 {
    process_tree(pid).into_iter().map(anon_kib).sum()
}

/// The process's peak resident memory, KiB.
pub fn peak_kib(pid: u32) -> u64 {
    status_field(pid, "VmHWM:")
}

/// The process and every process under it (a server that forks workers).
pub fn process_tree(pid: u32) -> Vec<u32> {
    let mut parents = Vec::new();
    if let Ok(dir) = std::fs::read_dir("/proc") {
        for entry in dir.flatten() {
            let Some(child) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.parse::<u32>().ok())
            else {
                continue;
            };
            let ppid = std::fs::read_to_string(format!("/proc/{child}/stat"))
                .ok()
                .and_then(|s| {
                    // The fields after the command name (which may hold spaces).
                    s.rsplit_once(')')?
                        .1
                        .split_whitespace()
                        .nth(1)?
                        .parse::<u32>()
                        .ok()
                });
            if let Some(ppid) = ppid {
                parents.push((child, ppid));
            }
        }
    }
    let mut tree = vec![pid];
    let mut i = 0;
    while i < tree.len() {
        let p = tree[i];
        tree.extend(parents.iter().filter(|(_, pp)| *pp == p).map(|(c, _)| *c));
        i += 1;
    }
    tree
}

/// The resident memory of a process and its children, KiB.
pub fn tree_rss_kib(pid: u32) -> u64 {
    process_tree(pid).into_iter().map(rss_kib).sum()
}

/// The peak resident memory of a process and its children (the sum of
/// each one's peak), KiB.
pub fn tree_peak_kib(pid: u32) -> u64 {
    process_tree(pid).into_iter().map(peak_kib).sum()
}

/// The CPU time (user + system) a process has used so far, µs, from
/// `/proc/PID/stat` (in ticks of 1/100 s: Linux's `USER_HZ`; threads that
/// have exited count). `None` when it cannot be read.
pub fn cpu_us(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // utime and stime are fields 14 and 15: the 12th and 13th after the name.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let ticks = fields.get(11)?.parse::<u64>().ok()? + fields.get(12)?.parse::<u64>().ok()?;
    Some(ticks * 10_000)
}

/// [`cpu_us`] of a process and every process under it.
pub fn tree_cpu_us(pid: u32) -> Option<u64> {
    process_tree(pid).into_iter().map(cpu_us).sum()
}

/// The `p` quantile (0..=1) of sorted durations (nearest rank); zero when
/// there are none.
pub fn quantile(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}
