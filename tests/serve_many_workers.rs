//! #41's acceptance test: three `troupe serve` workers on one fresh
//! PostgreSQL database; a client spreads 300 concurrent sessions of a
//! 3-agent team (a scripted model taking 3 s a call, so all 300 are under way at once) over all three
//! and `kill -9`s one worker mid-run. Every run completes — the killed
//! worker's taken over by the survivors within the bound README "Many
//! servers on PostgreSQL" documents —, every session's thread holds each
//! user message once and each agent's reply once, in order, and every
//! session takes a second turn through the survivors.
//!
//! Broken takeover fails it (checked by breaking it): with the takeover
//! loop off, the killed worker's runs are never taken over (the
//! lease-count wait panics: "45 of worker A's runs were not taken over
//! within 15s"); with a taken-over turn's thread not saved, the thread
//! check names the session that lost its messages ("no session `s21`").

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::serve::{Server, json_of};
use common::write;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use serde_json::json;

/// How many sessions, spread over three workers.
const SESSIONS: usize = 300;

/// The worst a takeover on this host may take: one look every 5 s
/// (`HEARTBEAT`), and margin for a loaded 2-core machine.
const TAKEOVER_BOUND: Duration = Duration::from_secs(15);

/// Three agents in turn, each call 3 s.
const TRIO: &str = "version: 1
name: trio
models:
  m: {provider: scripted, delay: 3s, when_exhausted: repeat_last}
