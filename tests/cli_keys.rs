//! A model's `api_key_env` naming a variable that is not set: `validate`
//! warns at the field (the variable may be set where the config runs),
//! `run` refuses at the field (its requests would go without a key).

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used)]

mod common;
use common::{text, wait, write};

use std::time::Duration;

#[test]
fn an_unset_key_variable_warns_at_validate_and_is_refused_at_run() {
    let dir = tempfile::tempdir().expect("tempdir");
    write(
        dir.path(),
        "keyed.yaml",
        "version: 1
models:
  m:
    provider: openai
    model: gpt-4o-mini
    base_url: http://127.0.0.1:9/v1
    api_key_env: TROUPE_TEST_NEVER_SET_KEY
agents:
  a: {model: m}
",
    );
    let run = |args: &[&str]| {
        let child = common::troupe(dir.path(), args)
            .env_remove("TROUPE_TEST_NEVER_SET_KEY")
            .spawn()
            .expect("start troupe");
        wait(child, Duration::from_secs(30))
    };
    let at = "keyed.yaml:7:5: ";
    let said = "`api_key_env` names `TROUPE_TEST_NEVER_SET_KEY`, which is not set";
    let out = run(&["validate", "keyed.yaml"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(
        err.contains(&format!(
            "{at}warning: field `models.m.api_key_env`: model `m`: {said}"
        )),
        "{err}"
    );
    let out = run(&["run", "keyed.yaml", "hi"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains(&format!(
            "{at}field `models.m.api_key_env`: model `m`: {said}"
        )),
        "{err}"
    );
}
