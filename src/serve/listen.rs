//! The accept loop: each connection served on its own task (`conn.rs`)
//! under a limit on how many are open at once. A connection beyond the
//! limit is answered with a 503 (`Retry-After: 1`) as soon as its
//! request's head has come (or after [`HEAD_WAIT`], when it sends none) and
//! closed, its body unread; when even those are too many at once,
//! further connections are closed as soon as they are accepted. On
//! shutdown the listener closes, every connection is asked to end
//! gracefully, and the loop returns once they have.

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Semaphore, watch};

use super::conn::{self, Timeouts};

/// How many connections beyond the limit may be being refused at once.
const REFUSING: usize = 64;

/// How long a refusal may take (reading the request's head, writing the
/// 503, reading what else the client sent so the close does not reset the
/// connection before it reads the 503).
const REFUSAL_TIME: Duration = Duration::from_secs(1);

/// How long a refused connection's request head is waited for (a client
/// that gets its answer before it has sent its request takes it for a
/// broken connection).
const HEAD_WAIT: Duration = Duration::from_millis(300);

/// The most of a refused connection's request read before answering.
const HEAD_MAX: usize = 16 << 10;

/// After a failed accept (out of file descriptors, say), the pause before
/// the next, so the loop does not spin.
const ACCEPT_PAUSE: Duration = Duration::from_millis(20);

/// The 503 a connection beyond the limit gets.
const BUSY: &str = "{\"error\":{\"message\":\"the server has as many connections open as it takes (--max-connections); try again shortly\",\"type\":\"unavailable\"}}";

/// Serves `router` on `listener`, at most `max` connections at once, until
/// `shutdown` completes and every connection has ended.
pub(crate) async fn serve(
    listener: TcpListener,
    router: Router,
    max: usize,
    timeouts: Timeouts,
    shutdown: impl Future<Output = ()>,
) {
    let slots = Arc::new(Semaphore::new(max));
    let refusing = Arc::new(Semaphore::new(REFUSING));
    let (stop, stopped) = watch::channel(false);
    tokio::pin!(shutdown);
    loop {
        let stream = tokio::select! {
            () = &mut shutdown => break,
            r = listener.accept() => match r {
                Ok((stream, _)) => stream,
                Err(_) => {
                    tokio::time::sleep(ACCEPT_PAUSE).await;
                    continue;
                }
            },
        };
        let _ = stream.set_nodelay(true);
        if let Ok(slot) = slots.clone().try_acquire_owned() {
            tokio::spawn(conn::serve(
                stream,
                router.clone(),
                timeouts,
                stopped.clone(),
                slot,
            ));
        } else if let Ok(turn) = refusing.clone().try_acquire_owned() {
            tokio::spawn(async move {
                let _ = tokio::time::timeout(REFUSAL_TIME, refuse(stream)).await;
                drop(turn);
            });
        }
        // Else: dropped, closed at once.
    }
    drop(listener);
    let _ = stop.send(true);
    let all = u32::try_from(max).unwrap_or(u32::MAX);
    let _ = slots.acquire_many(all).await;
}

/// Answers 503 and closes.
async fn refuse(mut stream: TcpStream) {
    let mut sink = [0u8; 4096];
    let mut seen: Vec<u8> = Vec::new();
    let _ = tokio::time::timeout(HEAD_WAIT, async {
        while !seen.windows(4).any(|w| w == b"\r\n\r\n") && seen.len() < HEAD_MAX {
            match stream.read(&mut sink).await {
                Ok(0) | Err(_) => return,
                Ok(n) => seen.extend_from_slice(&sink[..n]),
            }
        }
    })
    .await;
    let head = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: {}\r\n\r\n",
        BUSY.len()
    );
    if stream.write_all(head.as_bytes()).await.is_err()
        || stream.write_all(BUSY.as_bytes()).await.is_err()
    {
        return;
    }
    let _ = stream.shutdown().await;
    // What the client sent, read and dropped until it closes: closing with
    // unread bytes would reset the connection, and the client might lose
    // the 503 before reading it.
    while let Ok(n) = stream.read(&mut sink).await {
        if n == 0 {
            break;
        }
    }
}
