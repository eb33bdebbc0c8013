//! `troupe eval` through the binary, on the committed example suite
//! (examples/eval/: ten cases over the newsroom team, replayed from their
//! cassettes, judged by a scripted model): the table printed, the JSON
//! and JUnit written (the JUnit read by an XML parser), exit 0 against the
//! committed baseline; a copy of the suite with one case changed so that it
//! fails is flagged as a regression, exit 1; a bad suite is located.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic, clippy::unwrap_used)]

mod common;
use common::{run, text};

use std::path::{Path, PathBuf};

fn example() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/eval")
}

fn str(p: &Path) -> &str {
    p.to_str().expect("utf-8")
}

#[test]
fn the_example_suite_passes_offline_and_writes_json_and_junit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let suite = example().join("newsroom.suite.yaml");
    let baseline = example().join("baseline.json");
    let (json, junit) = (dir.path().join("r.json"), dir.path().join("r.xml"));
    let out = run(
        dir.path(),
        &[
            "eval",
            str(&suite),
            "--json",
            str(&json),
            "--junit",
            str(&junit),
            "--baseline",
            str(&baseline),
        ],
    );
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(stdout.starts_with("CASE"), "{stdout}");
    for header in ["RESULT", "PASS RATE", "TURNS", "COST", "LATENCY"] {
        assert!(stdout.lines().next().unwrap().contains(header), "{stdout}");
    }
    assert!(
        stdout.contains("10/10 case(s) passed (2 run(s) each)"),
        "{stdout}"
    );
    assert!(stdout.contains("no regression against"), "{stdout}");
    let edition = stdout
        .lines()
        .find(|l| l.starts_with("edition-news "))
        .expect("a row per case");
    assert!(
        edition.contains("pass") && edition.contains("2/2 100%"),
        "{edition}"
    );

    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("JSON");
    let cases = report["cases"].as_array().expect("cases");
    assert_eq!(cases.len(), 10);
    for c in cases {
        assert_eq!((&c["passed"], &c["runs"]), (&2.into(), &2.into()), "{c}");
        assert!(c["turns"].as_f64().unwrap() >= 5.0, "{c}");
        assert!(c["judge_score"].as_f64().is_some(), "{c}");
    }
    // The judge's calls are priced (its scripted model has a pricing).
    assert!(cases[0]["cost"].as_f64().unwrap() > 0.0, "{}", cases[0]);
    assert_eq!(cases[9]["judge_score"], 0.75);

    let xml = std::fs::read_to_string(&junit).expect("junit");
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let suite_el = doc
        .descendants()
        .find(|n| n.has_tag_name("testsuite"))
        .expect("a testsuite");
    assert_eq!(suite_el.attribute("tests"), Some("10"));
    assert_eq!(suite_el.attribute("failures"), Some("0"));
    let names: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("testcase"))
        .filter_map(|n| n.attribute("name"))
        .collect();
    assert_eq!(names.len(), 10);
    assert!(names.contains(&"calculator-used"), "{names:?}");
    assert!(!doc.descendants().any(|n| n.has_tag_name("failure")));
}

#[test]
fn a_case_that_fails_now_is_a_regression_against_the_baseline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let original =
        std::fs::read_to_string(example().join("newsroom.suite.yaml")).expect("the suite");
    let changed = original
        .replace(
            "team: ../configs/newsroom.yaml",
            &format!("team: {}", str(&example().join("../configs/newsroom.yaml"))),
        )
        .replace(
            "cassette: cassettes/",
            &format!("cassette: {}/", str(&example().join("cassettes"))),
        )
        .replace("contains: nine years", "contains: ten years");
    assert_ne!(changed, original);
    let suite = common::write(dir.path(), "suite.yaml", &changed);
    let junit = dir.path().join("r.xml");
    let baseline = example().join("baseline.json");
    let out = run(
        dir.path(),
        &[
            "eval",
            str(&suite),
            "--junit",
            str(&junit),
            "--baseline",
            str(&baseline),
        ],
    );
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    assert!(
        stdout.contains("REGRESSION: `nine-years` passed in the baseline and fails now"),
        "{stdout}"
    );
    assert!(
        stdout.contains("the answer does not contain `ten years`"),
        "{stdout}"
    );
    assert!(stdout.contains("9/10 case(s) passed"), "{stdout}");
    let xml = std::fs::read_to_string(&junit).expect("junit");
    let doc = roxmltree::Document::parse(&xml).expect("well-formed XML");
    let failed: Vec<&str> = doc
        .descendants()
        .filter(|n| n.has_tag_name("failure"))
        .filter_map(|n| n.parent().and_then(|p| p.attribute("name")))
        .collect();
    assert_eq!(failed, ["nine-years"]);

    // A baseline written now has the lower pass rate: no regression
    // against it, but the failing case still fails the suite (exit 1).
    let now = dir.path().join("now.json");
    let out = run(
        dir.path(),
        &["eval", str(&suite), "--write-baseline", str(&now)],
    );
    assert_eq!(out.status.code(), Some(1));
    let out = run(dir.path(), &["eval", str(&suite), "--baseline", str(&now)]);
    let stdout = text(&out.stdout);
    assert!(!stdout.contains("REGRESSION"), "{stdout}");
    assert_eq!(out.status.code(), Some(1), "{stdout}");
}

