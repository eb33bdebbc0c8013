//! A run's event log: every event of the run, in order, kept as the
//! record its context emitted and written as a JSON line (`--events
//! jsonl`) only when a reader asks for the line — `GET /runs/{id}/events`,
//! a shared board. The streams that show a run's answer as it comes (the
//! chat completion's, A2A's, AG-UI's) read the records as they are.
//! Serializing every event as it was emitted, and decoding it again for
//! every stream, was half of what a served user turn cost.
//!
//! Lines from elsewhere (another worker's events, loaded from a shared
//! board) are kept as the lines they came as.

use std::sync::Arc;

use troupe::Event;
use troupe::event::EventRecord;
use troupe::sink::json_line;

/// One entry of a run's event log.
#[derive(Clone)]
pub(crate) enum Logged {
    /// An event of this worker's run, as emitted.
    Record(Arc<EventRecord>),
    /// An event as a JSON line (from another worker).
    Line(Arc<str>),
}

impl Logged {
    /// The entry as one JSON line, as `troupe run --events jsonl` writes
    /// it (registered secrets masked). An event that cannot be written
    /// (none can fail: every map in one has string keys) is a warning
    /// saying why, in its place.
    pub(crate) fn line(&self) -> Arc<str> {
        match self {
            Logged::Record(record) => match json_line(record) {
                Ok(line) => line.into(),
                Err(e) => serde_json::json!({
                    "run_id": &*record.run_id,
                    "seq": record.seq,
                    "type": "warning",
                    "path": record.path(),
                    "text": format!("this event could not be written as JSON: {e}"),
                })
                .to_string()
                .into(),
            },
            Logged::Line(line) => line.clone(),
        }
    }

    /// The event (a line decoded; `None` if it does not decode).
    pub(crate) fn event(&self) -> Option<Event> {
        match self {
            Logged::Record(record) => Some(record.event.clone()),
            Logged::Line(line) => serde_json::from_str::<EventRecord>(line)
                .ok()
                .map(EventRecord::into_event),
        }
    }

    /// The event — a line only if it is of one of `kinds` (its `type`),
    /// else passed over without decoding it; a record of this run's is
    /// at hand whatever its kind (the reader matches on what it takes).
    pub(crate) fn event_of(&self, kinds: &[&str]) -> Option<Event> {
        if let Logged::Line(line) = self
            && let Some(kind) = EventRecord::type_in_line(line)
            && !kinds.contains(&kind)
        {
            return None;
        }
        self.event()
    }

    /// Roughly how many bytes it holds.
    fn weight(&self) -> usize {
        match self {
            // A record's own size and what its strings usually hold.
            Logged::Record(_) => std::mem::size_of::<EventRecord>() + 64,
            Logged::Line(line) => line.len() + 16,
        }
    }
}

/// Every event of a run so far, in order.
#[derive(Default)]
pub(crate) struct EventLog {
    entries: Vec<Logged>,
}

impl EventLog {
    /// Adds an event of this run.
    pub(crate) fn push(&mut self, record: EventRecord) {
        self.entries.push(Logged::Record(Arc::new(record)));
    }

    /// Adds events as JSON lines (another worker's).
    pub(crate) fn extend_lines(&mut self, lines: impl IntoIterator<Item = Arc<str>>) {
        self.entries.extend(lines.into_iter().map(Logged::Line));
    }

    /// Gives back the room left for more events (a run that has ended;
    /// up to half the list's bytes).
    pub(crate) fn shrink_to_fit(&mut self) {
        self.entries.shrink_to_fit();
    }

    /// How many events it holds.
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// The `i`th event, if there is one yet.
    pub(crate) fn get(&self, i: usize) -> Option<Logged> {
        self.entries.get(i).cloned()
    }

    /// The events from the `from`th on (none past the end), to read
    /// outside the run's lock.
    pub(crate) fn from(&self, from: usize) -> Vec<Logged> {
        self.entries.get(from..).unwrap_or_default().to_vec()
    }

    /// Roughly how many bytes it holds.
    pub(crate) fn weight(&self) -> usize {
        self.entries.iter().map(Logged::weight).sum()
    }
}

#[cfg(test)]
mod tests {
    use troupe::message::Message;

    use super::*;

    fn record(event: Event) -> EventRecord {
        EventRecord::new("run-1", 0, event)
    }

    #[test]
    fn a_record_reads_as_the_line_it_would_have_been_written_as_and_back() {
        let events = [
            Event::TextDelta {
                path: "trio/c".into(),
                text: "hi \"there\"".into(),
            },
            Event::MessageProduced {
                path: "trio/c".into(),
                message: Arc::new(Message::text("c", "hi")),
            },
            Event::Warning {
                path: "trio".into(),
                text: "late".into(),
            },
        ];
        let mut log = EventLog::default();
        for event in &events {
            let r = record(event.clone());
            log.push(r.clone());
            log.extend_lines([Arc::from(json_line(&r).unwrap())]);
            assert_eq!(
                log.get(log.len() - 1).unwrap().event().as_ref(),
                Some(event)
            );
        }
        assert_eq!(log.len(), 6);
        let kinds = &["text_delta", "message_produced"];
        for (i, event) in events.iter().enumerate() {
            let (own, other) = (log.get(2 * i).unwrap(), log.get(2 * i + 1).unwrap());
            assert_eq!(own.line(), other.line(), "the same line either way");
            let wanted = kinds.contains(&EventRecord::type_in_line(&own.line()).unwrap());
            assert_eq!(own.event_of(kinds).as_ref(), Some(event));
            assert_eq!(other.event_of(kinds), wanted.then(|| event.clone()));
        }
        assert!(log.get(6).is_none());
        assert_eq!(log.from(5).len(), 1);
        assert!(log.from(9).is_empty());
    }
}
