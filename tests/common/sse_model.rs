//! An OpenAI-format chat endpoint on 127.0.0.1 that streams (server-sent
//! events, several pieces per answer) when asked to, and answers whole
//! otherwise: an agent offered `lookup_order` or `calculator` calls it
//! first; any other request gets `answer N to <its last message>`, N the
//! request's number. It can be stopped (its port then refuses).

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use serde_json::{Value, json};

/// The endpoint (see the module's doc).
pub struct SseModel {
    /// Its base URL (`…/v1`).
    pub url: String,
    addr: SocketAddr,
    /// The requests it was sent.
    pub seen: Arc<Mutex<Vec<Value>>>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl SseModel {
    pub fn start() -> SseModel {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let addr = listener.local_addr().expect("addr");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let stop = Arc::new(AtomicBool::new(false));
        let count = Arc::new(AtomicUsize::new(0));
        let (kept, stopped) = (seen.clone(), stop.clone());
        let thread = std::thread::spawn(move || {
            for stream in listener.incoming() {
                if stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(stream) = stream else { continue };
                let (kept, count) = (kept.clone(), count.clone());
                std::thread::spawn(move || serve(stream, &kept, &count));
            }
        });
        SseModel {
            url: format!("http://{addr}/v1"),
            addr,
            seen,
            stop,
            thread: Some(thread),
        }
    }

    /// Stops listening: the port refuses connections after.
    pub fn stop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        if let Some(t) = self.thread.take() {
            t.join().expect("the server thread");
        }
        assert!(TcpStream::connect(self.addr).is_err(), "still listening");
    }
}

fn serve(mut stream: TcpStream, seen: &Mutex<Vec<Value>>, count: &AtomicUsize) {
    let mut reader = BufReader::new(stream.try_clone().expect("clone"));
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line == "\r\n" {
            break;
        }
        if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
            length = v.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0; length];
    let _ = reader.read_exact(&mut body);
    let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    seen.lock().expect("requests").push(request.clone());
    let n = count.fetch_add(1, Ordering::SeqCst) + 1;
    let (text, call) = answer(&request, n);
    let usage = json!({"prompt_tokens": 11, "completion_tokens": 4, "total_tokens": 15});
    if request["stream"] != json!(true) {
        let message = match &call {
            Some((name, args)) => json!({"role": "assistant", "content": null, "tool_calls": [{
                "id": format!("call_{n}"), "type": "function",
                "function": {"name": name, "arguments": args}}]}),
            None => json!({"role": "assistant", "content": text}),
        };
        let reply = json!({"id": "x", "object": "chat.completion", "model": "fake",
            "choices": [{"index": 0, "finish_reason": if call.is_some() {"tool_calls"} else {"stop"}, "message": message}],
            "usage": usage})
        .to_string();
        let _ = write!(
            stream,
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{reply}",
            reply.len()
        );
        return;
    }
    let mut chunks = Vec::new();
    let chunk = |delta: Value, finish: Value| {
        json!({"id": "x", "object": "chat.completion.chunk", "model": "fake",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})
    };
    match &call {
        Some((name, args)) => {
            chunks.push(chunk(
                json!({"role": "assistant", "tool_calls": [{"index": 0, "id": format!("call_{n}"), "type": "function",
                    "function": {"name": name, "arguments": ""}}]}),
                Value::Null,
            ));
            let (a, b) = args.split_at(args.len() / 2);
            for piece in [a, b] {
                chunks.push(chunk(
                    json!({"tool_calls": [{"index": 0, "function": {"arguments": piece}}]}),
                    Value::Null,
                ));
            }
            chunks.push(chunk(json!({}), json!("tool_calls")));
        }
        None => {
            for (i, word) in text.split(' ').enumerate() {
                let piece = if i == 0 {
                    word.to_string()
                } else {
                    format!(" {word}")
                };
                chunks.push(chunk(json!({"content": piece}), Value::Null));
            }
            chunks.push(chunk(json!({}), json!("stop")));
        }
    }
    chunks.push(json!({"id": "x", "object": "chat.completion.chunk", "model": "fake", "choices": [], "usage": usage}));
    let _ = write!(
        stream,
        "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n"
    );
    for c in chunks {
        let _ = write!(stream, "data: {c}\n\n");
        let _ = stream.flush();
    }
    let _ = write!(stream, "data: [DONE]\n\n");
}

/// The text (or the tool call) answering `request`, the `n`-th.
fn answer(request: &Value, n: usize) -> (String, Option<(String, String)>) {
    let offered = |name: &str| {
        request["tools"]
            .as_array()
            .is_some_and(|t| t.iter().any(|t| t["function"]["name"] == name))
    };
    let messages = request["messages"].as_array().cloned().unwrap_or_default();
    let answered = messages.iter().any(|m| m["role"] == "tool");
    if !answered && offered("lookup_order") {
        return (
            String::new(),
            Some(("lookup_order".into(), r#"{"order_id":"A-1001"}"#.into())),
        );
    }
    if !answered && offered("calculator") {
        return (
            String::new(),
            Some(("calculator".into(), r#"{"expression":"6 * 7"}"#.into())),
        );
    }
    let last = messages
        .last()
        .and_then(|m| m["content"].as_str())
        .unwrap_or("")
        .chars()
        .take(24)
        .collect::<String>();
    (format!("answer {n} to {last}"), None)
}