#[test]
fn a_bad_suite_is_located() {
    let dir = tempfile::tempdir().expect("tempdir");
    let suite = common::write(
        dir.path(),
        "suite.yaml",
        "team: team.yaml\ncases:\n  - input: hi\n    asert: {contains: x}\n",
    );
    let out = run(dir.path(), &["eval", str(&suite)]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("suite.yaml:4:"), "{stderr}");
    assert!(stderr.contains("asert"), "{stderr}");
    let suite = common::write(
        dir.path(),
        "suite.yaml",
        "team: team.yaml\ncases:\n  - input: hi\n    assert: {matches: '('}\n",
    );
    let out = run(dir.path(), &["eval", str(&suite)]);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cases[0].assert.matches"), "{stderr}");
}

#[test]
fn structured_answers_are_checked_by_schema_and_field_and_a_team_model_judges() {
    let dir = tempfile::tempdir().expect("tempdir");
    common::write(
        dir.path(),
        "team.yaml",
        "version: 1
models:
  m: {provider: scripted}
  grader:
    provider: scripted
    replies: ['{\"score\": 0.2, \"reason\": \"too vague\"}']
    pricing: {input: 1000, output: 1000}
agents:
  reviewer:
    model: m
    instructions: Review the draft.
    structured_output:
      type: object
      properties: {approved: {type: boolean}, notes: {type: string}}
      required: [approved, notes]
    script:
      - structured: {approved: true, notes: ok}
workflow:
  steps: [{agent: reviewer}]
",
    );
    let suite = common::write(
        dir.path(),
        "suite.yaml",
        "team: team.yaml
cases:
  - name: approved
    input: Review this
    assert:
      schema: {type: object, required: [approved, notes]}
      field: {/approved: true, /notes: ok}
      order: [reviewer]
  - name: wrong-field
    input: Review this
    assert:
      field: {/approved: false}
  - name: not-an-array
    input: Review this
    assert:
      schema: {type: array}
  - name: judged-low
    input: Review this
    judge: {model: grader, rubric: Names what to fix.}
",
    );
    let json = dir.path().join("r.json");
    let out = run(dir.path(), &["eval", str(&suite), "--json", str(&json)]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("JSON");
    let rates: Vec<(&str, f64)> = report["cases"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["name"].as_str().unwrap(),
                c["pass_rate"].as_f64().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        rates,
        [
            ("approved", 1.0),
            ("wrong-field", 0.0),
            ("not-an-array", 0.0),
            ("judged-low", 0.0)
        ]
    );
    assert!(
        stdout.contains("field `/approved` is true, not false"),
        "{stdout}"
    );
    assert!(stdout.contains("the answer fails the schema"), "{stdout}");
    assert!(
        stdout.contains("the judge scored 0.20: too vague"),
        "{stdout}"
    );
    // The judge's call is counted and priced with the team's model prices.
    let judged = &report["cases"][3];
    assert!(judged["cost"].as_f64().unwrap() > 0.0, "{judged}");
    assert!(
        judged["model_calls"].as_f64().unwrap()
            > report["cases"][0]["model_calls"].as_f64().unwrap(),
        "{judged}"
    );
}

#[test]
fn a_case_with_a_session_runs_its_turns_as_a_chat() {
    let dir = tempfile::tempdir().expect("tempdir");
    common::write(
        dir.path(),
        "team.yaml",
        "version: 1
models:
  m: {provider: scripted}
agents:
  bot:
    model: m
    instructions: Answer.
    script: [first answer, second answer, third answer]
workflow:
  steps: [{agent: bot}]
",
    );
    let suite = common::write(
        dir.path(),
        "suite.yaml",
        "team: team.yaml
cases:
  - name: third-turn
    session: [hello, and then]
    input: finally
    assert: {contains: third answer, max_turns: 3}
  - name: one-turn
    input: hello
    assert: {contains: first answer, max_turns: 1}
  - name: too-many-turns
    session: hello
    input: again
    assert: {max_turns: 1}
",
    );
    let json = dir.path().join("r.json");
    let out = run(dir.path(), &["eval", str(&suite), "--json", str(&json)]);
    let stdout = text(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{stdout}\n{}",
        text(&out.stderr)
    );
    let report: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).expect("json")).expect("JSON");
    let cases = &report["cases"];
    assert_eq!(cases[0]["passed"], 1, "{stdout}");
    assert_eq!(cases[0]["turns"], 3.0, "{stdout}");
    assert_eq!(cases[1]["passed"], 1, "{stdout}");
    assert_eq!(cases[2]["passed"], 0, "{stdout}");
    assert!(stdout.contains("2 turns, more than 1"), "{stdout}");
}
