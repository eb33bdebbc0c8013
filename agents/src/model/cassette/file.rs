//! A cassette's files: `DIR/model_calls.jsonl` ([`Entry`]) and
//! `DIR/tool_calls.jsonl` ([`ToolEntry`]), one entry per line in the order
//! the calls ended — diff-friendly, secrets taken out — and how they are
//! written and read.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::model::{ChatDelta, ChatResponse, Usage};

/// The file of a cassette directory holding its model calls.
pub const CALLS_FILE: &str = "model_calls.jsonl";
/// The file of a cassette directory holding its tool calls (MCP tools'
/// included).
pub const TOOLS_FILE: &str = "tool_calls.jsonl";
/// The file of a cassette directory holding its MCP servers' tool lists.
pub const MCP_FILE: &str = "mcp_servers.jsonl";
/// The file of a cassette directory holding the turns of remote (A2A)
/// agents.
pub const A2A_FILE: &str = "a2a_calls.jsonl";

/// One recorded model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The path of the agent that made it (`team/nested_team/agent`; the
    /// agent's name in cassettes of an older troupe).
    pub agent: String,
    /// Its index among the calls of that path, from 0, in the order they
    /// started.
    pub call: u64,
    /// The model's name.
    pub model: String,
    /// When it started, in seconds since the Unix epoch.
    pub started_unix_s: f64,
    /// How long it took, in milliseconds.
    pub latency_ms: f64,
    /// The request, as JSON (secrets replaced by `[REDACTED]`).
    pub request: serde_json::Value,
    /// The tokens it used, if the provider said.
    #[serde(default)]
    pub usage: Option<Usage>,
    /// The response (`None` when the call failed).
    #[serde(default)]
    pub response: Option<ChatResponse>,
    /// Why it failed, if it did.
    #[serde(default)]
    pub error: Option<String>,
    /// The pieces of a streamed answer as they came (replayed as they
    /// were); none for a call answered whole.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chunks: Option<Vec<ChatDelta>>,
}

/// One recorded tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolEntry {
    /// The path of the agent that made it.
    pub agent: String,
    /// Its index among the tool calls of that path, from 0.
    pub call: u64,
    /// The tool.
    pub tool: String,
    /// The MCP server that answered it (`tools/call`), for an MCP tool.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// The arguments, as the model gave them (secrets replaced).
    pub arguments: String,
    /// How long it took, in milliseconds.
    pub latency_ms: f64,
    /// The result the model saw (`None` when the call failed).
    #[serde(default)]
    pub output: Option<String>,
    /// The note kept after the result is trimmed, if any.
    #[serde(default)]
    pub memory: Option<String>,
    /// Why it failed, if it did.
    #[serde(default)]
    pub error: Option<String>,
}

/// Why a cassette cannot be opened or written.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CassetteError {
    /// A file operation failed.
    #[error("cassette: cannot {action} '{}': {source}", path.display())]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file or directory.
        path: PathBuf,
        /// The OS's error.
        #[source]
        source: std::io::Error,
    },
    /// A line of the file is not an entry.
    #[error("cassette: {}:{line}: {message}", path.display())]
    Bad {
        /// The file.
        path: PathBuf,
        /// Its line (1-based).
        line: usize,
        /// What is wrong.
        message: String,
    },
}

fn io<'a>(
    action: &'static str,
    path: &'a Path,
) -> impl FnOnce(std::io::Error) -> CassetteError + 'a {
    move |source| CassetteError::Io {
        action,
        path: path.to_path_buf(),
        source,
    }
}

/// Appends entries to a cassette's file, opening it for each entry (a
/// server recording every run keeps no file open between calls).
pub(super) struct Writer {
    path: PathBuf,
    /// Whether the file was made (a file that is not made eagerly is made
    /// by its first entry); the lock keeps lines whole.
    made: Mutex<bool>,
}

