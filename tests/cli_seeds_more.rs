//! Seeds 004, 002 and 000 through the binary (issue 43): cagent's list
//! form `workflow: [steps…]`, several outputs from one turn, pass-down modes.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::unwrap_used, clippy::panic)]

mod common;

use common::{run, text, write};

const LISTED: &str = r#"version: 1
models:
  m: {provider: scripted}
agents:
  a: {model: m, script: [first says hi]}
  b: {model: m, script: [second says bye]}
workflow:
  - agent: a
  - agent: b
"#;

#[test]
fn a_workflow_written_as_a_list_runs_as_its_steps() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "listed.yaml", LISTED);
    let out = run(dir.path(), &["validate", "listed.yaml"]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out.stderr));
    let out = run(
        dir.path(),
        &["run", "--offline", "--no-input", "listed.yaml", "go"],
    );
    let (stdout, err) = (text(&out.stdout), text(&out.stderr));
    assert_eq!(out.status.code(), Some(0), "{err}");
    let (a, b) = (stdout.find("first says hi"), stdout.find("second says bye"));
    assert!(a.is_some() && b.is_some() && a < b, "{stdout}");

    // A bad step in the list is placed where it is written.
    let bad = LISTED.replace("  - agent: b\n", "  - agent: nobody\n");
    write(dir.path(), "bad.yaml", &bad);
    let out = run(dir.path(), &["validate", "bad.yaml"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("bad.yaml:9:"), "{err}");
    assert!(err.contains("nobody"), "{err}");
}
