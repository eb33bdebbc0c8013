//! `troupe eval SUITE.yaml`: runs a team on a suite of cases (replayed from
//! cassettes, so offline and deterministic), checks each run's assertions
//! and judges, repeats them for pass rates, and reports: a console table,
//! `--json`, `--junit`, and regressions against a `--baseline`.

mod assertions;
mod baseline;
mod judge;
mod junit;
mod observe;
mod report;
mod suite;

use std::path::{Path, PathBuf};
use std::sync::Arc;

use observe::Tape;
use report::{CaseReport, Report};
use suite::{Case, Suite};

use super::{FAILED, INVALID, OK, write_out};

/// `troupe eval`'s arguments.
#[derive(clap::Args)]
pub(crate) struct EvalArgs {
    /// The suite file.
    suite: PathBuf,
    /// Writes the results as JSON.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
    /// Writes the results as JUnit XML.
    #[arg(long, value_name = "FILE")]
    junit: Option<PathBuf>,
    /// Compares the pass rates with this baseline (an earlier `--json` or
    /// `--write-baseline` file): a case whose pass rate fell is a
    /// regression (exit 1).
    #[arg(long, value_name = "FILE")]
    baseline: Option<PathBuf>,
    /// Writes the results as a baseline for later `--baseline` runs.
    #[arg(long, value_name = "FILE")]
    write_baseline: Option<PathBuf>,
    /// Records each case's cassette (those that name one) instead of
    /// replaying it: one run per case, against the team's models.
    #[arg(long)]
    record: bool,
}

/// One run of one case, and how it went.
struct Outcome {
    case: usize,
    failures: Vec<String>,
    turns: u64,
    model_calls: u64,
    cost: f64,
    latency_ms: u64,
    score: Option<f64>,
}

/// `troupe eval`: exit 0 when every case passed and nothing regressed, 1
/// otherwise, 2 for a suite (or baseline) that cannot be used.
pub(crate) async fn eval(args: EvalArgs) -> u8 {
    let suite = match Suite::load(&args.suite) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return INVALID;
        }
    };
    let base = args.suite.parent().unwrap_or(Path::new("")).to_path_buf();
    let team = base.join(&suite.team);
    if let Err(e) = troupe::config::Config::load(&team) {
        eprintln!("{}: team: {}", args.suite.display(), team.display());
        return super::report(&e);
    }
    let before = match args.baseline.as_deref().map(baseline::load).transpose() {
        Ok(b) => b,
        Err(e) => {
            eprintln!("{e}");
            return INVALID;
        }
    };
    let repeats = if args.record { 1 } else { suite.repeats };
    let outcomes = run_all(&suite, &base, &team, repeats, args.record).await;
    let report = summarize(&args.suite, &suite, repeats, outcomes);
    let mut text = report.table();
    let regressions = before
        .as_ref()
        .map(|b| baseline::regressions(b, &report))
        .unwrap_or_default();
    for r in &regressions {
        text.push_str(&format!("REGRESSION: {r}\n"));
    }
    if let Some(b) = &args.baseline
        && regressions.is_empty()
    {
        text.push_str(&format!("no regression against {}\n", b.display()));
    }
    if let Err(e) = write_out(&text) {
        return super::write_failed(&e);
    }
    let json = serde_json::to_string_pretty(&report).unwrap_or_default() + "\n";
    let files = [
        (&args.json, json.clone()),
        (&args.write_baseline, json),
        (&args.junit, junit::xml(&report)),
    ];
    for (path, body) in files {
        if let Some(path) = path
            && let Err(e) = std::fs::write(path, body)
        {
            eprintln!("troupe eval: cannot write {}: {e}", path.display());
            return FAILED;
        }
    }
    if report.ok() && regressions.is_empty() {
        OK
    } else {
        FAILED
    }
}

