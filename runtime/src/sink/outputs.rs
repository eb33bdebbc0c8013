//! The [`EventOutput`]s troupe ships: JSON lines, readable console lines,
//! and a function run on the writer thread.

use std::io::Write;

use super::EventOutput;
use crate::event::{Event, EventRecord};
use crate::secrets;

/// Writes each event as one line of JSON (the record's stamp, then the
/// event, whose `type` field names the kind) into any writer: a file,
/// stdout, a pipe. The format is stable: `schema/events.schema.json`
/// describes a line. Registered secrets are masked
/// ([`secrets`](crate::secrets)).
///
/// ```
/// use troupe_runtime::{Event, sink::EventOutput, event::EventRecord, sink::JsonLines};
///
/// let mut out = JsonLines::new(Vec::new());
/// out.write(&EventRecord::new("r1", 0, Event::Warning { path: "team".into(), text: "late".into() }))?;
/// let line = String::from_utf8(out.into_inner()).unwrap();
/// assert!(line.starts_with("{\"run_id\":\"r1\",\"seq\":0,\"time\":"));
/// assert!(line.ends_with("\"type\":\"warning\",\"path\":\"team\",\"text\":\"late\"}\n"));
/// # Ok::<(), std::io::Error>(())
/// ```
#[derive(Debug)]
pub struct JsonLines<W> {
    writer: W,
}

impl<W: Write + Send + 'static> JsonLines<W> {
    /// Writes into `writer`.
    pub fn new(writer: W) -> Self {
        JsonLines { writer }
    }

    /// The writer back.
    pub fn into_inner(self) -> W {
        self.writer
    }
}

impl<W: Write + Send + 'static> EventOutput for JsonLines<W> {
    fn write(&mut self, event: &EventRecord) -> std::io::Result<()> {
        if !secrets::any() {
            serde_json::to_writer(&mut self.writer, event)?;
            return self.writer.write_all(b"\n");
        }
        self.writer.write_all(json_line(event)?.as_bytes())?;
        self.writer.write_all(b"\n")
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.writer.flush()
    }
}

/// One event as [`JsonLines`] writes it, without the newline, as a
/// `String` (serde_json writes valid UTF-8: nothing to check or copy, as
/// there would be from a writer's bytes). Registered secrets are masked
/// inside string literals only, so the line stays valid JSON.
///
/// ```
/// use troupe_runtime::{Event, event::EventRecord, sink::json_line};
///
/// let line = json_line(&EventRecord::new("r1", 0, Event::Warning { path: "team".into(), text: "late".into() }))?;
/// assert!(line.starts_with("{\"run_id\":\"r1\",\"seq\":0,\"time\":"));
/// assert!(line.ends_with("\"text\":\"late\"}"));
/// # Ok::<(), serde_json::Error>(())
/// ```
pub fn json_line(event: &EventRecord) -> serde_json::Result<String> {
    let line = serde_json::to_string(event)?;
    if !secrets::any() {
        return Ok(line);
    }
    Ok(match secrets::redact_json_text(&line) {
        std::borrow::Cow::Borrowed(_) => line,
        std::borrow::Cow::Owned(masked) => masked,
    })
}

/// Prints each event on stdout as one readable line (the event's
/// `Display` form), registered secrets masked; the pieces of streamed
/// answers are left out (the answer is printed whole with its message).
#[derive(Debug, Default, Clone, Copy)]
pub struct ConsoleLines;

impl EventOutput for ConsoleLines {
    fn write(&mut self, event: &EventRecord) -> std::io::Result<()> {
        // A line per token is no reading: the answer shows whole when
        // its message is produced.
        if matches!(
            event.event,
            Event::TextDelta { .. } | Event::ToolArgumentsDelta { .. }
        ) {
            return Ok(());
        }
        let line = event.to_string();
        writeln!(std::io::stdout().lock(), "{}", secrets::redact(&line))
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stdout().flush()
    }
}

/// A function run on the writer thread for each event.
pub(super) struct FnOutput<F>(pub(super) F);

impl<F: FnMut(&EventRecord) + Send + 'static> EventOutput for FnOutput<F> {
    fn write(&mut self, event: &EventRecord) -> std::io::Result<()> {
        (self.0)(event);
        Ok(())
    }
}
