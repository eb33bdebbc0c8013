//! `troupe runs`: the runs in the config's checkpoint store, newest first —
//! when each started and last checkpointed, its superstep, its status and
//! the questions it waits on — as a table or JSON lines.

use std::path::PathBuf;
use std::time::SystemTime;

use troupe::RunSummary;
use troupe::config::Config;

use super::end_line::Question;
use super::{OK, emit, report, status_key, store};

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
    if json {
        let text: String = runs.iter().map(|r| format!("{}\n", line(r))).collect();
        return emit(&text);
    }
    if runs.is_empty() {
        eprintln!("no runs in the {}", store::describe(&store));
        return OK;
    }
    emit(&table(&runs))
}

/// The status shown: a run with questions pending waits for input.
fn status(r: &RunSummary) -> &'static str {
    if !r.requests.is_empty() {
        "waiting_for_input"
    } else if r.unreadable.is_some() {
        "unreadable"
    } else {
        status_key(r.status.as_ref())
    }
}

/// `2024-05-01T12:00:01Z`.
fn time(t: SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

/// One run as a JSON object.
fn line(r: &RunSummary) -> serde_json::Value {
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
    })
}

/// The runs as a table, a column per field.
fn table(runs: &[RunSummary]) -> String {
    let head = [
        "RUN",
        "STARTED",
        "LAST CHECKPOINT",
        "SUPERSTEP",
        "STATUS",
        "WAITING FOR",
    ];
    let rows: Vec<[String; 6]> = runs
        .iter()
        .map(|r| {
            let waiting = if let Some(why) = &r.unreadable {
                format!("(cannot read: {why})")
            } else {
                r.requests
                    .iter()
                    .map(|q| q.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            [
                r.run_id.clone(),
                time(r.started),
                time(r.last_checkpoint),
                r.superstep.to_string(),
                status(r).to_string(),
                waiting,
            ]
        })
        .collect();
    let mut widths = head.map(str::len);
    for row in &rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut out = String::new();
    let mut push = |cells: &[&str]| {
        let line: Vec<String> = cells
            .iter()
            .zip(widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    };
    push(&head);
    for row in &rows {
        push(&row.each_ref().map(String::as_str));
    }
    out
}
