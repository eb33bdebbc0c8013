//! The shared state of an AG-UI run: the client's state (what the request
//! sent) with the run's own beside it under `troupe`:
//!
//! ```json
//! {"troupe": {"team": "press", "run": "run-…", "status": "running",
//!             "agents": {"press/drafting/writer": {"status": "done", "turns": 2}},
//!             "toolCalls": 1, "requests": []}}
//! ```
//!
//! It goes out as one `STATE_SNAPSHOT` when the run starts (and again
//! before an interrupt, as the protocol asks), then as `STATE_DELTA`s, JSON
//! Patches (RFC 6902) made here as the state changes and applied to the
//! copy kept, so every delta applies to what the client holds.

use serde_json::{Map, Value, json};

/// The state and the means to change it by patches.
pub(crate) struct RunState {
    doc: Value,
}

/// A JSON Pointer token, escaped (RFC 6901).
fn token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

impl RunState {
    /// The state a run of `team` (troupe run `run`) starts from.
    pub(crate) fn new(client: Map<String, Value>, team: &str, run: &str) -> Self {
        let mut doc = Value::Object(client);
        doc["troupe"] = json!({
            "team": team,
            "run": run,
            "status": "running",
            "agents": {},
            "toolCalls": 0,
            "requests": [],
        });
        RunState { doc }
    }

    /// All of it.
    pub(crate) fn snapshot(&self) -> &Value {
        &self.doc
    }

    /// Sets `value` at `/troupe/<path…>`; the patch operation doing it
    /// (`add` for a new member, else `replace`).
    fn set(&mut self, parents: &[&str], last: &str, value: Value) -> Value {
        let mut at = &mut self.doc["troupe"];
        for p in parents {
            at = &mut at[*p];
        }
        let op = if at.get(last).is_some() {
            "replace"
        } else {
            "add"
        };
        at[last] = value.clone();
        let pointer: String = parents
            .iter()
            .chain([&last])
            .map(|p| format!("/{}", token(p)))
            .collect();
        json!({"op": op, "path": format!("/troupe{pointer}"), "value": value})
    }

    /// An agent (or nested team) at `path` began a turn.
    pub(crate) fn started(&mut self, path: &str) -> Vec<Value> {
        let turns = self.doc["troupe"]["agents"][path]["turns"]
            .as_u64()
            .unwrap_or(0);
        if turns == 0 {
            vec![self.set(&["agents"], path, json!({"status": "working", "turns": 1}))]
        } else {
            vec![
                self.set(&["agents", path], "status", json!("working")),
                self.set(&["agents", path], "turns", json!(turns + 1)),
            ]
        }
    }

    /// The agent at `path` ended its turn (`done`, `failed`).
    pub(crate) fn ended(&mut self, path: &str, status: &str) -> Vec<Value> {
        if self.doc["troupe"]["agents"].get(path).is_none() {
            return Vec::new();
        }
        vec![self.set(&["agents", path], "status", json!(status))]
    }

    /// A tool was called.
    pub(crate) fn tool_called(&mut self) -> Vec<Value> {
        let n = self.doc["troupe"]["toolCalls"].as_u64().unwrap_or(0);
        vec![self.set(&[], "toolCalls", json!(n + 1))]
    }

    /// The run settled: its status (troupe's word) and the questions it
    /// waits on.
    pub(crate) fn settled(&mut self, status: &str, requests: Value) -> Vec<Value> {
        let mut ops = Vec::new();
        if self.doc["troupe"]["status"] != json!(status) {
            ops.push(self.set(&[], "status", json!(status)));
        }
        if self.doc["troupe"]["requests"] != requests {
            ops.push(self.set(&[], "requests", requests));
        }
        ops
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patches_escape_paths_and_say_add_then_replace() {
        let mut s = RunState::new(Map::new(), "t", "r");
        let first = s.started("t/a");
        assert_eq!(first[0]["op"], "add");
        assert_eq!(first[0]["path"], "/troupe/agents/t~1a");
        let again = s.started("t/a");
        assert_eq!(again[0]["op"], "replace");
        assert_eq!(again[1]["value"], 2);
        assert_eq!(s.snapshot()["troupe"]["agents"]["t/a"]["turns"], 2);
    }
}
