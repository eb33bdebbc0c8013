//! One run of a case: `troupe run --events jsonl` on the team (this very
//! binary, so a case runs exactly as a user's run does, replayed from its
//! cassette when it has one), read back into what the assertions look at.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Instant;

use serde_json::Value;

/// What a run showed.
#[derive(Debug, Default)]
pub(crate) struct Observed {
    /// The final answer's text.
    pub answer: String,
    /// Every event line, in order (the result line excluded).
    pub events: Vec<Value>,
    /// Agent turns taken.
    pub turns: u64,
    /// Model calls made.
    pub model_calls: u64,
    /// What the run cost (USD).
    pub cost: f64,
    /// How long the run took (its `run_finished` elapsed time, else the
    /// process's wall time), in milliseconds.
    pub latency_ms: u64,
    /// Why the run did not complete, if it did not.
    pub error: Option<String>,
}

/// How a case's run uses its cassette.
#[derive(Debug, Clone)]
pub(crate) enum Tape {
    /// No cassette: the team's models as configured.
    None,
    /// Answered from this cassette, offline.
    Replay(PathBuf),
    /// Recorded into this cassette.
    Record(PathBuf),
}

/// Runs `team` on `input` once with this binary; reads the run back.
/// With earlier `session` turns, a `troupe chat` conversation: those turns
/// first, then `input`.
pub(crate) async fn run(team: &Path, input: &str, session: &[String], tape: &Tape) -> Observed {
    let exe = match std::env::current_exe() {
        Ok(e) => e,
        Err(e) => return failed(format!("cannot find the troupe binary: {e}")),
    };
    let mut cmd = tokio::process::Command::new(exe);
    if session.is_empty() {
        cmd.args(["run", "--events", "jsonl", "--no-input"]);
    } else {
        cmd.args(["chat", "--events", "jsonl"]);
    }
    match tape {
        Tape::None => {}
        Tape::Replay(dir) => {
            cmd.arg("--replay").arg(dir);
        }
        Tape::Record(dir) => {
            cmd.arg("--record").arg(dir);
        }
    }
    cmd.arg(team);
    if session.is_empty() {
        cmd.arg(input).stdin(Stdio::null());
    } else {
        cmd.stdin(Stdio::piped());
    }
    cmd.stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let started = Instant::now();
    let mut child = match cmd.spawn() {
        Ok(c) => c,
        Err(e) => return failed(format!("cannot start the run: {e}")),
    };
    if let Some(mut stdin) = child.stdin.take() {
        use tokio::io::AsyncWriteExt;
        let mut turns: String = session.iter().map(|t| format!("{}\n", t.trim())).collect();
        turns.push_str(&format!("{}\n/exit\n", input.trim()));
        if let Err(e) = stdin.write_all(turns.as_bytes()).await {
            return failed(format!("cannot send the session's turns: {e}"));
        }
    }
    let out = match child.wait_with_output().await {
        Ok(o) => o,
        Err(e) => return failed(format!("the run could not be waited for: {e}")),
    };
    let wall = u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
    let mut seen = read(&String::from_utf8_lossy(&out.stdout));
    if seen.latency_ms == 0 {
        seen.latency_ms = wall;
    }
    if seen.error.is_none() && !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        let last = stderr.lines().rev().find(|l| !l.trim().is_empty());
        seen.error = Some(format!(
            "the run exited with {}: {}",
            out.status
                .code()
                .map_or("a signal".into(), |c| c.to_string()),
            last.unwrap_or("no message")
        ));
    }
    seen
}

fn failed(why: String) -> Observed {
    Observed {
        error: Some(why),
        ..Observed::default()
    }
}

/// Reads `--events jsonl` output: the events, then the result line.
pub(crate) fn read(stdout: &str) -> Observed {
    let mut seen = Observed::default();
    let mut ended = false;
    for line in stdout.lines().filter(|l| !l.trim().is_empty()) {
        let Ok(v) = serde_json::from_str::<Value>(line) else {
            continue;
        };
        match v["type"].as_str() {
            Some("result") => {
                ended = true;
                seen.answer = v["final_response"].as_str().unwrap_or_default().into();
                seen.turns += v["turns"].as_u64().unwrap_or_default();
                spent(&mut seen, &v["stats"], v["turns"].is_u64());
                if v["status"] != "completed" && seen.error.is_none() {
                    seen.error = Some(format!(
                        "the run ended {}{}",
                        v["status"].as_str().unwrap_or("?"),
                        v["detail"]
                            .as_str()
                            .map(|d| format!(": {d}"))
                            .unwrap_or_default()
                    ));
                }
            }
            Some("error") => {
                ended = true;
                spent(&mut seen, &v["stats"], false);
                seen.error = Some(v["error"].as_str().unwrap_or("the run failed").into());
            }
            // The team's own runs (a nested team's are inside them).
            Some("run_finished") if !v["path"].as_str().unwrap_or("").contains('/') => {
                if let Some(ms) = v["elapsed_ms"].as_u64() {
                    seen.latency_ms += ms;
                }
                seen.events.push(v);
            }
            _ => seen.events.push(v),
        }
    }
    if !ended && seen.error.is_none() {
        seen.error = Some("the run printed no result".into());
    }
    seen
}

/// Adds what a run (or a conversation's turn) spent; its turns too unless
/// its result line counted them (`counted`).
fn spent(seen: &mut Observed, stats: &Value, counted: bool) {
    let total = &stats["total"];
    seen.cost += total["cost"].as_f64().unwrap_or_default();
    seen.model_calls += total["model_calls"].as_u64().unwrap_or_default();
    if !counted {
        seen.turns += total["turns"].as_u64().unwrap_or_default();
    }
}

#[cfg(test)]
mod tests {
    use super::read;

    #[test]
    fn events_and_the_result_line_are_read_back() {
        let out = r#"{"type":"run_started","path":"t","participants":1}
{"type":"message_produced","path":"t/a","message":{}}
{"type":"run_finished","path":"t","elapsed_ms":12,"status":"completed"}
{"type":"result","status":"completed","final_response":"hi","turns":2,"stats":{"total":{"cost":0.5,"model_calls":3}},"requests":[]}
"#;
        let seen = read(out);
        assert_eq!(seen.answer, "hi");
        assert_eq!((seen.turns, seen.model_calls, seen.latency_ms), (2, 3, 12));
        assert_eq!(seen.cost, 0.5);
        assert_eq!(seen.events.len(), 3);
        assert!(seen.error.is_none());
        let failed = read(r#"{"type":"error","error":"boom","run_id":"r"}"#);
        assert_eq!(failed.error.as_deref(), Some("boom"));
        assert!(read("").error.is_some());
    }
}
