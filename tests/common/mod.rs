//! Helpers shared by the tests that run the `troupe` binary.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]

use std::process::{Child, Output};
use std::time::{Duration, Instant};

/// Waits for the child, killing it after `limit`: a hang fails the test
/// instead of the suite.
pub fn wait(mut child: Child, limit: Duration) -> Output {
    let start = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if start.elapsed() > limit => {
                let _ = child.kill();
                let out = child.wait_with_output().expect("output of a killed child");
                panic!(
                    "troupe did not finish within {limit:?}\nstdout:\n{}\nstderr:\n{}",
                    String::from_utf8_lossy(&out.stdout),
                    String::from_utf8_lossy(&out.stderr)
                );
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(10)),
            Err(e) => panic!("waiting for troupe: {e}"),
        }
    }
    child.wait_with_output().expect("troupe's output")
}
