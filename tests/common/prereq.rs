//! Tests that need something outside Rust (a Python venv with the SDKs,
//! Chromium) and do not find it: they fail, saying how to install it,
//! unless `TROUPE_ALLOW_SKIP=1` lets them skip. A skip never hides inside
//! libtest's captured output: `cargo test` reports the test as failed, and
//! an allowed skip is still printed on stderr where `--nocapture` shows it.

/// Whether missing prerequisites may skip a test (`TROUPE_ALLOW_SKIP=1`).
/// Never in CI (`CI=true`), which installs them.
pub fn skip_allowed() -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| v == "1" || v == "true");
    set("TROUPE_ALLOW_SKIP") && !set("CI")
}

/// `what` is missing: panics with `how` to install it, or, when skips are
/// allowed, says the test is skipped (the caller then returns).
pub fn missing(what: &str, how: &str) {
    assert!(
        skip_allowed(),
        "prerequisite missing: {what}. Install it with {how}, \
         or set TROUPE_ALLOW_SKIP=1 to skip this test"
    );
    eprintln!("SKIPPED (TROUPE_ALLOW_SKIP=1): {what}; install it with {how}");
}

/// The venv with the Python SDKs, missing.
pub fn missing_venv(packages: &str) {
    missing(
        &format!("no Python venv with {packages} at target/py-venv (or $TROUPE_PY_VENV)"),
        "`.ci/python-venv.sh` (python3 with venv, reaches PyPI)",
    );
}

/// The JavaScript A2A SDK, missing.
pub fn missing_a2a_js() {
    missing(
        "no @a2a-js/sdk at target/a2a-js (or $TROUPE_A2A_JS), or no `node`",
        "`.ci/install-a2a-js.sh` (Node 20+ and npm, reaches the npm registry)",
    );
}
