//! `troupe run FILE --resume RUN [--at CHECKPOINT] --fork [NEW_ID]`: a run
//! carried on from any of its checkpoints as a new run, its last message
//! (`--edit-last TEXT`) or state values (`--set-state KEY=JSON`) edited
//! first; the run forked from is only read.

use std::path::Path;

use troupe::ForkEdits;
use troupe::config::Built;
use troupe::store::CheckpointId;

use super::run_start::Start;
use super::{INVALID, make_id, store};

/// What `--fork` and its edits say.
pub(super) struct ForkArgs<'a> {
    /// The new run's id (`""`: make one).
    pub(super) new_id: &'a str,
    /// `--edit-last`.
    pub(super) edit_last: Option<&'a str>,
    /// `--set-state`, as given.
    pub(super) set_state: &'a [String],
}

/// The fork of stored run `wanted` at checkpoint `at` (its newest without)
/// that `args` describe; bad edits and unknown runs or checkpoints are
/// said on stderr (exit 2).
pub(super) async fn resolve(
    file: &Path,
    built: &Built,
    wanted: &str,
    at: Option<CheckpointId>,
    args: ForkArgs<'_>,
) -> Result<Start, u8> {
    let edits = edits(args.edit_last, args.set_state).map_err(|e| {
        eprintln!("troupe run: {e}");
        INVALID
    })?;
    let store = store::durable(file, built.store.as_ref(), "--fork")?;
    let run = store::find(file, store, wanted).await?;
    let at = at.unwrap_or(run.checkpoint);
    let new_id = if args.new_id.is_empty() {
        make_id(&format!("{}-fork", built.workflow.name()))
    } else {
        args.new_id.to_string()
    };
    if let Err(e) = troupe::store::check_run_id(&new_id) {
        eprintln!("troupe run: --fork: {e}");
        return Err(INVALID);
    }
    Ok(Start::Fork {
        from: run.run_id,
        at,
        new_id,
        edits,
    })
}

/// The edits `--edit-last` and `--set-state KEY=JSON` ask for: a JSON
/// string is kept as its text, any other JSON value as its JSON text.
fn edits(edit_last: Option<&str>, set_state: &[String]) -> Result<ForkEdits, String> {
    let mut edits = ForkEdits::default();
    if let Some(text) = edit_last {
        edits = edits.last_message(text);
    }
    for given in set_state {
        let Some((key, json)) = given.split_once('=').filter(|(k, _)| !k.is_empty()) else {
            return Err(format!("--set-state takes KEY=JSON, got `{given}`"));
        };
        let value: serde_json::Value = serde_json::from_str(json).map_err(|e| {
            format!("--set-state {key}: `{json}` is not JSON ({e}); quote a text: {key}='\"text\"'")
        })?;
        let text = match value {
            serde_json::Value::String(s) => s,
            other => other.to_string(),
        };
        edits = edits.set_state(key, text);
    }
    Ok(edits)
}

#[cfg(test)]
mod tests {
    use super::edits;

    #[test]
    fn set_state_takes_json_values_and_names_what_is_wrong() {
        let e = edits(Some("new"), &["tone=\"formal\"".into(), "n=3".into()]).unwrap();
        assert_eq!(e.last_message.as_deref(), Some("new"));
        assert_eq!(
            e.state,
            [("tone".into(), "formal".into()), ("n".into(), "3".into())]
        );
        let err = edits(None, &["tone=formal".into()]).unwrap_err();
        assert!(
            err.contains("--set-state tone") && err.contains("not JSON"),
            "{err}"
        );
        let err = edits(None, &["=1".into()]).unwrap_err();
        assert!(err.contains("KEY=JSON"), "{err}");
    }
}
