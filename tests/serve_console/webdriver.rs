//! Just enough of the W3C WebDriver protocol to drive headless Chromium
//! through chromedriver, over plain HTTP/1.1 on 127.0.0.1 (std only: no
//! HTTP client crate, nothing reaches the network).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// The key a WebDriver element reference is held under.
const ELEMENT: &str = "element-6066-11e4-a52e-4f735466cecf";

/// A free TCP port on 127.0.0.1 (free when asked; the caller binds it next).
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// One HTTP/1.1 request to `127.0.0.1:port`: the status and the body.
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<&str>,
) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect(("127.0.0.1", port))?;
    stream.set_read_timeout(Some(Duration::from_secs(60)))?;
    let body = body.unwrap_or("");
    let mut head = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\
         Content-Length: {}\r\n",
        body.len()
    );
    if !body.is_empty() {
        head.push_str("Content-Type: application/json\r\n");
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    // chromedriver keeps the connection open whatever the request asks:
    // the body ends where Content-Length (or the last chunk) says.
    let mut raw = Vec::new();
    let mut buf = [0u8; 8192];
    let (head, body_at) = loop {
        let n = stream.read(&mut buf)?;
        if n == 0 {
            return Err(std::io::Error::other(
                "connection closed before the headers",
            ));
        }
        raw.extend_from_slice(&buf[..n]);
        if let Some(at) = raw.windows(4).position(|w| w == b"\r\n\r\n") {
            break (
                String::from_utf8_lossy(&raw[..at]).to_ascii_lowercase(),
                at + 4,
            );
        }
    };
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let header = |name: &str| {
        head.lines()
            .find_map(|l| l.strip_prefix(name).map(|v| v.trim().to_string()))
    };
    let length = header("content-length:").and_then(|v| v.parse::<usize>().ok());
    let chunked = header("transfer-encoding:").is_some_and(|v| v == "chunked");
    loop {
        let body = &raw[body_at..];
        let done = match length {
            Some(n) => body.len() >= n,
            None if chunked => body.ends_with(b"0\r\n\r\n"),
            None => false,
        };
        if done {
            break;
        }
        let n = stream.read(&mut buf)?;
        if n == 0 {
            break;
        }
        raw.extend_from_slice(&buf[..n]);
    }
    let rest = String::from_utf8_lossy(&raw[body_at..]).into_owned();
    Ok((status, if chunked { dechunk(&rest) } else { rest }))
}

/// A chunked body, joined.
fn dechunk(mut rest: &str) -> String {
    let mut out = String::new();
    while let Some((size, after)) = rest.split_once("\r\n") {
        let n = usize::from_str_radix(size.split(';').next().unwrap_or("").trim(), 16).unwrap_or(0);
        if n == 0 || after.len() < n {
            break;
        }
        out.push_str(&after[..n]);
        rest = after[n..].trim_start_matches("\r\n");
    }
    out
}

/// A child process killed when dropped.
pub struct Killed(pub Child);

impl Drop for Killed {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// chromedriver, running on a port of its own.
pub struct Driver {
    port: u16,
    _process: Killed,
}

impl Driver {
    /// Starts `chromedriver` and waits until it is ready.
    pub fn start(chromedriver: &Path) -> Driver {
        let port = free_port();
        let child = Command::new(chromedriver)
            .arg(format!("--port={port}"))
            .arg("--allowed-ips=127.0.0.1")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let driver = Driver {
            port,
            _process: Killed(child),
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok((200, body)) = http(port, "GET", "/status", &[], None) {
                let status: Value = serde_json::from_str(&body).unwrap_or_default();
                if status["value"]["ready"] == true {
                    return driver;
                }
            }
            assert!(Instant::now() < deadline, "chromedriver never got ready");
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// A WebDriver command; its `value`, or a panic naming the error.
    fn command(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let body = body.map(|b| b.to_string());
        let (status, text) = http(self.port, method, path, &[], body.as_deref())
            .unwrap_or_else(|e| panic!("chromedriver {method} {path}: {e}"));
        let reply: Value = serde_json::from_str(&text)
            .unwrap_or_else(|e| panic!("chromedriver {method} {path}: {e}: {text}"));
        assert_eq!(status, 200, "chromedriver {method} {path}: {reply}");
        reply["value"].clone()
    }

    /// A new headless Chromium (`binary`) with a fresh profile in `profile`.
    pub fn session(&self, binary: &Path, profile: &Path) -> Browser<'_> {
        let caps = json!({"capabilities": {"alwaysMatch": {
            "goog:chromeOptions": {
                "binary": binary,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", "--window-size=1440,1000",
                    format!("--user-data-dir={}", profile.display()),
                ],
            },
            "goog:loggingPrefs": {"browser": "ALL"},
        }}});
        let value = self.command("POST", "/session", Some(caps));
        let id = value["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id in {value}"))
            .to_string();
        Browser { driver: self, id }
    }
}

