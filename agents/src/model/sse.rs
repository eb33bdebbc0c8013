//! A small incremental decoder of server-sent events (the framing of
//! streamed chat completions).
//!
//! Bytes arrive in arbitrary pieces — an event, a line, even a UTF-8
//! character may be split between two network reads — so the decoder keeps
//! bytes until a whole line is there. Lines end with `\n` or `\r\n`; an empty
//! line ends an event; `data:` lines are joined with `\n`; comments (`:`)
//! and fields other than `event` and `data` are ignored.
//!
//! Why not `eventsource-stream`: it adapts a `Stream` of bytes, where the
//! callers here push chunks into a decoder they own (the HTTP clients'
//! readers with their idle timeouts, the A2A client, and the fuzz target,
//! which feeds bytes without a runtime); it ends the stream with an error
//! on the first chunk that is not UTF-8, where a bad byte here becomes
//! U+FFFD in one event; and at the end of the input it drops an event
//! whose closing blank line never came, which some servers leave out and
//! which [`SseDecoder::finish`] hands over (`unterminated_last_event_is_flushed`).
//! It would also bring `nom` for a parser of under 100 lines.

/// One decoded event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// The `event:` field, if any.
    pub event: Option<String>,
    /// The `data:` lines, joined with `\n`.
    pub data: String,
}

/// Decodes server-sent events from chunks of bytes.
///
/// ```
/// use troupe_agents::model::sse::SseDecoder;
///
/// let mut decoder = SseDecoder::new();
/// assert!(decoder.feed(b"data: {\"a\"").is_empty()); // not a whole event yet
/// let events = decoder.feed(b":1}\n\ndata: [DONE]\n\n");
/// assert_eq!(events[0].data, "{\"a\":1}");
/// assert_eq!(events[1].data, "[DONE]");
/// ```
#[derive(Debug, Default)]
pub struct SseDecoder {
    buffer: Vec<u8>,
    event: Option<String>,
    data: Option<String>,
}

impl SseDecoder {
    /// A decoder with nothing buffered.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes in a chunk; returns the events it completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        self.buffer.extend_from_slice(chunk);
        let mut events = Vec::new();
        let mut start = 0;
        while let Some(offset) = self.buffer[start..].iter().position(|&b| b == b'\n') {
            let end = start + offset;
            let mut line = &self.buffer[start..end];
            if line.last() == Some(&b'\r') {
                line = &line[..line.len() - 1];
            }
            // A whole line never splits a UTF-8 character ('\n' is never
            // part of one), so lossy decoding only touches invalid bytes.
            let line = String::from_utf8_lossy(line).into_owned();
            start = end + 1;
            if let Some(event) = self.take_line(&line) {
                events.push(event);
            }
        }
        self.buffer.drain(..start);
        events
    }

    /// Ends the input: returns the last event if the stream ended without
    /// the blank line that should close it.
    pub fn finish(&mut self) -> Option<SseEvent> {
        let rest = std::mem::take(&mut self.buffer);
        if !rest.is_empty() {
            let line = String::from_utf8_lossy(&rest)
                .trim_end_matches('\r')
                .to_string();
            if let Some(event) = self.take_line(&line) {
                return Some(event);
            }
        }
        self.dispatch()
    }

    fn take_line(&mut self, line: &str) -> Option<SseEvent> {
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "data" => match &mut self.data {
                Some(data) => {
                    data.push('\n');
                    data.push_str(value);
                }
                None => self.data = Some(value.to_string()),
            },
            "event" => self.event = Some(value.to_string()),
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = self.event.take();
        self.data.take().map(|data| SseEvent { event, data })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_split_at_every_byte_decode_the_same() {
        let wire =
            "event: x\r\ndata: h\u{e9}llo\r\ndata: world\r\n\r\n: comment\n\ndata: [DONE]\n\n";
        let mut whole = SseDecoder::new();
        let expected = whole.feed(wire.as_bytes());
        assert_eq!(expected.len(), 2);
        assert_eq!(expected[0].event.as_deref(), Some("x"));
        assert_eq!(expected[0].data, "h\u{e9}llo\nworld");

        let mut split = SseDecoder::new();
        let mut got = Vec::new();
        for b in wire.as_bytes() {
            got.extend(split.feed(std::slice::from_ref(b)));
        }
        assert_eq!(got, expected);
    }

    #[test]
    fn unterminated_last_event_is_flushed() {
        let mut d = SseDecoder::new();
        assert!(d.feed(b"data: last").is_empty());
        assert_eq!(d.finish().map(|e| e.data), Some("last".to_string()));
        assert_eq!(d.finish(), None);
    }
}
