//! An evaluation suite (`troupe eval SUITE.yaml`): the team to run, its
//! cases with their assertions and judges, how often and how many at once.
//! Loaded with located errors (FILE:LINE:COL).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Deserialize;

/// A suite as written.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Suite {
    /// The team config, relative to the suite file.
    pub team: PathBuf,
    /// Runs of each case (pass rate = passed / repeats); default 1.
    #[serde(default = "one")]
    pub repeats: usize,
    /// Runs under way at once; default 1.
    #[serde(default = "one")]
    pub concurrency: usize,
    /// A judge asked for every case that has none of its own.
    #[serde(default)]
    pub judge: Option<Judge>,
    /// The cases, in order.
    pub cases: Vec<Case>,
}

fn one() -> usize {
    1
}

/// One case: a task and what its run must show.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Case {
    /// Its name (default: `case-N`).
    #[serde(default)]
    pub name: Option<String>,
    /// The task.
    pub input: String,
    /// A cassette directory (relative to the suite): the case runs offline,
    /// replayed from it (`troupe eval --record` writes it).
    #[serde(default)]
    pub cassette: Option<PathBuf>,
    /// Earlier user turns of a conversation (one, or a list): the case
    /// runs as a `troupe chat` session, these turns first, then `input`;
    /// the assertions see the whole conversation's events and spending,
    /// and the last turn's answer.
    #[serde(default, deserialize_with = "one_or_many")]
    pub session: Vec<String>,
    /// What the run must show.
    #[serde(default, rename = "assert")]
    pub checks: Checks,
    /// A model grading the answer by a rubric.
    #[serde(default)]
    pub judge: Option<Judge>,
}

/// The assertions of a case; each is optional.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Checks {
    /// Texts the final answer contains (one, or a list).
    #[serde(default, deserialize_with = "one_or_many")]
    pub contains: Vec<String>,
    /// A regular expression the final answer matches.
    #[serde(default)]
    pub matches: Option<String>,
    /// A JSON Schema the final answer (parsed as JSON) validates against.
    #[serde(default)]
    pub schema: Option<serde_json::Value>,
    /// Fields of the final answer (parsed as JSON), by JSON pointer
    /// (`/approved`), and the values they must equal.
    #[serde(default)]
    pub field: BTreeMap<String, serde_json::Value>,
    /// Tools that must have been called (one, or a list).
    #[serde(default, deserialize_with = "one_or_many")]
    pub tool_called: Vec<ToolCalled>,
    /// Agents that spoke in this order (names or paths as the events show
    /// them: in a `steps` workflow, the step ids; others may speak between
    /// them).
    #[serde(default)]
    pub order: Option<Vec<String>>,
    /// Event types that must occur (`tool_result`, `handoff`, ...; one, or
    /// a list).
    #[serde(default, deserialize_with = "one_or_many")]
    pub event: Vec<String>,
    /// At most this many agent turns.
    #[serde(default)]
    pub max_turns: Option<u64>,
    /// At most this cost (USD; the run's and its judge's).
    #[serde(default)]
    pub max_cost: Option<f64>,
    /// At most this many milliseconds for the run.
    #[serde(default)]
    pub max_latency_ms: Option<u64>,
}

/// One value, or a list of them.
fn one_or_many<'de, D, T>(d: D) -> Result<Vec<T>, D::Error>
where
    D: serde::Deserializer<'de>,
    T: Deserialize<'de>,
{
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum OneOrMany<T> {
        Many(Vec<T>),
        One(T),
    }
    Ok(match OneOrMany::deserialize(d)? {
        OneOrMany::Many(v) => v,
        OneOrMany::One(t) => vec![t],
    })
}

/// A tool call a case expects.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ToolCalled {
    /// The tool's name.
    pub name: String,
    /// Arguments the call must have (these keys with these values; others
    /// may be there too).
    #[serde(default)]
    pub arguments: Option<serde_json::Map<String, serde_json::Value>>,
}

/// A model grading an answer: it is asked for `{score, reason}`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct Judge {
    /// A model of the team config (by name), or a model spec inline
    /// (as under `models:`, e.g. `{provider: scripted, replies: [...]}`).
    pub model: serde_json::Value,
    /// What a good answer is.
    pub rubric: String,
    /// The least score (0 to 1) that passes; default 0.5.
    #[serde(default)]
    pub min_score: Option<f64>,
}

/// A suite that cannot be used, located where possible.
#[derive(Debug)]
pub(crate) struct SuiteError(pub String);

impl std::fmt::Display for SuiteError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Suite {
    /// Reads and checks the suite at `path`.
    pub(crate) fn load(path: &Path) -> Result<Suite, SuiteError> {
        let shown = path.display();
        let text = std::fs::read_to_string(path)
            .map_err(|e| SuiteError(format!("{shown}: cannot read the suite: {e}")))?;
        let suite: Suite = serde_saphyr::from_str(&text).map_err(|e| {
            let at = e
                .location()
                .map(|l| format!(":{}:{}", l.line(), l.column()))
                .unwrap_or_default();
            SuiteError(format!("{shown}{at}: {e}"))
        })?;
        suite.check(path)?;
        Ok(suite)
    }

    fn check(&self, path: &Path) -> Result<(), SuiteError> {
        let shown = path.display();
        let bad = |field: String, why: String| SuiteError(format!("{shown}: {field}: {why}"));
        if self.repeats == 0 {
            return Err(bad("repeats".into(), "must be 1 or more".into()));
        }
        if self.concurrency == 0 {
            return Err(bad("concurrency".into(), "must be 1 or more".into()));
        }
        if self.cases.is_empty() {
            return Err(bad("cases".into(), "the suite has no case".into()));
        }
        let mut names = std::collections::HashSet::new();
        for (i, case) in self.cases.iter().enumerate() {
            let name = case.name(i);
            if !names.insert(name.clone()) {
                return Err(bad(
                    format!("cases[{i}].name"),
                    format!("`{name}` names two cases"),
                ));
            }
            if !case.session.is_empty() {
                let turns = case.session.iter().chain([&case.input]);
                if let Some(t) = turns
                    .map(|t| t.trim())
                    .find(|t| t.contains('\n') || t.is_empty() || t.starts_with('/'))
                {
                    return Err(bad(
                        format!("cases[{i}].session"),
                        format!("a chat turn is one line of text, not starting with `/`: `{t}`"),
                    ));
                }
            }
            if let Some(re) = &case.checks.matches {
                regex::Regex::new(re)
                    .map_err(|e| bad(format!("cases[{i}].assert.matches"), e.to_string()))?;
            }
            if let Some(schema) = &case.checks.schema {
                jsonschema::validator_for(schema)
                    .map_err(|e| bad(format!("cases[{i}].assert.schema"), e.to_string()))?;
            }
            for pointer in case.checks.field.keys() {
                if !pointer.is_empty() && !pointer.starts_with('/') {
                    return Err(bad(
                        format!("cases[{i}].assert.field"),
                        format!("`{pointer}` is not a JSON pointer (write `/{pointer}`)"),
                    ));
                }
            }
            if let Some(judge) = case.judge.as_ref().or(self.judge.as_ref())
                && !(judge.model.is_string() || judge.model.is_object())
            {
                return Err(bad(
                    format!("cases[{i}].judge.model"),
                    "a model name of the team config, or a model spec (a mapping)".into(),
                ));
            }
        }
        Ok(())
    }
}

impl Case {
    /// Its name: given, or `case-N` (from 1).
    pub(crate) fn name(&self, index: usize) -> String {
        self.name
            .clone()
            .unwrap_or_else(|| format!("case-{}", index + 1))
    }
}
