//! One accepted connection, served over hyper's HTTP/1 under two timeouts:
//! a request's head must arrive within the header timeout (from the
//! connection's start, or from the first byte of a later request), and a
//! connection with no request under way is closed after the idle timeout.
//! A request under way (its response not yet fully sent: an SSE stream, a
//! long answer) is never cut by them; its body has its own deadline
//! (`intake.rs`).

use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use axum::body::{Body, Bytes};
use hyper::body::{Frame, Incoming, SizeHint};
use hyper::server::conn::http1;
use hyper_util::rt::TokioIo;
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio::sync::{Notify, OwnedSemaphorePermit, watch};
use tokio::time::Instant;

/// The timeouts a connection is held to.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Timeouts {
    /// A request's head (request line and headers) must arrive within this.
    pub(crate) header: Duration,
    /// A connection with no request under way is closed after this.
    pub(crate) idle: Duration,
}

/// Serves `stream` until it closes, a timeout closes it, or `stop` asks
/// for a graceful end (the request under way finishes, then it closes).
/// `slot` is its place under the connection limit, freed when it ends.
pub(crate) async fn serve(
    stream: TcpStream,
    router: Router,
    timeouts: Timeouts,
    mut stop: watch::Receiver<bool>,
    slot: OwnedSemaphorePermit,
) {
    let activity = Arc::new(Activity::new());
    let io = TokioIo::new(Watched {
        inner: stream,
        activity: activity.clone(),
    });
    let tower = TowerToHyperService::new(router);
    let seen = activity.clone();
    let service = hyper::service::service_fn(move |req: hyper::Request<Incoming>| {
        let guard = seen.begin();
        let answer = hyper::service::Service::call(&tower, req);
        async move {
            let response = answer.await?;
            Ok::<_, std::convert::Infallible>(response.map(|body| {
                Body::new(Guarded {
                    inner: body,
                    _guard: guard,
                })
            }))
        }
    });
    let conn = http1::Builder::new()
        .keep_alive(true)
        // The header timeout is kept here (see `Activity`), not by hyper,
        // whose timer would also cut idle keep-alive connections.
        .header_read_timeout(None)
        .serve_connection(io, service);
    tokio::pin!(conn);
    if *stop.borrow_and_update() {
        conn.as_mut().graceful_shutdown();
    } else {
        tokio::select! {
            _ = conn.as_mut() => { drop(slot); return; }
            () = activity.expired(timeouts) => { drop(slot); return; }
            _ = stop.changed() => conn.as_mut().graceful_shutdown(),
        }
    }
    // Shutting down: the request under way finishes (its run is being
    // stopped), an idle connection closes at once.
    let _ = conn.await;
    drop(slot);
}

/// What a connection is doing, for its timeouts.
struct Activity {
    state: Mutex<Seen>,
    changed: Notify,
}

struct Seen {
    /// Requests whose responses are not fully sent.
    in_flight: usize,
    /// When the connection started, or its last response ended.
    since: Instant,
    /// The first byte read since then, if any (a request's head arriving).
    first_byte: Option<Instant>,
    /// Whether a request was served already (a later wait is idle time).
    served: bool,
}

impl Activity {
    fn new() -> Self {
        Activity {
            state: Mutex::new(Seen {
                in_flight: 0,
                since: Instant::now(),
                first_byte: None,
                served: false,
            }),
            changed: Notify::new(),
        }
    }

    fn lock(&self) -> MutexGuard<'_, Seen> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A request's head has been read: the timeouts pause until its
    /// response is sent (the guard's drop).
    fn begin(self: &Arc<Self>) -> InFlight {
        {
            let mut s = self.lock();
            s.in_flight += 1;
            s.first_byte = None;
        }
        self.changed.notify_one();
        InFlight {
            activity: self.clone(),
        }
    }

    /// Bytes were read.
    fn read(&self) {
        let mut s = self.lock();
        if s.in_flight == 0 && s.first_byte.is_none() {
            s.first_byte = Some(Instant::now());
            drop(s);
            self.changed.notify_one();
        }
    }

    /// When the connection is to be closed, as things stand (`None`: a
    /// request is under way).
    fn deadline(&self, t: Timeouts) -> Option<Instant> {
        let s = self.lock();
        if s.in_flight > 0 {
            None
        } else if !s.served {
            Some(s.since + t.header)
        } else if let Some(first) = s.first_byte {
            Some(first + t.header)
        } else {
            Some(s.since + t.idle)
        }
    }

    /// Completes when a timeout runs out.
    async fn expired(&self, t: Timeouts) {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            match self.deadline(t) {
                None => changed.await,
                Some(at) => {
                    tokio::select! {
                        () = tokio::time::sleep_until(at) => {
                            if self.deadline(t).is_some_and(|d| d <= Instant::now()) {
                                return;
                            }
                        }
                        () = &mut changed => {}
                    }
                }
            }
        }
    }
}

/// A request under way; its drop (the response sent, or dropped) restarts
/// the idle clock.
struct InFlight {
    activity: Arc<Activity>,
}

impl Drop for InFlight {
    fn drop(&mut self) {
        {
            let mut s = self.activity.lock();
            s.in_flight = s.in_flight.saturating_sub(1);
            if s.in_flight == 0 {
                s.since = Instant::now();
                s.first_byte = None;
                s.served = true;
            }
        }
        self.activity.changed.notify_one();
    }
}

/// A response body that holds its request's [`InFlight`] until it is sent.
struct Guarded {
    inner: Body,
    _guard: InFlight,
}

impl hyper::body::Body for Guarded {
    type Data = Bytes;
    type Error = axum::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, axum::Error>>> {
        Pin::new(&mut self.inner).poll_frame(cx)
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// The socket, noting when bytes arrive.
struct Watched {
    inner: TcpStream,
    activity: Arc<Activity>,
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let r = Pin::new(&mut self.inner).poll_read(cx, buf);
        if matches!(r, Poll::Ready(Ok(()))) && buf.filled().len() > before {
            self.activity.read();
        }
        r
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}
