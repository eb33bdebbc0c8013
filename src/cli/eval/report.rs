//! A suite's results: per case its pass rate over the repeats and what its
//! runs spent; printed as a table, written as JSON (the same JSON serves as
//! a baseline).

use serde::{Deserialize, Serialize};

/// The results of a suite.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct Report {
    /// The suite file, as given.
    pub suite: String,
    /// Runs per case.
    pub repeats: usize,
    /// Each case, in the suite's order.
    pub cases: Vec<CaseReport>,
}

/// One case's results over its repeats.
#[derive(Debug, Serialize, Deserialize)]
pub(crate) struct CaseReport {
    /// The case's name.
    pub name: String,
    /// Runs that passed every assertion (and the judge).
    pub passed: usize,
    /// Runs made.
    pub runs: usize,
    /// passed / runs.
    pub pass_rate: f64,
    /// Mean agent turns per run.
    #[serde(default)]
    pub turns: f64,
    /// Mean model calls per run, the judge's included.
    #[serde(default)]
    pub model_calls: f64,
    /// Mean cost per run (USD), the judge's included.
    #[serde(default)]
    pub cost: f64,
    /// Mean latency per run (ms).
    #[serde(default)]
    pub latency_ms: f64,
    /// Mean judge score, when judged.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judge_score: Option<f64>,
    /// What failed, per failed run (the first failed run's lines first).
    #[serde(default)]
    pub failures: Vec<String>,
}

impl CaseReport {
    /// Whether every run passed.
    pub(crate) fn ok(&self) -> bool {
        self.passed == self.runs
    }
}

impl Report {
    /// Whether every case passed every run.
    pub(crate) fn ok(&self) -> bool {
        self.cases.iter().all(CaseReport::ok)
    }

    /// The console table, with each failure under its case.
    pub(crate) fn table(&self) -> String {
        let width = self
            .cases
            .iter()
            .map(|c| c.name.len())
            .max()
            .unwrap_or(4)
            .max(4);
        let mut out = format!(
            "{:<width$}  {:<6}  {:>9}  {:>6}  {:>10}  {:>10}\n",
            "CASE", "RESULT", "PASS RATE", "TURNS", "COST", "LATENCY"
        );
        for c in &self.cases {
            out.push_str(&format!(
                "{:<width$}  {:<6}  {:>9}  {:>6}  {:>10}  {:>10}\n",
                c.name,
                if c.ok() { "pass" } else { "FAIL" },
                format!("{}/{} {:.0}%", c.passed, c.runs, c.pass_rate * 100.0),
                format!("{:.1}", c.turns),
                format!("${:.6}", c.cost),
                format!("{:.0} ms", c.latency_ms),
            ));
            for f in c.failures.iter().take(5) {
                out.push_str(&format!("    - {f}\n"));
            }
        }
        let passed = self.cases.iter().filter(|c| c.ok()).count();
        out.push_str(&format!(
            "{passed}/{} case(s) passed ({} run(s) each)\n",
            self.cases.len(),
            self.repeats
        ));
        out
    }
}
