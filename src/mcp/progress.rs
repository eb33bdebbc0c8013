//! A run's events as MCP progress notifications: the run's sink feeds a
//! channel, and the call's own task (so that each notification belongs to
//! the request it reports on, as streamable HTTP routes them) forwards
//! the events that say where the run stands while it waits for the run.

#![allow(deprecated)] // MCP logging (SEP-2577 deprecates it; 2025-11-25 has it).

use std::future::Future;
use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::LoggingLevel;
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::service::Peer;
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};
use troupe::{Event, event::EventRecord, sink::EventSink};

use super::record::RunRecord;

/// The receiving end of a run's events.
pub(super) type Events = UnboundedReceiver<EventRecord>;

/// A sink for a run's context and the channel its events arrive on.
/// Every event also goes to the host's `record` of the run, if any.
pub(super) fn channel(record_keeper: Option<Arc<dyn RunRecord>>) -> (EventSink, Events) {
    let (tx, rx) = unbounded_channel();
    let sink = EventSink::callback(move |record: &EventRecord| {
        if let Some(r) = &record_keeper {
            r.event(record);
        }
        if worth_reporting(&record.event) {
            let _ = tx.send(record.clone());
        }
    });
    (sink, rx)
}

/// Whether an event says where the run stands (turns, tool calls,
/// questions, retries, checkpoints), not a piece of one (text deltas,
/// deliveries, model-call details).
fn worth_reporting(event: &Event) -> bool {
    matches!(
        event,
        Event::RunStarted { .. }
            | Event::RunFinished { .. }
            | Event::AgentStarted { .. }
            | Event::AgentFinished { .. }
            | Event::AgentFailed { .. }
            | Event::ToolCall { .. }
            | Event::Handoff { .. }
            | Event::InputRequested { .. }
            | Event::CheckpointSaved { .. }
            | Event::Retry { .. }
            | Event::Selected { .. }
    )
}

/// Where progress goes: the calling request's token, if it sent one.
pub(super) struct Reporter {
    peer: Peer<RoleServer>,
    token: Option<ProgressToken>,
    count: u32,
    log: Option<LoggingLevel>,
}

impl Reporter {
    /// Reports to `peer` under `token` (nothing without one).
    pub(super) fn new(peer: Peer<RoleServer>, token: Option<ProgressToken>) -> Self {
        Reporter {
            peer,
            token,
            count: 0,
            log: None,
        }
    }

    /// Also sends each event as a log message at or above `level`.
    pub(super) fn with_log(mut self, level: Option<LoggingLevel>) -> Self {
        self.log = level;
        self
    }

    async fn report(&mut self, record: &EventRecord) {
        let text = record.event.to_string();
        let message = troupe::secrets::redact(text.trim()).into_owned();
        super::logging::send(&self.peer, self.log, record, &message).await;
        let Some(token) = self.token.clone() else {
            return;
        };
        self.count += 1;
        let param =
            ProgressNotificationParam::new(token, f64::from(self.count)).with_message(message);
        // A client gone away is the call's own problem: the run goes on.
        let _ = self.peer.notify_progress(param).await;
    }

    /// Awaits `work`, forwarding the events arriving meanwhile, and those
    /// left once it is done, so they precede the call's result.
    pub(super) async fn follow<F: Future>(&mut self, events: &mut Events, work: F) -> F::Output {
        tokio::pin!(work);
        let out = loop {
            tokio::select! {
                biased;
                out = &mut work => break out,
                Some(record) = events.recv() => self.report(&record).await,
            }
        };
        while let Ok(record) = events.try_recv() {
            self.report(&record).await;
        }
        out
    }
}
