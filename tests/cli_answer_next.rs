//! `troupe run --resume RUN --answer-next TEXT`: answers the first question
//! a stored run waits on without its id (ids change on every resume, so a
//! script or a pasted walkthrough need not read them from the output).
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;

use common::{run, text};

#[test]
fn answer_next_answers_the_first_question_whatever_its_id() {
    let dir = tempfile::tempdir().unwrap();
    let example =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("examples/configs/human_in_the_loop.yaml");
    std::fs::copy(example, dir.path().join("refunds.yaml")).unwrap();
    let d = dir.path();

    let asked = run(
        d,
        &[
            "run",
            "refunds.yaml",
            "--no-input",
            "--run-id",
            "r",
            "charged twice",
        ],
    );
    assert_eq!(asked.status.code(), Some(3), "{}", text(&asked.stderr));

    // The clerk's question answered by position: the run goes on to the
    // approval of the calculator call.
    let next = run(
        d,
        &[
            "run",
            "refunds.yaml",
            "--resume",
            "r",
            "--answer-next",
            "order A-1001",
        ],
    );
    let err = text(&next.stderr);
    assert_eq!(next.status.code(), Some(3), "{err}");
    assert!(err.contains("approve calculator("), "{err}");

    // With `--answer` it is one or the other.
    let both = run(
        d,
        &[
            "run",
            "refunds.yaml",
            "--resume",
            "r",
            "--answer-next",
            "yes",
            "--answer",
            "x=yes",
        ],
    );
    assert_eq!(both.status.code(), Some(2), "{}", text(&both.stderr));

    for answer in ["yes", "Signed off."] {
        let out = run(
            d,
            &[
                "run",
                "refunds.yaml",
                "--resume",
                "r",
                "--answer-next",
                answer,
            ],
        );
        assert!(
            matches!(out.status.code(), Some(0 | 3)),
            "{}",
            text(&out.stderr)
        );
    }
    // A run that waits on nothing says so, exit 2.
    let done = run(
        d,
        &[
            "run",
            "refunds.yaml",
            "--resume",
            "r",
            "--answer-next",
            "more",
        ],
    );
    let err = text(&done.stderr);
    assert_eq!(done.status.code(), Some(2), "{err}");
    assert!(
        err.contains("--answer-next: run `r` waits on no question"),
        "{err}"
    );
}
