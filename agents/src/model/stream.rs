//! Folding streamed deltas back into a [`ChatResponse`], and the reverse.

use futures::StreamExt;
use troupe_runtime::{message::ToolCall, message::Usage};

use super::{ChatDelta, ChatResponse, ChatStream, FinishReason, ToolCallDelta};
use crate::error::ModelError;

/// A tool call under assembly.
#[derive(Debug, Clone, Default)]
struct PartialCall {
    index: usize,
    id: String,
    name: String,
    arguments: String,
}

/// Assembles streamed deltas into one [`ChatResponse`].
///
/// Text chunks are concatenated. Tool-call pieces are grouped by their
/// `index`; a piece without one belongs to a new call when it brings an id
/// not seen on the latest call, and to the latest call otherwise (servers
/// that omit indexes send calls one after another). Argument pieces are
/// concatenated; a name is taken once (servers that repeat it in every
/// piece do not get it doubled).
///
/// ```
/// use troupe_agents::model::{ChatDelta, StreamAccumulator, ToolCallDelta};
///
/// let mut acc = StreamAccumulator::new();
/// acc.push(ChatDelta::ToolCall(ToolCallDelta {
///     index: Some(0), id: Some("call_1".into()), name: Some("add".into()), arguments: "{\"a\":".into(),
/// }));
/// acc.push(ChatDelta::ToolCall(ToolCallDelta {
///     index: Some(0), id: None, name: None, arguments: "1}".into(),
/// }));
/// let response = acc.finish();
/// assert_eq!(response.tool_calls[0].arguments, "{\"a\":1}");
/// ```
#[derive(Debug, Default)]
pub struct StreamAccumulator {
    text: String,
    saw_text: bool,
    calls: Vec<PartialCall>,
    finish: Option<FinishReason>,
    usage: Option<Usage>,
    /// The model that answered, as the server said.
    model: Option<String>,
    /// The index of the call the latest tool-call piece went to.
    last_call: Option<usize>,
}

impl StreamAccumulator {
    /// An empty accumulator.
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes in one delta.
    pub fn push(&mut self, delta: ChatDelta) {
        match delta {
            ChatDelta::Text(t) => {
                self.saw_text = true;
                self.text.push_str(&t);
            }
            ChatDelta::ToolCall(d) => self.push_call(d),
            // Some servers send a finish reason per choice and then an empty
            // one: a real reason is not overwritten by "unspecified".
            ChatDelta::Finish(FinishReason::Unspecified) if self.finish.is_some() => {}
            ChatDelta::Finish(r) => self.finish = Some(r),
            ChatDelta::Usage(u) => self.usage = Some(u),
            ChatDelta::Model(m) => self.model = Some(m),
        }
    }

    fn push_call(&mut self, d: ToolCallDelta) {
        let slot = match d.index {
            Some(index) => match self.calls.iter().position(|c| c.index == index) {
                Some(i) => i,
                None => self.new_call(index),
            },
            None => {
                let starts_new = match (self.calls.last(), &d.id) {
                    (None, _) => true,
                    (Some(last), Some(id)) => {
                        !id.is_empty() && !last.id.is_empty() && last.id != *id
                    }
                    (Some(_), None) => false,
                };
                if starts_new {
                    let index = self.calls.iter().map(|c| c.index + 1).max().unwrap_or(0);
                    self.new_call(index)
                } else {
                    self.calls.len() - 1
                }
            }
        };
        let call = &mut self.calls[slot];
        self.last_call = Some(call.index);
        if let Some(id) = d.id.filter(|id| !id.is_empty())
            && call.id.is_empty()
        {
            call.id = id;
        }
        if let Some(name) = d.name.filter(|n| !n.is_empty())
            && call.name != name
        {
            call.name.push_str(&name);
        }
        call.arguments.push_str(&d.arguments);
    }

    /// The index of the call the latest tool-call piece was put in (its
    /// own `index`, or the one it was given when it had none).
    pub fn last_call_index(&self) -> Option<usize> {
        self.last_call
    }

    /// Whether the server reported token usage so far.
    pub fn has_usage(&self) -> bool {
        self.usage.is_some()
    }

    fn new_call(&mut self, index: usize) -> usize {
        self.calls.push(PartialCall {
            index,
            ..Default::default()
        });
        self.calls.len() - 1
    }

