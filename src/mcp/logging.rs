//! `logging/setLevel` and the run's events as `notifications/message`:
//! once a client set a level, each event of a call's run that says where
//! the run stands is sent as a log message — `error` for a failed agent,
//! `warning` for a retry, `info` otherwise — when at or above that level.

#![allow(deprecated)] // MCP logging is deprecated by SEP-2577, still in 2025-11-25.

use std::sync::{Arc, Mutex};

use rmcp::RoleServer;
use rmcp::model::{LoggingLevel, LoggingMessageNotificationParam};
use rmcp::service::Peer;
use serde_json::json;
use troupe::{Event, event::EventRecord};

/// The level one session's client asked for (none: no log messages).
#[derive(Clone, Default)]
pub(crate) struct LogLevel(Arc<Mutex<Option<LoggingLevel>>>);

impl LogLevel {
    /// `logging/setLevel`.
    pub(super) fn set(&self, level: LoggingLevel) {
        *self.0.lock().unwrap_or_else(|p| p.into_inner()) = Some(level);
    }

    /// The level set, if any.
    pub(super) fn get(&self) -> Option<LoggingLevel> {
        *self.0.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// The severity of `event` as a log message.
fn level_of(event: &Event) -> LoggingLevel {
    match event {
        Event::AgentFailed { .. } => LoggingLevel::Error,
        Event::Retry { .. } => LoggingLevel::Warning,
        _ => LoggingLevel::Info,
    }
}

/// Where `level` stands, debug lowest.
fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}

/// Sends `record` to `peer` as a log message if `threshold` lets it
/// through; `text` is the event as progress reads it (secrets masked).
pub(super) async fn send(
    peer: &Peer<RoleServer>,
    threshold: Option<LoggingLevel>,
    record: &EventRecord,
    text: &str,
) {
    let Some(threshold) = threshold else { return };
    let level = level_of(&record.event);
    if rank(level) < rank(threshold) {
        return;
    }
    let data = json!({"run": record.run_id, "event": text});
    let param = LoggingMessageNotificationParam::new(level, data).with_logger("troupe");
    // A client gone away is the call's own problem: the run goes on.
    let _ = peer.notify_logging_message(param).await;
}
