//! Background runs and schedules over real HTTP and real processes: a
//! background `POST /runs` answers 202 at once and its completion reaches
//! a webhook on 127.0.0.1 (again after the webhook answered 500 once); a
//! per-second cron schedule with three `troupe serve` workers on one
//! PostgreSQL database runs every tick exactly once.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;
use common::serve::{ASKING, DESK, Server, client, json_of, settled};
use common::write;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// What the webhook received: each request's headers (lowercased) and body.
type Received = Arc<Mutex<Vec<(BTreeMap<String, String>, Value)>>>;

/// A webhook on 127.0.0.1 answering 500 to its first request and 200 to
/// the others; its URL and what it received.
fn webhook() -> (String, Received) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/done", listener.local_addr().unwrap());
    let received: Received = Arc::default();
    let log = received.clone();
    std::thread::spawn(move || {
        for (n, stream) in listener.incoming().enumerate() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut headers = BTreeMap::new();
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            loop {
                line.clear();
                reader.read_line(&mut line).unwrap();
                let Some((k, v)) = line.trim_end().split_once(':') else {
                    break;
                };
                headers.insert(k.to_ascii_lowercase(), v.trim().to_string());
            }
            let length: usize = headers
                .get("content-length")
                .map_or(0, |v| v.parse().unwrap());
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            log.lock()
                .unwrap()
                .push((headers, serde_json::from_slice(&body).unwrap()));
            let status = if n == 0 { "500 Oops" } else { "200 OK" };
            let _ = write!(
                stream,
                "HTTP/1.1 {status}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
            );
        }
    });
    (url, received)
}

/// Waits until `received` holds `n` requests; what it holds.
fn received_n(received: &Received, n: usize) -> Vec<(BTreeMap<String, String>, Value)> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = received.lock().unwrap().clone();
        if got.len() >= n {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "the webhook got {got:?}, not {n}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_background_run_tells_its_webhook_when_done_even_after_a_500() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "desk.yaml", DESK);
    let s = Server::start(dir.path(), &["desk.yaml"], &[]);
    let (url, received) = webhook();

    let r = client()
        .post(s.url("/runs"))
        .json(&json!({"task": "write", "background": true,
                      "webhook": {"url": url, "headers": {"Authorization": "Bearer hook-token"}}}))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 202);
    let id = json_of(r)["id"].as_str().unwrap().to_string();

    received_n(&received, 2);
    std::thread::sleep(Duration::from_millis(500));
    let got = received.lock().unwrap().clone();
    // The 500 was retried once; nothing more was sent.
    assert_eq!(got.len(), 2, "{got:?}");
    assert_eq!(got[0].1, got[1].1);
    let (headers, body) = &got[1];
    assert_eq!(headers["authorization"], "Bearer hook-token");
    assert_eq!(headers["content-type"], "application/json");
    assert_eq!(body["id"], id.as_str());
    assert_eq!(body["team"], "desk");
    assert_eq!(body["status"], "completed", "{body}");
    assert!(
        body["response"].as_str().is_some_and(|r| !r.is_empty()),
        "{body}"
    );
    assert!(body["usage"].is_object(), "{body}");

    // A webhook that is not http(s) is refused before anything runs.
    let bad = client()
        .post(s.url("/runs"))
        .json(&json!({"task": "write", "background": true, "webhook": {"url": "ftp://x/y"}}))
        .send()
        .unwrap();
    assert_eq!(bad.status().as_u16(), 400);
    assert!(bad.text().unwrap().contains("http or https"));
}

#[test]
fn a_run_waiting_for_input_is_told_then_told_again_when_it_ends() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "asking.yaml", ASKING);
    let s = Server::start(dir.path(), &["asking.yaml"], &[]);
    let (url, received) = webhook();
    let r = client()
        .post(s.url("/runs"))
        .json(&json!({"task": "refund", "background": true, "webhook": {"url": url}}))
        .send()
        .unwrap();
    assert_eq!(r.status().as_u16(), 202);
    let id = json_of(r)["id"].as_str().unwrap().to_string();
    // The 500 and its retry: both say it waits, with the question.
    let got = received_n(&received, 2);
    assert_eq!(got[1].1["status"], "waiting_for_input", "{:?}", got[1].1);
    assert_eq!(got[1].1["requests"][0]["question"], "Which order?");
    let answered = client()
        .post(s.url(&format!("/runs/{id}/input")))
        .json(&json!({"answer": "A-1001"}))
        .send()
        .unwrap();
    assert_eq!(answered.status().as_u16(), 202);
    let got = received_n(&received, 3);
    assert_eq!(got[2].1["id"], id.as_str());
    assert_eq!(got[2].1["status"], "completed", "{:?}", got[2].1);
    assert_eq!(got[2].1["response"], "Refunded the order you named.");
}

