//! A cassette's file: `DIR/model_calls.jsonl`, one [`Entry`] per line in
//! the order the calls ended — diff-friendly, secrets taken out.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::model::{ChatResponse, Usage};

/// The file of a cassette directory holding its model calls.
pub const CALLS_FILE: &str = "model_calls.jsonl";
/// The file of a cassette directory holding its tool calls.
pub const TOOLS_FILE: &str = "tool_calls.jsonl";

/// One recorded model call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The agent that made it (its name in the config).
    pub agent: String,
    /// Its index among that agent's calls, from 0.
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
}

/// One recorded tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolEntry {
    /// The agent that made it.
    pub agent: String,
    /// Its index among that agent's tool calls, from 0.
    pub call: u64,
    /// The tool.
    pub tool: String,
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

/// Appends entries to a cassette's file.
pub(super) struct Writer {
    path: PathBuf,
    file: Mutex<File>,
}

impl Writer {
    /// Makes `dir` and an empty file `name` in it.
    pub(super) fn create(dir: &Path, name: &str) -> Result<Self, CassetteError> {
        fs::create_dir_all(dir).map_err(io("create", dir))?;
        let path = dir.join(name);
        let file = OpenOptions::new()
            .create(true)
            .write(true)
            .truncate(true)
            .open(&path)
            .map_err(io("create", &path))?;
        Ok(Writer {
            path,
            file: Mutex::new(file),
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
        let mut file = self.file.lock().unwrap_or_else(|p| p.into_inner());
        file.write_all(line.as_bytes())
            .and_then(|()| file.flush())
            .map_err(io("write", &self.path))
    }
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
/// `[REDACTED]`.
pub(super) fn redact(value: serde_json::Value, secrets: &[String]) -> serde_json::Value {
    use serde_json::Value;
    if secrets.is_empty() {
        return value;
    }
    match value {
        Value::String(mut s) => {
            for secret in secrets {
                if s.contains(secret.as_str()) {
                    s = s.replace(secret.as_str(), "[REDACTED]");
                }
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
