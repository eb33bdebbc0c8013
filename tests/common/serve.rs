//! `troupe serve` under test: started on a free port of 127.0.0.1, its
//! address read from its first line, killed when dropped.
#![allow(clippy::expect_used, clippy::panic)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::Child;
use std::sync::mpsc;
use std::time::Duration;

/// A running server.
pub struct Server {
    /// The child process.
    pub child: Child,
    /// `http://127.0.0.1:PORT`.
    pub base: String,
    /// Its stderr lines after the first.
    pub stderr: mpsc::Receiver<String>,
}

impl Server {
    /// Starts `troupe serve ARGS --listen 127.0.0.1:0` in `dir` with
    /// `envs` set, and waits until it listens.
    // The child is waited for when the server is dropped.
    #[allow(clippy::zombie_processes)]
    pub fn start(dir: &Path, args: &[&str], envs: &[(&str, &str)]) -> Server {
        // Every `provider: auto` model runs scripted, whatever the environment.
        let mut all = vec!["serve", "--offline"];
        all.extend_from_slice(args);
        if !args.contains(&"--listen") {
            all.extend_from_slice(&["--listen", "127.0.0.1:0"]);
        }
        let mut cmd = super::troupe(dir, &all);
        cmd.env_remove("TROUPE_SERVE_TOKEN");
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let mut child = cmd.spawn().expect("start troupe serve");
        let stderr = child.stderr.take().expect("stderr");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if tx.send(line).is_err() {
                    return;
                }
            }
        });
        let mut seen = Vec::new();
        loop {
            match rx.recv_timeout(Duration::from_secs(30)) {
                Ok(line) => {
                    if let Some(at) = line.find("http://") {
                        let base = line[at..].split_whitespace().next().expect("address");
                        return Server {
                            child,
                            base: base.to_string(),
                            stderr: rx,
                        };
                    }
                    seen.push(line);
                }
                Err(_) => {
                    let _ = child.kill();
                    panic!(
                        "troupe serve never said where it listens:\n{}",
                        seen.join("\n")
                    );
                }
            }
        }
    }

    /// `base` + `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