#[test]
fn a_schedule_on_a_single_process_store_runs_on_the_one_server() {
    let dir = tempfile::tempdir().unwrap();
    let config = format!("{DESK}schedules:\n  - {{cron: '*/1 * * * * *', input: draft it}}\n");
    write(dir.path(), "desk.yaml", &config);
    let s = Server::start(dir.path(), &["desk.yaml"], &[]);
    std::thread::sleep(Duration::from_millis(2500));
    let list = json_of(client().get(s.url("/runs")).send().unwrap());
    let runs = list.as_array().unwrap();
    assert!(runs.len() >= 2, "{list}");
    let ticks: BTreeSet<i64> = runs
        .iter()
        .map(|r| {
            assert_eq!(r["task"], "draft it", "{r}");
            assert_eq!(r["scheduled"]["schedule"], "schedule-1", "{r}");
            r["scheduled"]["tick"].as_i64().unwrap()
        })
        .collect();
    assert_eq!(ticks.len(), runs.len(), "a tick ran twice: {list}");
    let first = settled(&s, runs.last().unwrap()["id"].as_str().unwrap());
    assert_eq!(first["status"], "completed", "{first}");
}

const TICKING: &str = "version: 1
name: ticker
models:
  m: {provider: scripted, replies: [\"tock\"]}
agents:
  clock: {model: m}
schedules:
  - {cron: '*/1 * * * * *', input: tick, name: every-second}
checkpoint:
  store: postgres
  url: ${DATABASE_URL}
";

/// The ticks claimed in `url`'s `troupe_schedule_ticks`.
fn claimed(url: &str) -> Vec<i64> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let (c, conn) = tokio_postgres::connect(url, tokio_postgres::NoTls)
            .await
            .unwrap();
        tokio::spawn(conn);
        c.query(
            "SELECT tick_secs FROM troupe_schedule_ticks \
             WHERE team = 'ticker' AND schedule = 'every-second' ORDER BY tick_secs",
            &[],
        )
        .await
        .unwrap()
        .iter()
        .map(|r| r.get(0))
        .collect()
    })
}

#[test]
fn three_workers_on_one_database_run_each_tick_once() {
    let Some(url) = common::pg::fresh_db("ticks") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "ticker.yaml", TICKING);
    let env = [("DATABASE_URL", url.as_str())];
    let workers: Vec<Server> = (0..3)
        .map(|_| Server::start(dir.path(), &["ticker.yaml"], &env))
        .collect();
    // Every worker is up: the ticks from here on are contended by all three.
    std::thread::sleep(Duration::from_millis(5500));

    // The scheduled runs, by tick (read before the claims, so every tick a
    // run shows is claimed already). Every worker lists every worker's runs
    // (the runs board): a run listed by several is one run.
    let mut runs: Vec<(i64, String, usize)> = Vec::new();
    for (w, s) in workers.iter().enumerate() {
        let list = json_of(client().get(s.url("/runs")).send().unwrap());
        for r in list.as_array().unwrap() {
            assert_eq!(r["task"], "tick", "{r}");
            assert_eq!(r["scheduled"]["schedule"], "every-second", "{r}");
            let tick = r["scheduled"]["tick"].as_i64().unwrap();
            let id = r["id"].as_str().unwrap().to_string();
            if !runs.iter().any(|seen| seen.1 == id) {
                runs.push((tick, id, w));
            }
        }
    }
    let ticks = claimed(&url);
    assert!(ticks.len() >= 4, "too few ticks claimed: {ticks:?}");
    // No tick missed between the first and the last claimed.
    for pair in ticks.windows(2) {
        assert_eq!(pair[1] - pair[0], 1, "a tick was not claimed: {ticks:?}");
    }
    // Each tick ran once: no tick in two runs, every run's tick claimed,
    // every tick claimed well before the listing (all but the newest two)
    // ran.
    let by_tick: BTreeMap<i64, Vec<&(i64, String, usize)>> =
        runs.iter().fold(BTreeMap::new(), |mut m, r| {
            m.entry(r.0).or_default().push(r);
            m
        });
    for (tick, rs) in &by_tick {
        assert_eq!(rs.len(), 1, "tick {tick} ran {} times: {rs:?}", rs.len());
        assert!(ticks.contains(tick), "tick {tick} ran unclaimed");
    }
    let ran: BTreeSet<i64> = by_tick.keys().copied().collect();
    for tick in &ticks[..ticks.len() - 2] {
        assert!(
            ran.contains(tick),
            "tick {tick} was claimed but never ran: {runs:?}"
        );
    }
}
