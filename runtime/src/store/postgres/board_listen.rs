//! The board's wake-ups: one connection of its own (a pooled one would
//! drop notifications) `LISTEN`s on the board's channels and passes each
//! notification on as a [`Notice`]. When the connection is lost it is made
//! again after a second, and a [`Notice::Resync`] tells the readers that
//! wake-ups may have been missed meanwhile.

use std::sync::Arc;
use std::time::Duration;

/// The channel a run's new events and status are told on.
pub(super) const RUN_CHANNEL: &str = "troupe_serve_run";
/// The channel requests to workers are told on.
pub(super) const CONTROL_CHANNEL: &str = "troupe_serve_control";

use tokio::sync::broadcast;
use tokio_postgres::{AsyncMessage, Config};

use super::super::board::Notice;
use super::super::error::StoreError;
use super::connect;

/// How long to wait before connecting again.
const AGAIN: Duration = Duration::from_secs(1);

/// Starts listening in the background (for as long as the runtime runs).
pub(super) fn start(
    config: Config,
    db: Arc<str>,
    notices: broadcast::Sender<Notice>,
) -> Result<(), StoreError> {
    let tls = connect::tls(&db)?;
    tokio::spawn(async move {
        loop {
            if let Err(e) = listen(&config, tls.clone(), &notices).await {
                tracing::warn!(%db, "the board's listening connection was lost: {e}");
            }
            tokio::time::sleep(AGAIN).await;
        }
    });
    Ok(())
}

/// One listening connection, until it is lost.
async fn listen(
    config: &Config,
    tls: tokio_postgres_rustls::MakeRustlsConnect,
    notices: &broadcast::Sender<Notice>,
) -> Result<(), tokio_postgres::Error> {
    let (client, mut connection) = config.connect(tls).await?;
    let forward = notices.clone();
    let driver = tokio::spawn(async move {
        loop {
            match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                Some(Ok(AsyncMessage::Notification(n))) => {
                    let notice = if n.channel() == RUN_CHANNEL {
                        Notice::Run(n.payload().to_string())
                    } else {
                        Notice::Control
                    };
                    // No receiver now: nobody to wake.
                    let _ = forward.send(notice);
                }
                Some(Ok(_)) => {}
                Some(Err(e)) => return Err(e),
                None => return Ok(()),
            }
        }
    });
    client
        .batch_execute(&format!("LISTEN {RUN_CHANNEL}; LISTEN {CONTROL_CHANNEL}"))
        .await?;
    let _ = notices.send(Notice::Resync);
    let ended = driver.await;
    drop(client);
    match ended {
        Ok(r) => r,
        Err(_) => Ok(()),
    }
}
