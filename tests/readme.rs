//! The README's walkthroughs, run as written: every fenced block whose info
//! string is `sh tested` is a transcript — `$ ` lines are commands (a
//! trailing `\` continues one), the lines under a command are output it must
//! print (`…` stands for any text; a line of `…` alone for any lines) — and
//! runs in one `bash`, in a fresh temporary directory holding a copy of
//! `examples/configs/`, with the `troupe` binary under test first on PATH,
//! offline. Blocks marked `yaml file=NAME` are written there first as NAME.
//!
//! A command must exit 0 unless the next one is `echo $?`, which shows its
//! exit code. So a pasted command can no longer drift from the program.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use common::{TROUPE, text, wait};

/// A fenced block of the README.
struct Block {
    /// The line of the README its fence opens on (1-based).
    line: usize,
    info: String,
    body: Vec<String>,
}

fn blocks(readme: &str) -> Vec<Block> {
    let mut out = Vec::new();
    let mut open: Option<Block> = None;
    for (i, line) in readme.lines().enumerate() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => {
                open = Some(Block {
                    line: i + 1,
                    info: info.trim().to_string(),
                    body: Vec::new(),
                })
            }
            (Some(_), Some("")) => out.extend(open.take()),
            (Some(b), _) => b.body.push(line.to_string()),
            (None, None) => {}
        }
    }
    out
}

/// A command and the output lines shown under it.
struct Step {
    command: String,
    expected: Vec<String>,
}

fn steps(block: &Block) -> Vec<Step> {
    let mut steps: Vec<Step> = Vec::new();
    let mut continued = false;
    for line in &block.body {
        if continued {
            let last = steps.last_mut().expect("a command goes on");
            last.command.push('\n');
            last.command.push_str(line);
            continued = line.ends_with('\\');
        } else if let Some(cmd) = line.strip_prefix("$ ") {
            steps.push(Step {
                command: cmd.to_string(),
                expected: Vec::new(),
            });
            continued = cmd.ends_with('\\');
        } else {
            let last = steps.last_mut().unwrap_or_else(|| {
                panic!(
                    "README.md:{}: a tested block starts with a `$ ` command",
                    block.line
                )
            });
            if !line.trim().is_empty() && line.trim() != "…" {
                last.expected.push(line.trim().to_string());
            }
        }
    }
    steps
}

/// Whether `line` matches `pattern`, where `…` stands for any text.
fn matches(pattern: &str, line: &str) -> bool {
    let parts: Vec<&str> = pattern.split('…').collect();
    let (first, rest) = parts.split_first().expect("split gives one part");
    let Some(mut left) = line.trim().strip_prefix(first) else {
        return false;
    };
    for (i, part) in rest.iter().enumerate() {
        if i + 1 == rest.len() {
            return left.ends_with(part);
        }
        match left.find(part) {
            Some(at) => left = &left[at + part.len()..],
            None => return false,
        }
    }
    left.is_empty()
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            // A store an earlier local run left is no part of the example.
            if entry.file_name() != "state" {
                copy_dir(&entry.path(), &target);
            }
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Runs one tested block; returns what went wrong, if anything.
fn run_block(block: &Block, files: &[(String, String)]) -> Result<(), String> {
    let steps = steps(block);
    let dir = tempfile::tempdir().unwrap();
    copy_dir(
        &root().join("examples/configs"),
        &dir.path().join("examples/configs"),
    );
    for (name, body) in files {
        std::fs::write(dir.path().join(name), body).unwrap();
    }
    let mut script = String::from("exec 2>&1\n");
    for (i, step) in steps.iter().enumerate() {
        script.push_str(&step.command);
        script.push_str(&format!(
            "\n__s=$?; printf '\\n@@@ step {i} exit %s\\n' \"$__s\"; (exit $__s)\n"
        ));
    }
    let bin = Path::new(TROUPE).parent().expect("the binary's directory");
    let path = std::env::join_paths(std::iter::once(bin.to_path_buf()).chain(
        std::env::split_paths(&std::env::var_os("PATH").unwrap_or_default()),
    ))
    .unwrap();
    let child = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(dir.path())
        .env("PATH", path)
        .env("NO_COLOR", "1")
        .env_remove("OPENAI_API_KEY")
        .env_remove("OPENAI_BASE_URL")
        .env_remove("OPENAI_MODEL")
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("RUST_LOG")
        .env_remove("OTEL_EXPORTER_OTLP_ENDPOINT")
        .env_remove("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash");
    let out = wait(child, Duration::from_secs(120));
    let all = text(&out.stdout);
    // Each marker on a line of its own: a job in the background (`… &`)
    // writes on the same pipe as the marker's printf, and may land
    // between its newline and the marker, leaving the marker at the end
    // of the job's line.
    let split = all.replace("@@@ step ", "\n@@@ step ");
    let lines: Vec<&str> = split.lines().collect();
    let mut problems = Vec::new();
    for (i, step) in steps.iter().enumerate() {
        let marker = format!("@@@ step {i} exit ");
        let Some(code) = lines.iter().find_map(|l| l.strip_prefix(marker.as_str())) else {
            problems.push(format!("`{}` did not run to its end", step.command));
            break;
        };
        let shown = steps
            .get(i + 1)
            .is_some_and(|next| next.command.trim() == "echo $?");
        if code != "0" && !shown {
            problems.push(format!("`{}` exited {code}", step.command));
        }
        for want in &step.expected {
            if !lines.iter().any(|l| matches(want, l)) {
                problems.push(format!(
                    "`{}`: no line of the output matches `{want}`",
                    step.command
                ));
            }
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "README.md:{}:\n  {}\n--- output ---\n{all}",
            block.line,
            problems.join("\n  ")
        ))
    }
}

#[test]
fn the_pattern_language_matches_as_documented() {
    assert!(matches(
        "? clerk asks (clerk-…): Which order?",
        "? clerk asks (clerk-a1b2c3000002): Which order?"
    ));
    assert!(matches("■ completed · …", "  ■ completed · 3 turns"));
    assert!(matches("3", "3"));
    assert!(!matches("3", "130"));
    assert!(!matches("a…b…c", "a b"));
    assert!(matches("a…b…c", "a-b-c"));
}

#[test]
fn every_tested_block_of_the_readme_runs_as_written() {
    let readme = std::fs::read_to_string(root().join("README.md")).unwrap();
    let all = blocks(&readme);
    let files: Vec<(String, String)> = all
        .iter()
        .filter_map(|b| {
            let name = b.info.strip_prefix("yaml file=")?;
            Some((name.trim().to_string(), b.body.join("\n") + "\n"))
        })
        .collect();
    let tested: Vec<&Block> = all
        .iter()
        .filter(|b| b.info.split_whitespace().collect::<Vec<_>>() == ["sh", "tested"])
        .collect();
    // The walkthroughs the README leans on are among them.
    let text_of = |b: &&Block| b.body.join("\n");
    for needle in [
        "examples/configs/human_in_the_loop.yaml --no-input",
        "examples/configs/durable.yaml",
        "troupe chat",
    ] {
        assert!(
            tested.iter().any(|b| text_of(b).contains(needle)),
            "no tested block runs `{needle}`"
        );
    }
    // Blocks run one at a time, each from a clean directory.
    let failures: Vec<String> = tested
        .iter()
        .filter_map(|b| run_block(b, &files).err())
        .collect();
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
