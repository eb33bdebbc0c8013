//! The human-in-the-loop example config through the `troupe` binary:
//! answered question by question, each in a process of its own, and asked
//! inline on a terminal.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::expect_used, clippy::panic)]

mod common;
use common::{
    TROUPE, listed, produced, request_id, result_line, run, run_listed, text, tool_results, wait,
};

use std::io::Write;
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn the_example_config_is_answered_question_by_question() {
    let dir = tempfile::tempdir().expect("tempdir");
    let example = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples/configs/human_in_the_loop.yaml");
    let path = dir.path().join("human_in_the_loop.yaml");
    std::fs::copy(&example, &path).expect("copy the example");
    let cfg = path.to_str().expect("utf-8");

    let out = run(
        dir.path(),
        &["run", "--no-input", cfg, "I was charged twice"],
    );
    assert_eq!(out.status.code(), Some(3), "{}", text(&out.stderr));
    // Its store is where the config says, next to it.
    assert!(dir.path().join("state/human_in_the_loop.db").is_file());
    let run_id = listed(dir.path(), cfg)[0]["run_id"]
        .as_str()
        .expect("a run id")
        .to_string();

    let answers = [
        (
            "clerk",
            "Which order was charged twice, and how much was each charge?",
            "Order A-1001, 49.99 twice.",
        ),
        (
            "clerk",
            r#"approve calculator({"expression":"2 * 49.99 - 49.99"})? yes/no"#,
            "yes",
        ),
        (
            "supervisor",
            "Sign the refund off? Write a note for the customer, or what to change.",
            "Signed off: the refund shows within 5 days.",
        ),
    ];
    for (n, (agent, question, answer)) in answers.iter().enumerate() {
        let waiting = listed(dir.path(), cfg)[0].clone();
        assert_eq!(waiting["status"], "waiting_for_input", "{waiting}");
        assert_eq!(waiting["requests"].as_array().map(Vec::len), Some(1));
        assert_eq!(waiting["requests"][0]["agent"], *agent, "{waiting}");
        let id = request_id(&waiting["requests"], question);
        let out = run(
            dir.path(),
            &[
                "run",
                "--no-input",
                "--events",
                "jsonl",
                "--resume",
                &run_id,
                "--answer",
                &format!("{id}={answer}"),
                cfg,
            ],
        );
        let last = n == answers.len() - 1;
        let code = if last { 0 } else { 3 };
        assert_eq!(
            out.status.code(),
            Some(code),
            "{question}: {}",
            text(&out.stderr)
        );
        if n == 1 {
            // The approved calculator ran, and the clerk told the customer.
            let ran = tool_results(&out);
            assert_eq!(ran[0].1["content"], "49.99", "{ran:?}");
            assert_eq!(ran[0].0, "refund-desk/clerk", "{ran:?}");
            assert!(produced(&out).contains(&(
                "refund-desk/clerk".to_string(),
                "I refunded the duplicate charge of 49.99 on order A-1001.".to_string()
            )));
        }
        if last {
            let result = result_line(&out);
            assert_eq!(result["status"], "completed", "{result}");
            assert_eq!(result["final_response"], *answer);
        }
    }
    let done = listed(dir.path(), cfg);
    assert_eq!(done.len(), 1);
    assert_eq!(done[0]["status"], "completed", "{}", done[0]);
}

/// `script` (util-linux), which runs a command on a pseudo-terminal.
fn script_available() -> bool {
    Command::new("script")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success() && text(&o.stdout).contains("util-linux"))
}

#[cfg(unix)]
#[test]
fn on_a_terminal_the_questions_are_asked_inline() {
    if !script_available() {
        common::prereq::missing(
            "`script` (util-linux), to run troupe on a pseudo-terminal",
            "your system's util-linux package (`apt-get install util-linux`)",
        );
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let example = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("examples/configs/human_in_the_loop.yaml");
    let path = dir.path().join("refunds.yaml");
    std::fs::copy(&example, &path).expect("copy the example");
    let cfg = path.to_str().expect("utf-8");
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let command = format!(
        "{} run --run-id inline {} {}",
        quote(TROUPE),
        quote(cfg),
        quote("I was charged twice")
    );
    // stdin and stderr of troupe are the terminal; its answers are typed
    // there as each question comes.
    let mut child = Command::new("script")
        .args(["-qec", &command, "/dev/null"])
        .current_dir(dir.path())
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_MODEL")
        .env("NO_COLOR", "1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start script");
    let mut stdin = child.stdin.take().expect("stdin");
    let out = common::lines(child.stdout.take().expect("stdout"));
    let typed = [
        (
            "Which order was charged twice",
            "Order A-1001, 49.99 twice.",
        ),
        ("approve calculator(", "yes"),
        ("Sign the refund off?", "Signed off inline."),
    ];
    let mut seen = Vec::new();
    for (question, answer) in typed {
        seen.extend(common::until(&out, &["asks (", question]));
        writeln!(stdin, "{answer}").expect("type the answer");
    }
    let end = wait(child, Duration::from_secs(30));
    drop(stdin);
    // The rest, up to the end of the output (the terminal ends lines with
    // \r\n).
    while let Ok(line) = out.recv_timeout(Duration::from_secs(5)) {
        seen.push(line);
    }
    let all = seen
        .iter()
        .map(|l| l.trim_end_matches('\r'))
        .collect::<Vec<_>>()
        .join("\n");
    assert_eq!(end.status.code(), Some(0), "{all}\n{}", text(&end.stderr));
    // Each answer went where it was asked: the calculator ran once
    // approved, and the supervisor's answer ends the run.
    assert!(all.contains("= 49.99"), "{all}");
    assert!(
        all.contains("I refunded the duplicate charge of 49.99 on order A-1001."),
        "{all}"
    );
    assert!(
        all.contains("── final response ──\nSigned off inline.\n"),
        "{all}"
    );
    let done = run_listed(dir.path(), cfg, "inline");
    assert_eq!(done["status"], "completed", "{done}");
}
