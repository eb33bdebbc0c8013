//! Comparing a suite's results with a baseline (an earlier `--json` or
//! `--write-baseline` file): a case whose pass rate fell is a regression.

use std::path::Path;

use super::report::Report;

/// The regressions of `now` against `before`, in words (none: no
/// regression). Cases new since the baseline cannot regress; cases gone
/// from the suite are not compared.
pub(crate) fn regressions(before: &Report, now: &Report) -> Vec<String> {
    let mut out = Vec::new();
    for case in &now.cases {
        let Some(old) = before.cases.iter().find(|c| c.name == case.name) else {
            continue;
        };
        if case.pass_rate + 1e-9 < old.pass_rate {
            out.push(if old.ok() && case.passed == 0 {
                format!("`{}` passed in the baseline and fails now", case.name)
            } else {
                format!(
                    "`{}` pass rate fell from {:.0}% to {:.0}%",
                    case.name,
                    old.pass_rate * 100.0,
                    case.pass_rate * 100.0
                )
            });
        }
    }
    out
}

/// Reads a baseline file.
pub(crate) fn load(path: &Path) -> Result<Report, String> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| format!("{}: cannot read the baseline: {e}", path.display()))?;
    serde_json::from_str(&text).map_err(|e| {
        format!(
            "{}:{}:{}: not a baseline (a `troupe eval --json` file): {e}",
            path.display(),
            e.line(),
            e.column()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::eval::report::CaseReport;

    fn report(rates: &[(&str, usize)]) -> Report {
        Report {
            suite: "s".into(),
            repeats: 2,
            cases: rates
                .iter()
                .map(|(name, passed)| CaseReport {
                    name: name.to_string(),
                    passed: *passed,
                    runs: 2,
                    pass_rate: *passed as f64 / 2.0,
                    turns: 0.0,
                    model_calls: 0.0,
                    cost: 0.0,
                    latency_ms: 0.0,
                    judge_score: None,
                    failures: vec![],
                })
                .collect(),
        }
    }

    #[test]
    fn a_lower_pass_rate_is_a_regression_a_higher_one_is_not() {
        let before = report(&[("a", 2), ("b", 1), ("c", 2)]);
        let now = report(&[("a", 0), ("b", 2), ("c", 1), ("new", 0)]);
        assert_eq!(
            regressions(&before, &now),
            [
                "`a` passed in the baseline and fails now",
                "`c` pass rate fell from 100% to 50%"
            ]
        );
        assert!(regressions(&before, &before).is_empty());
    }
}
