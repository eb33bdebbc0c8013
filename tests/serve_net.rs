//! `troupe serve`'s connection discipline, met over raw sockets on
//! 127.0.0.1: headers trickled a byte a second, idle sockets beyond the
//! connection limit, a 1 TB `Content-Length`, a body that never comes —
//! and all the while a normal client's request is answered within 1 s,
//! and the slow or idle sockets are closed by the timeouts.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::serve::{DESK, Server, client};
use common::write;

/// `host:port` of a server.
fn addr(s: &Server) -> String {
    s.base.trim_start_matches("http://").to_string()
}

/// Whether the peer closed `sock` within `limit` (reads and drops what
/// comes until then).
fn closed_within(sock: &mut TcpStream, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    let mut buf = [0u8; 4096];
    while Instant::now() < end {
        sock.set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        match sock.read(&mut buf) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(_) => return true,
        }
    }
    false
}

/// What the server answers first on `sock` (up to the end of the head).
fn head(sock: &mut TcpStream, limit: Duration) -> String {
    sock.set_read_timeout(Some(limit)).unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 1024];
    while !got.windows(4).any(|w| w == b"\r\n\r\n") {
        match sock.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => got.extend_from_slice(&buf[..n]),
        }
    }
    String::from_utf8_lossy(&got).into_owned()
}

/// A normal client asking `GET /v1/models` every 100 ms while `busy`
/// holds; the slowest answer and the statuses seen.
fn normal_client(
    s: &Server,
    busy: Arc<AtomicBool>,
) -> std::thread::JoinHandle<(Duration, Vec<u16>)> {
    let url = s.url("/v1/models");
    std::thread::spawn(move || {
        let c = reqwest::blocking::Client::builder()
            .timeout(Duration::from_secs(5))
            // A fresh connection each time: the limit is on connections.
            .pool_max_idle_per_host(0)
            .build()
            .unwrap();
        let mut slowest = Duration::ZERO;
        let mut statuses = Vec::new();
        while busy.load(Ordering::SeqCst) {
            let t = Instant::now();
            let status = c.get(&url).send().map(|r| r.status().as_u16()).unwrap_or(0);
            slowest = slowest.max(t.elapsed());
            statuses.push(status);
            std::thread::sleep(Duration::from_millis(100));
        }
        (slowest, statuses)
    })
}

#[test]
fn headers_trickled_a_byte_a_second_are_cut_by_the_header_timeout() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "desk.yaml", DESK);
    let s = Server::start(
        dir.path(),
        &["desk.yaml", "--header-timeout", "1", "--idle-timeout", "30"],
        &[],
    );
    let _ = client();
    let busy = Arc::new(AtomicBool::new(true));
    let normal = normal_client(&s, busy.clone());
    // Five slow lorises, each sending its request line a byte a second.
    let closed = Arc::new(Mutex::new(Vec::new()));
    let lorises: Vec<_> = (0..5)
        .map(|_| {
            let a = addr(&s);
            let closed = closed.clone();
            std::thread::spawn(move || {
                let mut sock = TcpStream::connect(a).unwrap();
                let start = Instant::now();
                for b in b"GET /v1/models HTTP/1.1\r\nHost: x\r\n" {
                    let _ = sock.write_all(&[*b]);
                    if closed_within(&mut sock, Duration::from_secs(1)) {
                        closed.lock().unwrap().push(start.elapsed());
                        return;
                    }
                }
            })
        })
        .collect();
    for l in lorises {
        l.join().unwrap();
    }
    busy.store(false, Ordering::SeqCst);
    let (slowest, statuses) = normal.join().unwrap();
    let closed = closed.lock().unwrap();
    assert_eq!(closed.len(), 5, "every trickling socket is closed");
    assert!(
        closed.iter().all(|t| *t < Duration::from_secs(5)),
        "closed after {closed:?} (header timeout 1 s)"
    );
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    assert!(
        slowest < Duration::from_secs(1),
        "slowest answer {slowest:?}"
    );
}