impl Writer {
    /// Makes `dir` and, when `eager`, an empty file `name` in it; else a
    /// file `name` left by an earlier recording is removed, and the file
    /// is made by the first entry.
    pub(super) fn create(dir: &Path, name: &str, eager: bool) -> Result<Self, CassetteError> {
        fs::create_dir_all(dir).map_err(io("create", dir))?;
        let path = dir.join(name);
        if eager {
            open(&path, false)?;
        } else {
            match fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(io("remove", &path)(e));
                }
                _ => {}
            }
        }
        Ok(Writer {
            path,
            made: Mutex::new(eager),
        })
    }

    /// Writes `entry` as one line, `secrets` replaced.
    pub(super) fn append(
        &self,
        entry: &impl Serialize,
        secrets: &[String],
    ) -> Result<(), CassetteError> {
        let value = serde_json::to_value(entry).map_err(|e| CassetteError::Bad {
            path: self.path.clone(),
            line: 0,
            message: e.to_string(),
        })?;
        let line = format!("{}\n", redact(value, secrets));
        let mut made = self.made.lock().unwrap_or_else(|p| p.into_inner());
        let mut file = open(&self.path, *made)?;
        *made = true;
        file.write_all(line.as_bytes())
            .and_then(|()| file.flush())
            .map_err(io("write", &self.path))
    }
}

/// `path` opened for writing: at its end with `append`, else made empty.
fn open(path: &Path, append: bool) -> Result<File, CassetteError> {
    let mut options = OpenOptions::new();
    options.create(true);
    if append {
        options.append(true);
    } else {
        options.write(true).truncate(true);
    }
    options.open(path).map_err(io("create", path))
}

/// Every entry of file `name` of the cassette in `dir`; with `optional`,
/// none when there is no such file.
pub(super) fn read<T: serde::de::DeserializeOwned>(
    dir: &Path,
    name: &str,
    optional: bool,
) -> Result<Vec<T>, CassetteError> {
    let path = dir.join(name);
    let text = match fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if optional && e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io("read", &path)(e)),
    };
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(i, l)| {
            serde_json::from_str(l).map_err(|e| CassetteError::Bad {
                path: path.clone(),
                line: i + 1,
                message: e.to_string(),
            })
        })
        .collect()
}

/// The values of the environment's variables that look like secrets
/// (names with KEY, TOKEN, SECRET or PASSWORD; values of 8 bytes or more).
pub(super) fn secrets_from_env() -> Vec<String> {
    let mut out: Vec<String> = std::env::vars()
        .filter(|(k, v)| {
            let k = k.to_ascii_uppercase();
            v.len() >= 8
                && ["KEY", "TOKEN", "SECRET", "PASSWORD"]
                    .iter()
                    .any(|w| k.contains(w))
        })
        .map(|(_, v)| v)
        .collect();
    // Longest first, so a secret holding another is replaced whole.
    out.sort_by_key(|s| std::cmp::Reverse(s.len()));
    out
}

/// `value` with every occurrence of a secret in its strings replaced by
/// `[REDACTED]`: those of `secrets`, and those registered with the
/// process's secrets registry (keys, headers and MCP environments read
/// from `${VAR}`s: [`troupe_runtime::secrets`]).
pub(super) fn redact(value: serde_json::Value, secrets: &[String]) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(mut s) => {
            for secret in secrets {
                if s.contains(secret.as_str()) {
                    s = s.replace(secret.as_str(), "[REDACTED]");
                }
            }
            if let std::borrow::Cow::Owned(masked) = troupe_runtime::secrets::redact(&s) {
                s = masked;
            }
            Value::String(s)
        }
        Value::Array(items) => {
            Value::Array(items.into_iter().map(|v| redact(v, secrets)).collect())
        }
        Value::Object(map) => Value::Object(
            map.into_iter()
                .map(|(k, v)| (k, redact(v, secrets)))
                .collect(),
        ),
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_are_replaced_wherever_they_are() {
        let v = serde_json::json!({"a": ["key sk-12345678 here", 3], "b": {"c": "sk-12345678"}});
        let out = redact(v, &["sk-12345678".to_string()]);
        assert_eq!(
            out,
            serde_json::json!({"a": ["key [REDACTED] here", 3], "b": {"c": "[REDACTED]"}})
        );
    }
}
