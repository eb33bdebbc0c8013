//! `troupe runs`: the runs in the config's checkpoint store, newest first —
//! when each started and last checkpointed, its superstep, its status and
//! the questions it waits on, the run and checkpoint a fork was forked
//! from — as a table or JSON lines.

use std::path::PathBuf;
use std::time::SystemTime;

use troupe::config::Config;
use troupe::history::RunSummary;
use troupe::store::Lineage;

use super::end_line::Question;
use super::runs_show::{columns, lineage_json};
use super::{FAILED, OK, emit, report, status_key, store};

/// `troupe runs FILE [--json]`.
pub(crate) async fn runs(file: PathBuf, json: bool) -> u8 {
    let config = match Config::load(&file) {
        Ok(c) => c,
        Err(e) => return report(&e),
    };
    let store = match store::open(&config, "`troupe runs`").await {
        Ok(s) => s,
        Err(code) => return code,
    };
    let runs = match store::runs(&store).await {
        Ok(r) => r,
        Err(code) => return code,
    };
    let mut lineage = Vec::with_capacity(runs.len());
    for r in &runs {
        match store.checkpoints.lineage(&r.run_id).await {
            Ok(l) => lineage.push(l),
            Err(e) => {
                eprintln!(
                    "troupe: cannot read where run `{}` was forked from in the {}: {e}",
                    r.run_id,
                    store::describe(&store)
                );
                return FAILED;
            }
        }
    }
    if json {
        let text: String = runs
            .iter()
            .zip(&lineage)
            .map(|(r, l)| format!("{}\n", line(r, l.as_ref())))
            .collect();
        return emit(&text);
    }
    if runs.is_empty() {
        eprintln!("no runs in the {}", store::describe(&store));
        return OK;
    }
    emit(&table(&runs, &lineage))
}

/// The status shown: a run with questions pending waits for input.
fn status(r: &RunSummary) -> &'static str {
    if !r.requests.is_empty() {
        "waiting_for_input"
    } else if r.unreadable.is_some() {
        "unreadable"
    } else if r.failed.is_some() {
        "failed"
    } else {
        status_key(r.status.as_ref())
    }
}

/// `2024-05-01T12:00:01Z`.
fn time(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

/// One run as a JSON object.
fn line(r: &RunSummary, lineage: Option<&Lineage>) -> serde_json::Value {
    serde_json::json!({
        "run_id": r.run_id,
        "started": time(r.started),
        "last_checkpoint": time(r.last_checkpoint),
        "checkpoint": r.checkpoint.to_string(),
        "checkpoints": r.checkpoints,
        "superstep": r.superstep,
        "status": status(r),
        "detail": r.status.as_ref().map(|s| s.to_string()),
        "requests": Question::all(&r.requests),
        "stats": r.stats,
        "unreadable": r.unreadable,
        "error": r.failed,
        "forked_from": lineage.map(lineage_json),
    })
}

/// The runs as a table, a column per field (`FORKED FROM` when a run
/// was forked).
fn table(runs: &[RunSummary], lineage: &[Option<Lineage>]) -> String {
    let forks = lineage.iter().any(Option::is_some);
    let mut head = vec![
        "RUN",
        "STARTED",
        "LAST CHECKPOINT",
        "SUPERSTEP",
        "STATUS",
        "WAITING FOR",
    ];
    if forks {
        head.push("FORKED FROM");
    }
    let mut rows = vec![head.into_iter().map(String::from).collect()];
    for (r, l) in runs.iter().zip(lineage) {
        let waiting = if let Some(why) = &r.unreadable {
            format!("(cannot read: {why})")
        } else if let Some(error) = &r.failed {
            format!("(failed: {error})")
        } else {
            r.requests
                .iter()
                .map(|q| q.id.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        };
        let mut row = vec![
            r.run_id.clone(),
            time(r.started),
            time(r.last_checkpoint),
            r.superstep.to_string(),
            status(r).to_string(),
            waiting,
        ];
        if forks {
            row.push(l.as_ref().map(ToString::to_string).unwrap_or_default());
        }
        rows.push(row);
    }
    columns(&rows)
}
