//! What `troupe run` starts from: a task (given, or read from stdin), or
//! a stored run to carry on, with the answers to its questions
//! (`--answer`, `--answer-next`) and the checkpoint to go on from (`--at`).

use std::io::IsTerminal;
use std::path::Path;

use troupe::InputRequest;
use troupe::config::Built;
use troupe::store::CheckpointId;

use super::{INVALID, store};

/// What to run: a task, or a stored run to carry on.
pub(super) enum Start {
    Task(String),
    Resume {
        run_id: String,
        answers: Vec<(String, String)>,
        /// The checkpoint to carry on from (`--at`); the newest without.
        at: Option<CheckpointId>,
    },
    /// A stored run carried on from checkpoint `at` as new run `new_id`
    /// (`--fork`).
    Fork {
        from: String,
        at: CheckpointId,
        new_id: String,
        edits: troupe::ForkEdits,
    },
}

/// `REQUEST_ID=TEXT` pairs, in order, each request answered once.
pub(super) fn parse_answers(given: &[String]) -> Result<Vec<(String, String)>, String> {
    let mut answers: Vec<(String, String)> = Vec::with_capacity(given.len());
    for a in given {
        let Some((id, text)) = a.split_once('=').filter(|(id, _)| !id.is_empty()) else {
            return Err(format!(
                "--answer takes REQUEST_ID=TEXT (the ids `troupe runs FILE` lists), got `{a}`"
            ));
        };
        if answers.iter().any(|(seen, _)| seen == id) {
            return Err(format!(
                "--answer gives request `{id}` two answers; give each request one"
            ));
        }
        answers.push((id.to_string(), text.to_string()));
    }
    Ok(answers)
}

/// The stored run `wanted` names, its answers checked against the
/// questions it waits on.
pub(super) async fn resolve(
    file: &Path,
    built: &Built,
    wanted: &str,
    mut answers: Vec<(String, String)>,
    next: Option<String>,
    at: Option<CheckpointId>,
) -> Result<Start, u8> {
    let store = store::durable(file, built.store.as_ref(), "--resume")?;
    let run = store::find(file, store, wanted).await?;
    if let Some(text) = next {
        let Some(first) = run.requests.first() else {
            eprintln!(
                "troupe run: --answer-next: run `{}` waits on no question",
                run.run_id
            );
            return Err(INVALID);
        };
        answers.push((first.id.clone(), text));
    }
    for (id, _) in &answers {
        if !run.requests.iter().any(|q| &q.id == id) {
            eprintln!(
                "troupe run: run `{}` has no question `{id}`; it waits on: {}",
                run.run_id,
                pending_list(&run.requests)
            );
            return Err(INVALID);
        }
    }
    Ok(Start::Resume {
        run_id: run.run_id,
        answers,
        at,
    })
}

/// `q1 (writer: Which tone?), q2 (…)`, or `none`.
fn pending_list(requests: &[InputRequest]) -> String {
    if requests.is_empty() {
        return "none".into();
    }
    requests
        .iter()
        .map(|q| format!("{} ({}: {})", q.id, q.agent, q.prompt))
        .collect::<Vec<_>>()
        .join(", ")
}

pub(super) fn read_prompt(prompt: Option<String>) -> Result<String, String> {
    match prompt.as_deref() {
        Some("-") => read_stdin(),
        Some(p) => Ok(p.to_string()),
        None if !std::io::stdin().is_terminal() => read_stdin(),
        None => Err(
            "no task given: `troupe run FILE \"a task\"`, `-` to read it from stdin, or `--resume RUN_ID`"
                .into(),
        ),
    }
}

fn read_stdin() -> Result<String, String> {
    let text = super::input::read_all(std::io::stdin().lock())
        .map_err(|e| format!("cannot read the task from stdin: {e}"))?;
    let text = text.trim().to_string();
    if text.is_empty() {
        Err("the task read from stdin is empty".into())
    } else {
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::parse_answers;

    fn given(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn answers_are_id_text_pairs_each_request_answered_once() {
        assert_eq!(
            parse_answers(&given(&["team/clerk-1=order A=1", "me-2="])),
            Ok(vec![
                ("team/clerk-1".to_string(), "order A=1".to_string()),
                ("me-2".to_string(), String::new()),
            ])
        );
        for bad in ["no equals sign", "=text"] {
            let err = parse_answers(&given(&[bad])).unwrap_err();
            assert!(err.contains("REQUEST_ID=TEXT"), "{bad}: {err}");
        }
        let err = parse_answers(&given(&["q1=yes", "q2=no", "q1=no"])).unwrap_err();
        assert_eq!(
            err,
            "--answer gives request `q1` two answers; give each request one"
        );
    }
}
