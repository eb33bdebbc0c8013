//! `troupe runs show FILE RUN`: one run's checkpoints, oldest first — id,
//! superstep, time, last speaker, the questions it waited on — and where
//! the run was forked from, as a table or JSON lines (a checkpoint's id is
//! what `troupe run FILE --resume RUN --at CHECKPOINT [--fork]` takes).

use std::path::PathBuf;

use troupe::config::Config;
use troupe::store::Lineage;
use troupe::{history::CheckpointSummary, history::summarize_checkpoints};

use super::end_line::Question;
use super::{FAILED, emit, report, status_key, store};

/// `troupe runs show`'s arguments.
#[derive(clap::Args)]
pub(crate) struct ShowArgs {
    /// The config file (its `checkpoint:` store).
    file: PathBuf,
    /// The run (`latest`: the newest).
    run: String,
    /// One JSON object per checkpoint and line (the first line: the run).
    #[arg(long)]
    json: bool,
}

/// `troupe runs show FILE RUN [--json]`.
pub(crate) async fn show(args: ShowArgs) -> u8 {
    let config = match Config::load(&args.file) {
        Ok(c) => c,
        Err(e) => return report(&e),
    };
    let store = match store::open(&config, "`troupe runs show`").await {
        Ok(s) => s,
        Err(code) => return code,
    };
    let run = match store::find(&args.file, &store, &args.run).await {
        Ok(r) => r,
        Err(code) => return code,
    };
    let failed = |e: troupe::store::StoreError| {
        eprintln!(
            "troupe: cannot read run `{}` in the {}: {e}",
            run.run_id,
            store::describe(&store)
        );
        FAILED
    };
    let checkpoints = match summarize_checkpoints(store.checkpoints.as_ref(), &run.run_id).await {
        Ok(c) => c,
        Err(e) => return failed(e),
    };
    let lineage = match store.checkpoints.lineage(&run.run_id).await {
        Ok(l) => l,
        Err(e) => return failed(e),
    };
    if args.json {
        let mut text = format!(
            "{}\n",
            serde_json::json!({
                "run_id": run.run_id,
                "forked_from": lineage.as_ref().map(lineage_json),
                "checkpoints": checkpoints.len(),
            })
        );
        for c in &checkpoints {
            text.push_str(&format!("{}\n", line(c)));
        }
        return emit(&text);
    }
    let mut out = format!("run {}", run.run_id);
    if let Some(l) = &lineage {
        out.push_str(&format!(" (forked from {l})"));
    }
    out.push_str(&format!(", {} checkpoint(s)\n", checkpoints.len()));
    out.push_str(&table(&checkpoints));
    emit(&out)
}

/// A lineage as JSON.
pub(super) fn lineage_json(l: &Lineage) -> serde_json::Value {
    serde_json::json!({
        "run_id": l.parent_run,
        "checkpoint": l.checkpoint.to_string(),
        "forked_at": time(l.forked_at),
    })
}

/// `2024-05-01T12:00:01Z`.
fn time(t: std::time::SystemTime) -> String {
    humantime::format_rfc3339_seconds(t).to_string()
}

/// One checkpoint as a JSON object.
fn line(c: &CheckpointSummary) -> serde_json::Value {
    serde_json::json!({
        "checkpoint": c.id.to_string(),
        "superstep": c.superstep,
        "time": time(c.created_at),
        "last_speaker": c.last_speaker,
        "last_message": c.last_message,
        "requests": Question::all(&c.requests),
        "status": c.status.as_ref().map(|s| status_key(Some(s))),
        "unreadable": c.unreadable,
    })
}

/// The checkpoints as a table.
fn table(checkpoints: &[CheckpointSummary]) -> String {
    let mut rows = vec![
        [
            "CHECKPOINT",
            "SUPERSTEP",
            "TIME",
            "LAST SPEAKER",
            "WAITING FOR",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for c in checkpoints {
        let waiting = match &c.unreadable {
            Some(why) => format!("(cannot read: {why})"),
            None => c
                .requests
                .iter()
                .map(|q| q.id.as_str())
                .collect::<Vec<_>>()
                .join(", "),
        };
        rows.push(vec![
            c.id.to_string(),
            c.superstep.to_string(),
            time(c.created_at),
            c.last_speaker.clone().unwrap_or_default(),
            waiting,
        ]);
    }
    columns(&rows)
}

/// Rows (the first a header) as aligned columns.
pub(super) fn columns(rows: &[Vec<String>]) -> String {
    let mut widths: Vec<usize> = Vec::new();
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            let w = cell.chars().count();
            match widths.get_mut(i) {
                Some(have) => *have = (*have).max(w),
                None => widths.push(w),
            }
        }
    }
    let mut out = String::new();
    for row in rows {
        let line: Vec<String> = row
            .iter()
            .zip(&widths)
            .map(|(c, w)| format!("{c:<w$}"))
            .collect();
        out.push_str(line.join("  ").trim_end());
        out.push('\n');
    }
    out
}
