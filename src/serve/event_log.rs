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
//!
//! A run that has ended keeps its records in one block
//! ([`EventLog::settle`]): the registry holds finished runs for as long
//! as it keeps them, and a record each in its own shared allocation, with
//! a list pointing at them, took half as much again.

use std::sync::Arc;

use troupe::Event;
use troupe::event::EventRecord;
use troupe::sink::json_line;

/// One entry of a run's event log.
#[derive(Clone)]
pub(crate) enum Logged {
    /// An event of this worker's run, as emitted.
    Record(Arc<EventRecord>),
    /// An event of this worker's run once it ended: its place in the
    /// run's settled block.
    Settled(Arc<[EventRecord]>, usize),
    /// An event as a JSON line (from another worker).
    Line(Arc<str>),
}

impl Logged {
    /// The record, if it is one of this worker's (else a line).
    fn record(&self) -> Option<&EventRecord> {
        match self {
            Logged::Record(record) => Some(record),
            Logged::Settled(block, i) => block.get(*i),
            Logged::Line(_) => None,
        }
    }

    /// The entry as one JSON line, as `troupe run --events jsonl` writes
    /// it (registered secrets masked). An event that cannot be written
    /// (none can fail: every map in one has string keys) is a warning
    /// saying why, in its place.
    pub(crate) fn line(&self) -> Arc<str> {
        let record = match (self.record(), self) {
            (Some(record), _) => record,
            (None, Logged::Line(line)) => return line.clone(),
            // Past its block's end: never made so (`EventLog` hands out
            // places inside it).
            (None, _) => return Arc::from(""),
        };
        match json_line(record) {
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
        }
    }

    /// The event (a line decoded; `None` if it does not decode).
    pub(crate) fn event(&self) -> Option<Event> {
        match (self.record(), self) {
            (Some(record), _) => Some(record.event.clone()),
            (None, Logged::Line(line)) => serde_json::from_str::<EventRecord>(line)
                .ok()
                .map(EventRecord::into_event),
            (None, _) => None,
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
            Logged::Settled(..) => std::mem::size_of::<EventRecord>() + 32,
            Logged::Line(line) => line.len() + 16,
        }
    }
}

/// Every event of a run so far, in order.
#[derive(Default)]
pub(crate) struct EventLog {
    /// The events up to where the run last ended, in one block.
    settled: Option<Arc<[EventRecord]>>,
    /// The events after them.
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

    /// Keeps the events so far in one block (a run that has ended: its log
    /// is kept as long as the registry keeps the run). A log holding lines
    /// from elsewhere only gives back the room left for more.
    pub(crate) fn settle(&mut self) {
        if self.entries.is_empty() {
            return;
        }
        if self.entries.iter().any(|e| matches!(e, Logged::Line(_))) {
            self.entries.shrink_to_fit();
            return;
        }
        let before = self.settled.take();
        let mut block =
            Vec::with_capacity(before.as_ref().map_or(0, |b| b.len()) + self.entries.len());
        if let Some(before) = before {
            // A run that ended before (and was answered since): rare.
            block.extend(before.iter().cloned());
        }
        for entry in std::mem::take(&mut self.entries) {
            match entry {
                // A reader holding the record (a stream under way) keeps
                // its own; the block takes a copy.
                Logged::Record(record) => {
                    block.push(Arc::try_unwrap(record).unwrap_or_else(|r| (*r).clone()))
                }
                // Neither is ever among the entries here.
                Logged::Settled(..) | Logged::Line(_) => {}
            }
        }
        self.settled = Some(block.into());
    }

    /// How many events it holds.
    pub(crate) fn len(&self) -> usize {
        self.settled_len() + self.entries.len()
    }

    fn settled_len(&self) -> usize {
        self.settled.as_ref().map_or(0, |b| b.len())
    }

    /// The `i`th event, if there is one yet.
    pub(crate) fn get(&self, i: usize) -> Option<Logged> {
        match &self.settled {
            Some(block) if i < block.len() => Some(Logged::Settled(block.clone(), i)),
            _ => self.entries.get(i - self.settled_len()).cloned(),
        }
    }

    /// The events from the `from`th on (none past the end), to read
    /// outside the run's lock.
    pub(crate) fn from(&self, from: usize) -> Vec<Logged> {
        let settled = self.settled_len();
        let mut out = Vec::with_capacity(self.len().saturating_sub(from));
        if let Some(block) = &self.settled {
            out.extend((from..settled).map(|i| Logged::Settled(block.clone(), i)));
        }
        out.extend_from_slice(
            self.entries
                .get(from.saturating_sub(settled)..)
                .unwrap_or_default(),
        );
        out
    }

    /// Roughly how many bytes it holds.
    pub(crate) fn weight(&self) -> usize {
        self.settled_len() * (std::mem::size_of::<EventRecord>() + 32)
            + self.entries.iter().map(Logged::weight).sum::<usize>()
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

    fn lines(log: &EventLog, from: usize) -> Vec<Arc<str>> {
        log.from(from).iter().map(Logged::line).collect()
    }

    #[test]
    fn a_settled_log_reads_as_it_did_and_takes_more_events_after() {
        let delta = |i: usize| {
            EventRecord::new(
                "run-1",
                i as u64,
                Event::TextDelta {
                    path: "trio/c".into(),
                    text: format!("piece {i}"),
                },
            )
        };
        let mut log = EventLog::default();
        (0..3).for_each(|i| log.push(delta(i)));
        // A stream under way holds the second record while the run ends.
        let held = log.get(1).unwrap();
        let before = lines(&log, 0);
        log.settle();
        assert_eq!(lines(&log, 0), before);
        assert_eq!(held.line(), before[1]);
        assert_eq!(log.len(), 3);
        assert!(matches!(log.get(2), Some(Logged::Settled(_, 2))));
        assert!(log.get(3).is_none());
        // Resumed (an answer to a question): more events, settled again.
        (3..5).for_each(|i| log.push(delta(i)));
        assert_eq!(log.len(), 5);
        assert_eq!(lines(&log, 2).len(), 3);
        let all = lines(&log, 0);
        log.settle();
        assert_eq!(lines(&log, 0), all);
        assert_eq!(lines(&log, 4), all[4..]);
        assert!(lines(&log, 7).is_empty());
        for (i, line) in all.iter().enumerate() {
            assert!(line.contains(&format!("piece {i}")), "{line}");
        }
        // Another worker's lines are kept as lines.
        log.extend_lines([all[0].clone()]);
        log.settle();
        assert_eq!(log.len(), 6);
        assert!(matches!(log.get(5), Some(Logged::Line(_))));
        assert_eq!(log.get(5).unwrap().line(), all[0]);
    }
}