/// One browser session.
pub struct Browser<'d> {
    driver: &'d Driver,
    id: String,
}

impl Browser<'_> {
    fn command(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let path = format!("/session/{}{path}", self.id);
        self.driver.command(method, &path, body)
    }

    /// Loads `url`.
    pub fn goto(&self, url: &str) {
        self.command("POST", "/url", Some(json!({"url": url})));
    }

    /// The page's address now.
    pub fn url(&self) -> String {
        self.command("GET", "/url", None)
            .as_str()
            .unwrap_or_default()
            .to_string()
    }

    /// The first element `css` selects (panics when there is none).
    pub fn find(&self, css: &str) -> String {
        let value = self.command(
            "POST",
            "/element",
            Some(json!({"using": "css selector", "value": css})),
        );
        value[ELEMENT]
            .as_str()
            .unwrap_or_else(|| panic!("no element `{css}`: {value}"))
            .to_string()
    }

    /// Types `text` into the element `css` selects.
    pub fn type_into(&self, css: &str, text: &str) {
        let id = self.find(css);
        self.command(
            "POST",
            &format!("/element/{id}/value"),
            Some(json!({"text": text})),
        );
    }

    /// Clicks the element `css` selects.
    pub fn click(&self, css: &str) {
        let id = self.find(css);
        self.command("POST", &format!("/element/{id}/click"), Some(json!({})));
    }

    /// Runs `script` (a function body; `arguments` holds `args`) in the page.
    pub fn js(&self, script: &str, args: Value) -> Value {
        self.command(
            "POST",
            "/execute/sync",
            Some(json!({"script": script, "args": args})),
        )
    }

    /// Waits (20 s at most) until `script` returns true in the page.
    pub fn wait_for(&self, what: &str, script: &str) {
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if self.js(script, json!([])) == Value::Bool(true) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        panic!(
            "waited 20 s for {what}\npage text:\n{}\nbrowser log:\n{}",
            self.js("return document.body.innerText", json!([])),
            self.log()
        );
    }

    /// What the page wrote to its console, one entry a line.
    pub fn log(&self) -> String {
        let path = format!("/session/{}/se/log", self.id);
        let body = json!({"type": "browser"}).to_string();
        match http(self.driver.port, "POST", &path, &[], Some(&body)) {
            Ok((_, text)) => serde_json::from_str::<Value>(&text)
                .ok()
                .and_then(|v| v["value"].as_array().cloned())
                .unwrap_or_default()
                .iter()
                .map(|e| format!("{} {}", e["level"], e["message"]))
                .collect::<Vec<_>>()
                .join("\n"),
            Err(e) => format!("(no log: {e})"),
        }
    }

    /// Resizes the window to `width` by `height` CSS pixels.
    pub fn resize(&self, width: u32, height: u32) {
        self.command(
            "POST",
            "/window/rect",
            Some(json!({"width": width, "height": height})),
        );
    }

    /// A PNG of the window.
    pub fn screenshot(&self) -> Vec<u8> {
        let value = self.command("GET", "/screenshot", None);
        base64(value.as_str().unwrap_or_default())
    }
}

impl Drop for Browser<'_> {
    fn drop(&mut self) {
        let path = format!("/session/{}", self.id);
        let _ = http(self.driver.port, "DELETE", &path, &[], None);
    }
}

/// Decodes standard base64 (what WebDriver sends screenshots as).
fn base64(text: &str) -> Vec<u8> {
    let value = |c: u8| match c {
        b'A'..=b'Z' => Some(c - b'A'),
        b'a'..=b'z' => Some(c - b'a' + 26),
        b'0'..=b'9' => Some(c - b'0' + 52),
        b'+' => Some(62),
        b'/' => Some(63),
        _ => None,
    };
    let sextets: Vec<u8> = text.bytes().filter_map(value).collect();
    let mut out = Vec::with_capacity(sextets.len() * 3 / 4);
    for chunk in sextets.chunks(4) {
        let n = chunk
            .iter()
            .enumerate()
            .fold(0u32, |n, (i, &s)| n | u32::from(s) << (18 - 6 * i));
        let bytes = n.to_be_bytes();
        out.extend_from_slice(&bytes[1..chunk.len()]);
    }
    out
}

#[test]
fn base64_decodes_what_it_should() {
    assert_eq!(base64("aGVsbG8="), b"hello");
    assert_eq!(base64("aGVsbG8gd29ybGQ="), b"hello world");
    assert_eq!(base64("YQ=="), b"a");
    assert_eq!(base64("YWJj"), b"abc");
}
