//! Entry points for the fuzz targets in `fuzz/` (the `fuzzing` feature; not
//! a public API): any bytes a server sends, read by each provider's wire
//! format — as a whole answer and as a stream of server-sent events cut
//! into chunks anywhere — give an answer or an error, never a panic.

use crate::model::http::wire::{EventReader, Wire};
use crate::model::sse::SseDecoder;
use crate::model::{
    AnthropicMessages, ChatMessage, ChatRequest, OpenAiChat, OpenAiResponses, StreamAccumulator,
};

/// Reads `data` as an OpenAI chat-completions answer and stream.
pub fn openai_chat(data: &[u8]) {
    read(&OpenAiChat, data);
}

/// Reads `data` as an OpenAI Responses answer and stream.
pub fn openai_responses(data: &[u8]) {
    read(&OpenAiResponses, data);
}

/// Reads `data` as an Anthropic Messages answer and stream, with and
/// without a structured-output tool asked for.
pub fn anthropic(data: &[u8]) {
    read(&AnthropicMessages::default(), data);
}

/// Decodes `data` as server-sent events, cut into chunks of every size
/// the first byte names.
pub fn sse(data: &[u8]) {
    let (step, body) = split(data);
    let mut decoder = SseDecoder::new();
    for chunk in body.chunks(step) {
        for event in decoder.feed(chunk) {
            let _ = (event.event.as_deref().map(str::len), event.data.len());
        }
    }
    let _ = decoder.finish();
}

/// The chunk size (1 to 256) the first byte names, and the rest.
fn split(data: &[u8]) -> (usize, &[u8]) {
    match data.split_first() {
        Some((first, rest)) => (usize::from(*first) + 1, rest),
        None => (1, data),
    }
}

/// A request asking for a structured answer (so readers that treat one
/// apart are driven that way too).
fn request() -> ChatRequest {
    ChatRequest::new(vec![ChatMessage::user("fuzz")]).with_response_format(
        crate::model::ResponseFormat::JsonSchema {
            name: "out".into(),
            schema: serde_json::json!({"type": "object"}),
            strict: false,
        },
    )
}

/// Reads `data` with wire format `wire`: as a whole body, then as a
/// stream, the deltas gathered into an answer as the client does.
fn read<W: Wire>(wire: &W, data: &[u8]) {
    let (step, body) = split(data);
    let text = String::from_utf8_lossy(body);
    for request in [ChatRequest::new(Vec::new()), request()] {
        let _ = wire.parse_response(&request, &text);
        let mut reader = wire.stream_reader(&request);
        let mut decoder = SseDecoder::new();
        let mut answer = StreamAccumulator::new();
        let mut events = Vec::new();
        for chunk in body.chunks(step) {
            events.extend(decoder.feed(chunk));
        }
        events.extend(decoder.finish());
        for event in &events {
            match reader.event(event) {
                Ok(step) => {
                    for delta in step.deltas {
                        answer.push(delta);
                    }
                    if step.done {
                        break;
                    }
                }
                Err(_) => break,
            }
        }
        let _ = answer.finish();
    }
}
