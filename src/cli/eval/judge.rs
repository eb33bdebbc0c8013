//! A judge: a model given a rubric, the task and the answer, asked for
//! `{"score": 0..1, "reason": "..."}`. It runs as a one-agent team
//! through `troupe run`, so its call is priced and counted like any
//! other (its model's `pricing`), and a scripted model serves for tests.

use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::{Value, json};

use super::observe::{self, Tape};
use super::suite::Judge;

/// A judge's verdict.
#[derive(Debug, Clone)]
pub(crate) struct Verdict {
    /// Its score, 0 to 1.
    pub score: f64,
    /// Its reason.
    pub reason: String,
    /// Whether the score reaches the judge's `min_score`.
    pub passed: bool,
    /// What the judge's calls cost (USD).
    pub cost: f64,
    /// The judge's model calls.
    pub model_calls: u64,
}

const PROMPT: &str = "You grade the answer of an AI team to a task by a rubric. \
Reply with one JSON object and nothing else: {\"score\": a number from 0 (fails the rubric) to 1 (meets it fully), \"reason\": \"one sentence\"}.";

/// Asks `judge` to grade `answer` to `task`; the team config at `team`
/// names its model (or the judge carries its own spec).
pub(crate) async fn grade(
    judge: &Judge,
    team: &Path,
    task: &str,
    answer: &str,
) -> Result<Verdict, String> {
    let spec = model_spec(judge, team)?;
    let config = json!({
        "version": 1,
        "name": "judge",
        "models": {"judge": spec},
        "agents": {"judge": {"model": "judge", "instructions": PROMPT}},
        "workflow": {"sequential": {"participants": ["judge"]}},
    });
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let file = std::env::temp_dir().join(format!(
        "troupe-judge-{}-{}.yaml",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    // JSON is YAML: the config loader reads it as any config.
    std::fs::write(&file, config.to_string())
        .map_err(|e| format!("cannot write the judge's config {}: {e}", file.display()))?;
    let input = format!(
        "Rubric: {}\n\nTask: {task}\n\nAnswer:\n{answer}",
        judge.rubric
    );
    let seen = observe::run(&file, &input, &[], &Tape::None).await;
    let _ = std::fs::remove_file(&file);
    if let Some(e) = seen.error {
        return Err(format!("the judge failed: {e}"));
    }
    let (score, reason) = parse(&seen.answer)?;
    Ok(Verdict {
        score,
        reason,
        passed: score >= judge.min_score.unwrap_or(0.5),
        cost: seen.cost,
        model_calls: seen.model_calls,
    })
}

/// The judge's model spec: inline, or the team config's model of that name.
fn model_spec(judge: &Judge, team: &Path) -> Result<Value, String> {
    let Some(name) = judge.model.as_str() else {
        return Ok(judge.model.clone());
    };
    let text = std::fs::read_to_string(team)
        .map_err(|e| format!("cannot read {}: {e}", team.display()))?;
    let config: Value = serde_saphyr::from_str(&text)
        .map_err(|e| format!("cannot read {}: {e}", team.display()))?;
    config["models"].get(name).cloned().ok_or_else(|| {
        format!(
            "the judge's model `{name}` is not a model of {}",
            team.display()
        )
    })
}

/// `{score, reason}` from the judge's answer (the first `{` to the last
/// `}`, so a model's words around the object do not matter).
fn parse(answer: &str) -> Result<(f64, String), String> {
    let object = match (answer.find('{'), answer.rfind('}')) {
        (Some(a), Some(b)) if a < b => &answer[a..=b],
        _ => answer,
    };
    let v: Value = serde_json::from_str(object)
        .map_err(|_| format!("the judge did not answer {{score, reason}}: `{answer}`"))?;
    let score = v["score"]
        .as_f64()
        .filter(|s| (0.0..=1.0).contains(s))
        .ok_or_else(|| format!("the judge's score is not a number from 0 to 1: `{answer}`"))?;
    Ok((score, v["reason"].as_str().unwrap_or_default().to_string()))
}

#[cfg(test)]
mod tests {
    use super::parse;

    #[test]
    fn a_verdict_is_read_from_the_answer() {
        assert_eq!(
            parse("Sure: {\"score\": 0.8, \"reason\": \"good\"} done").unwrap(),
            (0.8, "good".to_string())
        );
        assert!(parse("{\"score\": 3}").is_err());
        assert!(parse("great answer").is_err());
    }
}
