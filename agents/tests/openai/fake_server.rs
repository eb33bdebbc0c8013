//! An in-process fake of a model server on 127.0.0.1: real HTTP, real JSON
//! and SSE, answers scripted per request, requests (and their paths)
//! recorded. It answers a POST to any path, so the Anthropic and Responses
//! tests use it too (`tests/anthropic`, `tests/openai_responses`).

use std::collections::VecDeque;
use std::convert::Infallible;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri};
use axum::response::Response;
use serde_json::Value;

/// One piece of a streamed body.
#[derive(Debug, Clone)]
pub enum Piece {
    /// Raw bytes, sent as one write (SSE framing included by the test).
    Raw(String),
    /// Breaks the connection off mid-body.
    Break,
    /// Sends nothing more until the test opens the gate.
    Gate(Arc<tokio::sync::Notify>),
}

/// How the server answers one request.
#[derive(Debug, Clone)]
pub enum Answer {
    /// A whole body with a status and extra headers.
    Whole {
        status: u16,
        headers: Vec<(&'static str, String)>,
        body: String,
    },
    /// A `text/event-stream` body sent piece by piece.
    Stream { pieces: Vec<Piece>, gap: Duration },
    /// Never answers.
    Hang,
}

impl Answer {
    /// 200 with this JSON body.
    pub fn json(body: Value) -> Self {
        Answer::Whole {
            status: 200,
            headers: vec![("content-type", "application/json".into())],
            body: body.to_string(),
        }
    }

    /// A status with a text body.
    pub fn status(status: u16, body: &str) -> Self {
        Answer::Whole {
            status,
            headers: vec![],
            body: body.into(),
        }
    }

    /// An SSE stream whose events carry these JSON chunks, then `[DONE]`.
    pub fn sse(chunks: &[Value]) -> Self {
        let mut pieces: Vec<Piece> = chunks
            .iter()
            .map(|c| Piece::Raw(format!("data: {c}\n\n")))
            .collect();
        pieces.push(Piece::Raw("data: [DONE]\n\n".into()));
        Answer::Stream {
            pieces,
            gap: Duration::from_millis(2),
        }
    }
}

/// A request the server received.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The path and query asked for (`/v1/chat/completions`).
    pub path: String,
    pub headers: HeaderMap,
    pub body: Value,
}

#[derive(Default)]
struct Shared {
    answers: Mutex<VecDeque<Answer>>,
    requests: Mutex<Vec<Recorded>>,
}

/// The running server; it stops when the test's runtime ends.
pub struct FakeOpenAi {
    /// The base URL to give a client (`http://127.0.0.1:<port>/v1`).
    pub base_url: String,
    shared: Arc<Shared>,
}

impl FakeOpenAi {
    pub async fn start(answers: impl IntoIterator<Item = Answer>) -> Self {
        let shared = Arc::new(Shared {
            answers: Mutex::new(answers.into_iter().collect()),
            requests: Mutex::new(Vec::new()),
        });
        let app = axum::Router::new()
            .fallback(handle)
            .with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        FakeOpenAi {
            base_url: format!("http://{addr}/v1"),
            shared,
        }
    }

    pub fn requests(&self) -> Vec<Recorded> {
        self.shared.requests.lock().unwrap().clone()
    }
}

async fn handle(
    State(shared): State<Arc<Shared>>,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let body: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let path = uri
        .path_and_query()
        .map(|p| p.to_string())
        .unwrap_or_default();
    shared.requests.lock().unwrap().push(Recorded {
        path,
        headers,
        body,
    });
    let answer = shared.answers.lock().unwrap().pop_front();
    match answer {
        None => Response::builder()
            .status(500)
            .body(Body::from("fake server: no scripted answer left"))
            .unwrap(),
        Some(Answer::Whole {
            status,
            headers,
            body,
        }) => {
            let mut response = Response::builder().status(StatusCode::from_u16(status).unwrap());
            for (name, value) in headers {
                response = response.header(name, value);
            }
            response.body(Body::from(body)).unwrap()
        }
        Some(Answer::Stream { pieces, gap }) => {
            let stream = futures::stream::unfold(pieces.into_iter(), move |mut rest| async move {
                let mut piece = rest.next()?;
                while let Piece::Gate(gate) = &piece {
                    gate.notified().await;
                    piece = rest.next()?;
                }
                tokio::time::sleep(gap).await;
                let item: Result<Bytes, std::io::Error> = match piece {
                    Piece::Raw(text) => Ok(Bytes::from(text)),
                    Piece::Break => Err(std::io::Error::other("connection cut")),
                    Piece::Gate(_) => unreachable!("gates are waited for above"),
                };
                Some((item, rest))
            });
            Response::builder()
                .header("content-type", "text/event-stream")
                .body(Body::from_stream(stream))
                .unwrap()
        }
        Some(Answer::Hang) => {
            std::future::pending::<Infallible>().await;
            unreachable!()
        }
    }
}
