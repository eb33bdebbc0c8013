//! [`EventRecord`]: an [`Event`] as sinks receive it — stamped with the
//! run it belongs to, its number in that run's sequence and the time it
//! happened.

use std::ops::Deref;
use std::sync::Arc;
use std::time::SystemTime;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::Event;

/// An [`Event`] stamped by the context that emitted it: the run's id, a
/// sequence number and the wall-clock time.
///
/// Every event of one run tree (a run and the workflows nested in it) gets
/// the next number of one counter, so `seq` orders a run's events even
/// when they were emitted on different threads; it may reach a sink a
/// little out of order when two actors emit at once. In JSON (`--events
/// jsonl`) the stamp's fields come first, then the event's own (its
/// `type` names the kind):
///
/// ```json
/// {"run_id":"team-3f2a","seq":7,"time":"2026-11-24T08:01:07.123456Z","type":"agent_started","path":"team/writer","batch":1}
/// ```
///
/// A record dereferences to its event, so `record.path()` and
/// `matches!(*record, Event::RunFinished { .. })` work as on the event.
///
/// ```
/// use troupe_runtime::{Event, event::EventRecord};
///
/// let record = EventRecord::new("r1", 3, Event::Warning { path: "team".into(), text: "late".into() });
/// assert_eq!(record.path(), "team");
/// let json = serde_json::to_value(&record).unwrap();
/// assert_eq!(json["run_id"], "r1");
/// assert_eq!(json["seq"], 3);
/// assert_eq!(json["type"], "warning");
/// let back: EventRecord = serde_json::from_value(json).unwrap();
/// assert_eq!(back.event, record.event);
/// ```
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EventRecord {
    /// The id of the run (the top-level run, for events of nested
    /// workflows; "" for an agent used outside any run).
    pub run_id: Arc<str>,
    /// The event's number in its run, from 0.
    pub seq: u64,
    /// When it happened (RFC 3339, microseconds, UTC, in JSON).
    #[serde(serialize_with = "to_rfc3339", deserialize_with = "from_rfc3339")]
    #[cfg_attr(feature = "schema", schemars(with = "String", extend("format" = "date-time")))]
    pub time: SystemTime,
    /// What happened.
    #[serde(flatten)]
    pub event: Event,
}

impl EventRecord {
    /// A record of `event`, stamped now.
    pub fn new(run_id: impl Into<Arc<str>>, seq: u64, event: Event) -> Self {
        EventRecord {
            run_id: run_id.into(),
            seq,
            time: SystemTime::now(),
            event,
        }
    }

    /// The event, taken out of its record.
    pub fn into_event(self) -> Event {
        self.event
    }

    /// The `type` of the event in `line`, one record in JSON as
    /// [`JsonLines`](crate::sink::JsonLines) and `serde_json` write it
    /// (the stamp's fields first, then `type`), read without decoding the
    /// line; `None` if it is not laid out so. A reader of an event log
    /// that takes only some kinds skips the others this way: decoding a
    /// line costs far more than finding its type.
    ///
    /// ```
    /// use troupe_runtime::{Event, event::EventRecord};
    ///
    /// let record = EventRecord::new("r\"type\":\"x", 3, Event::Warning { path: "team".into(), text: "late".into() });
    /// let line = serde_json::to_string(&record).unwrap();
    /// assert_eq!(EventRecord::type_in_line(&line), Some("warning"));
    /// assert_eq!(EventRecord::type_in_line("{\"type\": \"warning\"}"), None);
    /// ```
    pub fn type_in_line(line: &str) -> Option<&str> {
        // Quotes inside a JSON string are escaped, so the first unescaped
        // `"type":"` is a key; the stamp (a string, a number, a string)
        // holds no object, so it is the record's own.
        let (_, rest) = line.split_once("\"type\":\"")?;
        let (kind, _) = rest.split_once('"')?;
        // Every kind is a snake_case word: anything else was not a type.
        kind.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_')
            .then_some(kind)
    }
}

impl Deref for EventRecord {
    type Target = Event;

    fn deref(&self) -> &Event {
        &self.event
    }
}

/// The event's console line (the stamp is left out).
impl std::fmt::Display for EventRecord {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.event.fmt(f)
    }
}

/// An event outside any run: run id "", number 0, stamped now.
impl From<Event> for EventRecord {
    fn from(event: Event) -> Self {
        EventRecord::new("", 0, event)
    }
}

fn to_rfc3339<S: Serializer>(time: &SystemTime, s: S) -> Result<S::Ok, S::Error> {
    s.collect_str(&humantime::format_rfc3339_micros(*time))
}

fn from_rfc3339<'de, D: Deserializer<'de>>(d: D) -> Result<SystemTime, D::Error> {
    let text = String::deserialize(d)?;
    humantime::parse_rfc3339_weak(&text).map_err(serde::de::Error::custom)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_reads_back_from_its_json_line() {
        let record = EventRecord::new(
            "r",
            12,
            Event::Warning {
                path: "a/b".into(),
                text: "x".into(),
            },
        );
        let line = serde_json::to_string(&record).unwrap();
        assert!(
            line.starts_with("{\"run_id\":\"r\",\"seq\":12,\"time\":\""),
            "{line}"
        );
        assert!(line.contains("Z\",\"type\":\"warning\""), "{line}");
        let back: EventRecord = serde_json::from_str(&line).unwrap();
        // Microseconds survive the trip; nanoseconds do not.
        let micros = |t: SystemTime| {
            t.duration_since(SystemTime::UNIX_EPOCH)
                .unwrap()
                .as_micros()
        };
        assert_eq!(micros(back.time), micros(record.time));
        assert_eq!(back.event, record.event);
    }

    #[test]
    fn a_lines_type_is_found_without_decoding_it_whatever_its_strings_hold() {
        let tricky = "a \"type\":\"run_started\" \\\"type\\\":\\\"x";
        let events = [
            Event::Warning {
                path: tricky.into(),
                text: tricky.into(),
            },
            Event::TextDelta {
                path: "t/a".into(),
                text: "{\"type\":\"agent_started\"}".into(),
            },
        ];
        for event in events {
            let line = serde_json::to_string(&EventRecord::new(tricky, 1, event)).unwrap();
            let decoded: serde_json::Value = serde_json::from_str(&line).unwrap();
            assert_eq!(
                EventRecord::type_in_line(&line),
                decoded["type"].as_str(),
                "{line}"
            );
        }
        assert_eq!(EventRecord::type_in_line("not json"), None);
        assert_eq!(EventRecord::type_in_line("{\"type\":\"a b\"}"), None);
    }
}