agents:
  planner: {model: m, script: [\"plan\"]}
  writer: {model: m, script: [\"draft\"]}
  editor: {model: m, script: [\"final\"]}
workflow:
  steps: [{agent: planner}, {agent: writer}, {agent: editor}]
checkpoint:
  store: postgres
  url: ${DATABASE_URL}
";

/// One HTTP client for the whole test (making one reads the system's
/// root certificates: slow in a debug build).
fn client() -> reqwest::blocking::Client {
    static CLIENT: std::sync::OnceLock<reqwest::blocking::Client> = std::sync::OnceLock::new();
    CLIENT.get_or_init(common::serve::client).clone()
}

/// The user's message of turn `turn` of session `s`.
fn said(s: usize, turn: usize) -> String {
    format!("session {s} turn {turn}")
}

/// Starts turn `turn` of every session in `sessions` on `workers` (session
/// i on worker i mod n), from eight threads; the run ids by session.
fn start_turns(workers: &[&Server], sessions: &[usize], turn: usize) -> HashMap<usize, String> {
    let bases: Vec<String> = workers.iter().map(|w| w.url("/runs")).collect();
    let bases = &bases;
    let chunks: Vec<Vec<usize>> = sessions
        .chunks(sessions.len().div_ceil(8))
        .map(<[usize]>::to_vec)
        .collect();
    std::thread::scope(|scope| {
        let handles: Vec<_> = chunks
            .into_iter()
            .map(|chunk| {
                scope.spawn(move || {
                    let http = client();
                    chunk
                        .into_iter()
                        .map(|s| {
                            let r = http
                                .post(&bases[s % bases.len()])
                                .json(&json!({"task": said(s, turn), "session": format!("s{s}")}))
                                .send()
                                .unwrap();
                            assert_eq!(r.status(), 201, "session {s}: {}", r.text().unwrap());
                            (s, json_of(r)["id"].as_str().unwrap().to_string())
                        })
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap())
            .collect()
    })
}

/// Waits until no run holds a lease — every run, wherever it ran, gives
/// its lease back when it ends; after `limit`, panics naming each lease
/// still held (its run, holder, heartbeat's age and whether the run has
/// checkpoints), what each worker says of that run, and what the workers
/// printed.
fn wait_all_ended(url: &str, workers: &[&Server], limit: Duration) {
    let deadline = Instant::now() + limit;
    let held = "SELECT count(*) FROM troupe_run_leases";
    while common::pg::count(url, held) > 0 {
        if Instant::now() > deadline {
            let leases = common::pg::rows(
                url,
                "SELECT l.run_id, l.pid::text, l.host, (now() - l.beat)::text, \
                 (SELECT count(*) FROM troupe_checkpoints c WHERE c.run_id = l.run_id)::text \
                 FROM troupe_run_leases l ORDER BY l.run_id",
            );
            let mut report = Vec::new();
            for lease in &leases {
                report.push(format!(
                    "lease (run, pid, host, beat age, checkpoints): {lease}"
                ));
                let run = lease.split(", ").next().unwrap_or_default();
                for w in workers {
                    let r = client().get(w.url(&format!("/runs/{run}"))).send();
                    let said = r.map_or_else(
                        |e| e.to_string(),
                        |r| format!("{} {}", r.status(), r.text().unwrap_or_default()),
                    );
                    report.push(format!("  worker pid {}: {said}", w.child.id()));
                }
            }
            let said: Vec<String> = workers.iter().flat_map(|w| w.stderr.try_iter()).collect();
            panic!(
                "{} runs never ended:\n{}\nthe workers said:\n{}",
                leases.len(),
                report.join("\n"),
                said.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Every run's status as `troupe runs --json` reads it from the database
/// (any machine's view, whichever worker ran it).
fn statuses(dir: &std::path::Path, url: &str) -> HashMap<String, String> {
    let out = common::troupe(dir, &["runs", "trio.yaml", "--json"])
        .env("DATABASE_URL", url)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            (
                v["run_id"].as_str().unwrap().to_string(),
                v["status"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// Session `s`'s messages as (sender, content), read through `w`.
fn thread(w: &Server, s: usize) -> Vec<(String, String)> {
    let r = json_of(
        client()
            .get(w.url(&format!("/sessions/s{s}")))
            .send()
            .unwrap(),
    );
    r["messages"]
        .as_array()
        .unwrap_or_else(|| panic!("session s{s}: {r}"))
        .iter()
        .map(|m| {
            (
                m["sender"].as_str().unwrap().to_string(),
                m["content"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

/// What session `s`'s thread must be after `turns` turns: each user
/// message once, each agent's reply once, in order.
fn expected(s: usize, turns: usize) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for t in 1..=turns {
        out.push(("user".to_string(), said(s, t)));
        for (agent, reply) in [
            ("planner", "plan"),
            ("writer", "draft"),
            ("editor", "final"),
        ] {
            out.push((agent.to_string(), reply.to_string()));
        }
    }
    out
}

#[test]
fn three_workers_carry_300_sessions_through_a_kill_9_with_no_message_lost_or_repeated() {
    let Some(url) = common::pg::fresh_db("manyworkers") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "trio.yaml", TRIO);
    let env = [("DATABASE_URL", url.as_str())];
    let args = ["trio.yaml", "--max-runs", "400"];
    let mut a = Server::start(dir.path(), &args, &env);
    let b = Server::start(dir.path(), &args, &env);
    let c = Server::start(dir.path(), &args, &env);
    let a_pid = a.child.id();
    let began = Instant::now();

    // Turn 1 of every session, spread over the three workers.
    let sessions: Vec<usize> = (0..SESSIONS).collect();
    let first = start_turns(&[&a, &b, &c], &sessions, 1);
    let on_a = sessions.iter().filter(|s| *s % 3 == 0).count();
    let started = began.elapsed();

    // Mid-run: some of A's runs checkpointed, none ended.
    let checkpointed = format!(
        "SELECT count(DISTINCT l.run_id) FROM troupe_run_leases l JOIN troupe_checkpoints c \
         ON c.run_id = l.run_id WHERE l.pid = {a_pid}"
    );
    let deadline = Instant::now() + Duration::from_secs(60);
    while common::pg::count(&url, &checkpointed) < 10 {
        assert!(Instant::now() < deadline, "worker A checkpointed nothing");
        std::thread::sleep(Duration::from_millis(50));
    }
    let running = format!("SELECT count(*) FROM troupe_run_leases l WHERE l.pid = {a_pid}");
    let cut = common::pg::count(&url, &running);
    let held = format!("SELECT count(*) FROM troupe_run_leases WHERE pid = {a_pid}");
    let with_checkpoint = common::pg::count(&url, &checkpointed);
    a.child.kill().unwrap();
    a.child.wait().unwrap();
    let killed = Instant::now();
    assert!(cut > 0, "worker A had no run under way when killed");

    // Every lease A held is taken over within the bound.
    let taken_over = loop {
        if common::pg::count(&url, &held) == 0 {
            break killed.elapsed();
        }
        if killed.elapsed() > TAKEOVER_BOUND {
            let said: Vec<String> = [&b, &c].iter().flat_map(|w| w.stderr.try_iter()).collect();
            panic!(
                "{} of worker A's runs were not taken over within {TAKEOVER_BOUND:?}; B and C said:\n{}",
                common::pg::count(&url, &held),
                said.join("\n")
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    };

    // Every run of turn 1 completes, A's through B and C.
    let survivors = [&b, &c];
    wait_all_ended(&url, &survivors[..], Duration::from_secs(120));
    let st = statuses(dir.path(), &url);
    for (s, id) in &first {
        assert_eq!(
            st.get(id).map(String::as_str),
            Some("completed"),
            "session {s}, run {id}"
        );
    }
    let turn_1 = killed.elapsed();
    for s in &sessions {
        assert_eq!(thread(&b, *s), expected(*s, 1), "session s{s} after turn 1");
    }

    // Every session carries on through the survivors.
    let second = start_turns(&survivors[..], &sessions, 2);
    wait_all_ended(&url, &survivors[..], Duration::from_secs(120));
    let st = statuses(dir.path(), &url);
    for (s, id) in &second {
        assert_eq!(
            st.get(id).map(String::as_str),
            Some("completed"),
            "session {s}, run {id}"
        );
    }
    for s in &sessions {
        assert_eq!(thread(&c, *s), expected(*s, 2), "session s{s} after turn 2");
    }
    assert_eq!(
        common::pg::count(&url, "SELECT count(*) FROM troupe_run_failures"),
        0,
        "no run failed"
    );
    eprintln!(
        "{SESSIONS} sessions on 3 workers (turn 1 posted in {started:?}); worker A killed with \
         {cut} of its {} runs under way ({with_checkpoint} of them checkpointed); \
         all taken over {taken_over:?} after the kill; turn 1 done {turn_1:?} after it; turn 2 \
         through B and C in {:?}; {} messages checked, {:?} in all",
        on_a,
        killed.elapsed() - turn_1,
        SESSIONS * 8,
        began.elapsed()
    );
}