/// Every run of every case, `concurrency` at once.
async fn run_all(
    suite: &Suite,
    base: &Path,
    team: &Path,
    repeats: usize,
    record: bool,
) -> Vec<Outcome> {
    let limit = Arc::new(tokio::sync::Semaphore::new(suite.concurrency));
    let mut jobs = tokio::task::JoinSet::new();
    for (i, case) in suite.cases.iter().enumerate() {
        let tape = match (&case.cassette, record) {
            (None, _) => Tape::None,
            (Some(dir), false) => Tape::Replay(base.join(dir)),
            (Some(dir), true) => Tape::Record(base.join(dir)),
        };
        let judge = case.judge.clone().or_else(|| suite.judge.clone());
        for _ in 0..repeats {
            let (limit, tape, judge) = (limit.clone(), tape.clone(), judge.clone());
            let (team, checks_of) = (team.to_path_buf(), (i, case.input.clone()));
            let session = case.session.clone();
            jobs.spawn(async move {
                let _permit = limit.acquire_owned().await.ok();
                let seen = observe::run(&team, &checks_of.1, &session, &tape).await;
                let verdict = match (&judge, &seen.error) {
                    (Some(j), None) => {
                        Some(judge::grade(j, &team, &checks_of.1, &seen.answer).await)
                    }
                    _ => None,
                };
                (checks_of.0, seen, verdict)
            });
        }
    }
    let mut outcomes = Vec::new();
    while let Some(done) = jobs.join_next().await {
        let Ok((i, seen, verdict)) = done else {
            continue;
        };
        let Some(case) = suite.cases.get(i) else {
            continue;
        };
        outcomes.push(judged(i, case, seen, verdict));
    }
    outcomes
}

/// The outcome of a run: its error, its failed assertions, its judge.
fn judged(
    i: usize,
    case: &Case,
    seen: observe::Observed,
    verdict: Option<Result<judge::Verdict, String>>,
) -> Outcome {
    let mut failures = Vec::new();
    if let Some(e) = &seen.error {
        failures.push(e.clone());
    }
    let (mut extra, mut calls, mut score) = (0.0, 0, None);
    match verdict {
        Some(Ok(v)) => {
            extra = v.cost;
            calls = v.model_calls;
            score = Some(v.score);
            if !v.passed {
                failures.push(format!("the judge scored {:.2}: {}", v.score, v.reason));
            }
        }
        Some(Err(e)) => failures.push(e),
        None => {}
    }
    if seen.error.is_none() {
        failures.extend(assertions::failures(&case.checks, &seen, extra));
    }
    Outcome {
        case: i,
        failures,
        turns: seen.turns,
        model_calls: seen.model_calls + calls,
        cost: seen.cost + extra,
        latency_ms: seen.latency_ms,
        score,
    }
}

/// The runs' outcomes gathered by case.
fn summarize(file: &Path, suite: &Suite, repeats: usize, outcomes: Vec<Outcome>) -> Report {
    let cases = suite
        .cases
        .iter()
        .enumerate()
        .map(|(i, case)| {
            let mine: Vec<&Outcome> = outcomes.iter().filter(|o| o.case == i).collect();
            let runs = mine.len().max(1);
            let mean =
                |f: &dyn Fn(&Outcome) -> f64| mine.iter().map(|o| f(o)).sum::<f64>() / runs as f64;
            let passed = mine.iter().filter(|o| o.failures.is_empty()).count();
            let scores: Vec<f64> = mine.iter().filter_map(|o| o.score).collect();
            let mut failures: Vec<String> = Vec::new();
            for f in mine.iter().flat_map(|o| &o.failures) {
                if !failures.contains(f) {
                    failures.push(f.clone());
                }
            }
            CaseReport {
                name: case.name(i),
                passed,
                runs,
                pass_rate: passed as f64 / runs as f64,
                turns: mean(&|o| o.turns as f64),
                model_calls: mean(&|o| o.model_calls as f64),
                cost: mean(&|o| o.cost),
                latency_ms: mean(&|o| o.latency_ms as f64),
                judge_score: (!scores.is_empty())
                    .then(|| scores.iter().sum::<f64>() / scores.len() as f64),
                failures,
            }
        })
        .collect();
    Report {
        suite: file.display().to_string(),
        repeats,
        cases,
    }
}