    /// The assembled response. Calls are ordered by index; a call that never
    /// got an id gets `call_<index>`, and empty arguments become `{}`.
    pub fn finish(mut self) -> ChatResponse {
        self.calls.sort_by_key(|c| c.index);
        let tool_calls: Vec<ToolCall> = self
            .calls
            .into_iter()
            .map(|c| ToolCall {
                id: if c.id.is_empty() {
                    format!("call_{}", c.index)
                } else {
                    c.id
                },
                name: c.name,
                arguments: if c.arguments.trim().is_empty() {
                    "{}".to_string()
                } else {
                    c.arguments
                },
            })
            .collect();
        ChatResponse {
            content: self.saw_text.then_some(self.text),
            tool_calls,
            finish_reason: self.finish.unwrap_or(FinishReason::Unspecified),
            usage: self.usage,
            model: self.model,
        }
    }
}

/// Reads a whole stream into one response.
pub async fn collect_stream(mut stream: ChatStream) -> Result<ChatResponse, ModelError> {
    let mut acc = StreamAccumulator::new();
    while let Some(delta) = stream.next().await {
        acc.push(delta?);
    }
    Ok(acc.finish())
}

/// The deltas a stream of `response` would carry (used to stream models
/// that only answer whole).
pub fn response_deltas(response: &ChatResponse) -> Vec<ChatDelta> {
    let mut deltas = Vec::new();
    if let Some(text) = &response.content {
        deltas.push(ChatDelta::Text(text.clone()));
    }
    for (index, call) in response.tool_calls.iter().enumerate() {
        deltas.push(ChatDelta::ToolCall(ToolCallDelta {
            index: Some(index),
            id: Some(call.id.clone()),
            name: Some(call.name.clone()),
            arguments: call.arguments.clone(),
        }));
    }
    if let Some(usage) = response.usage {
        deltas.push(ChatDelta::Usage(usage));
    }
    if let Some(model) = &response.model {
        deltas.push(ChatDelta::Model(model.clone()));
    }
    deltas.push(ChatDelta::Finish(response.finish_reason.clone()));
    deltas
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(index: Option<usize>, id: Option<&str>, name: Option<&str>, args: &str) -> ChatDelta {
        ChatDelta::ToolCall(ToolCallDelta {
            index,
            id: id.map(Into::into),
            name: name.map(Into::into),
            arguments: args.into(),
        })
    }

    #[test]
    fn interleaved_calls_are_assembled_by_index() {
        let mut acc = StreamAccumulator::new();
        acc.push(piece(Some(1), Some("b"), Some("second"), ""));
        acc.push(piece(Some(0), Some("a"), Some("first"), "{\"x\""));
        acc.push(piece(Some(1), None, None, "{}"));
        acc.push(piece(Some(0), None, None, ":1}"));
        acc.push(ChatDelta::Finish(FinishReason::ToolCalls));
        acc.push(ChatDelta::Finish(FinishReason::Unspecified));
        let r = acc.finish();
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].name, "first");
        assert_eq!(r.tool_calls[0].arguments, "{\"x\":1}");
        assert_eq!(r.tool_calls[1].id, "b");
        assert_eq!(r.finish_reason, FinishReason::ToolCalls);
        assert_eq!(r.content, None);
    }

    #[test]
    fn calls_without_index_split_on_new_ids_and_names_are_not_doubled() {
        let mut acc = StreamAccumulator::new();
        acc.push(piece(None, Some("a"), Some("f"), "{"));
        acc.push(piece(None, None, Some("f"), "}"));
        acc.push(piece(None, Some("b"), Some("g"), ""));
        let r = acc.finish();
        assert_eq!(r.tool_calls.len(), 2);
        assert_eq!(r.tool_calls[0].name, "f");
        assert_eq!(r.tool_calls[0].arguments, "{}");
        assert_eq!(r.tool_calls[1].name, "g");
        assert_eq!(
            r.tool_calls[1].arguments, "{}",
            "empty arguments become an empty object"
        );
    }

    #[test]
    fn round_trip_through_deltas() {
        let mut response = ChatResponse::text("hello");
        response.usage = Some(Usage {
            prompt_tokens: 3,
            completion_tokens: 1,
        });
        let mut acc = StreamAccumulator::new();
        for d in response_deltas(&response) {
            acc.push(d);
        }
        assert_eq!(acc.finish(), response);
    }

    #[test]
    fn the_answering_model_survives_a_stream() {
        let mut response = ChatResponse::text("hi");
        response.model = Some("gpt-x-2026".into());
        let deltas = response_deltas(&response);
        assert!(deltas.contains(&ChatDelta::Model("gpt-x-2026".into())));
        let mut acc = StreamAccumulator::new();
        for d in deltas {
            acc.push(d);
        }
        assert_eq!(acc.finish().model.as_deref(), Some("gpt-x-2026"));
        let chunk = r#"{"model":"gpt-x-2026","choices":[{"delta":{"content":"a"}}]}"#;
        let deltas = crate::model::openai_wire::parse_chunk(chunk).unwrap();
        assert_eq!(deltas.last(), Some(&ChatDelta::Model("gpt-x-2026".into())));
    }
}