/// The connection limit and timeouts from the config's `serve:` block.
const LIMITED: &str = "serve: {max_connections: 8, header_timeout: 2s, idle_timeout: 2s}\n";

#[test]
fn idle_sockets_beyond_the_limit_get_503_and_the_idle_ones_are_closed() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "desk.yaml", &format!("{DESK}{LIMITED}"));
    let s = Server::start(dir.path(), &["desk.yaml"], &[]);
    let _ = client();
    // Eight keep-alive connections, each served one request, then idle:
    // the limit is full.
    let mut idle: Vec<TcpStream> = (0..8)
        .map(|_| {
            let mut sock = TcpStream::connect(addr(&s)).unwrap();
            sock.write_all(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
                .unwrap();
            let h = head(&mut sock, Duration::from_secs(5));
            assert!(h.starts_with("HTTP/1.1 200"), "{h}");
            sock
        })
        .collect();
    let filled = Instant::now();
    let busy = Arc::new(AtomicBool::new(true));
    let normal = normal_client(&s, busy.clone());
    // Twenty more sockets, sending nothing: each is answered 503 at once.
    let mut beyond: Vec<TcpStream> = (0..20)
        .map(|_| TcpStream::connect(addr(&s)).unwrap())
        .collect();
    for sock in &mut beyond {
        let h = head(sock, Duration::from_secs(1));
        assert!(h.starts_with("HTTP/1.1 503"), "{h}");
        assert!(h.to_ascii_lowercase().contains("retry-after: 1"), "{h}");
    }
    // The idle ones are closed by the idle timeout (2 s).
    for sock in &mut idle {
        assert!(
            closed_within(sock, Duration::from_secs(6)),
            "idle socket left open"
        );
    }
    assert!(filled.elapsed() >= Duration::from_millis(1500));
    // Room again: the normal client gets in.
    std::thread::sleep(Duration::from_millis(500));
    busy.store(false, Ordering::SeqCst);
    let (slowest, statuses) = normal.join().unwrap();
    assert!(
        slowest < Duration::from_secs(1),
        "slowest answer {slowest:?}"
    );
    assert!(
        statuses.iter().all(|s| *s == 200 || *s == 503),
        "{statuses:?}"
    );
    assert!(
        statuses.contains(&503),
        "the full server answered 503: {statuses:?}"
    );
    assert_eq!(statuses.last(), Some(&200), "{statuses:?}");
}

#[test]
fn a_terabyte_content_length_is_413_at_once_and_a_stalled_body_408() {
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), "desk.yaml", DESK);
    let s = Server::start(
        dir.path(),
        &["desk.yaml", "--body-timeout", "1", "--max-body", "4096"],
        &[],
    );
    let _ = client();
    let busy = Arc::new(AtomicBool::new(true));
    let normal = normal_client(&s, busy.clone());
    let mut big = TcpStream::connect(addr(&s)).unwrap();
    let t = Instant::now();
    big.write_all(
        b"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000000000000\r\n\r\n{\"messages\":",
    )
    .unwrap();
    let h = head(&mut big, Duration::from_secs(5));
    assert!(h.starts_with("HTTP/1.1 413"), "{h}");
    assert!(t.elapsed() < Duration::from_secs(1), "{:?}", t.elapsed());
    assert!(closed_within(&mut big, Duration::from_secs(2)));
    // A body declared small but stalled after its first bytes.
    let mut stalled = TcpStream::connect(addr(&s)).unwrap();
    stalled
        .write_all(
            b"POST /runs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"task\":",
        )
        .unwrap();
    let t = Instant::now();
    let h = head(&mut stalled, Duration::from_secs(5));
    assert!(h.starts_with("HTTP/1.1 408"), "{h}");
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    busy.store(false, Ordering::SeqCst);
    let (slowest, statuses) = normal.join().unwrap();
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    assert!(
        slowest < Duration::from_secs(1),
        "slowest answer {slowest:?}"
    );
}
