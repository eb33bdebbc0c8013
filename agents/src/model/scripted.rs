//! [`ScriptedModel`]: a deterministic model for examples and tests, offline.

use std::fmt;
use std::sync::Mutex;
use std::time::Duration;

use async_trait::async_trait;
use troupe_runtime::{message::ToolCall, message::Usage};

use super::scripted_reply::{json_text, replay};
use super::{ChatMessage, ChatModel, ChatRequest, ChatResponse, FinishReason, ScriptedReply};
use crate::error::ModelError;
use crate::tool::handoff_tool_name;

/// What a [`ScriptedModel`] with a list of replies does once every reply
/// has been used.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use troupe_agents::model::{ChatMessage, ChatModel, ChatRequest, ScriptedModel, ScriptedReply, WhenExhausted};
///
/// let model = ScriptedModel::new([ScriptedReply::text("a"), ScriptedReply::text("b")])
///     .when_exhausted(WhenExhausted::Cycle);
/// let ask = ChatRequest::new(vec![ChatMessage::user("next?")]);
/// let mut said = Vec::new();
/// for _ in 0..3 {
///     said.push(model.complete(&ask).await.unwrap().text_content().to_string());
/// }
/// assert_eq!(said, ["a", "b", "a"]);
/// # }
/// ```
// Deserialize and JsonSchema: a config file names it (`when_exhausted:`);
// this crate depends on serde and schemars anyway.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum WhenExhausted {
    /// Fail the call (the default: a script that is too short is a bug).
    #[default]
    Fail,
    /// Repeat the last reply.
    RepeatLast,
    /// Start the list again.
    Cycle,
}

/// How a [`ScriptedModel`] with a list of replies picks the reply to a
/// request.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use troupe_agents::model::{ChatMessage, ChatModel, ChatRequest, ScriptPosition, ScriptedModel, ScriptedReply};
///
/// let model = ScriptedModel::new([ScriptedReply::text("first"), ScriptedReply::text("second")])
///     .position(ScriptPosition::Conversation);
/// let fresh = ChatRequest::new(vec![ChatMessage::user("hi")]);
/// let later = ChatRequest::new(vec![
///     ChatMessage::user("hi"),
///     ChatMessage::assistant("first"),
///     ChatMessage::user("and?"),
/// ]);
/// // The same conversation gets the same reply, however often it is asked.
/// assert_eq!(model.complete(&fresh).await.unwrap().text_content(), "first");
/// assert_eq!(model.complete(&later).await.unwrap().text_content(), "second");
/// assert_eq!(model.complete(&fresh).await.unwrap().text_content(), "first");
/// # }
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ScriptPosition {
    /// Reply N to the model's Nth call in this process (the default): a
    /// script for one run, in order.
    #[default]
    Counter,
    /// Reply N to a request holding N assistant messages (the agent's own
    /// earlier answers and tool-call rounds in the conversation it is
    /// shown): the reply depends on the conversation alone, so a run
    /// resumed in another process, or several agents sharing the model,
    /// get the replies an uninterrupted run would. A conversation trimmed
    /// by a context policy counts what is left of it.
    Conversation,
}

type ReplyFn = dyn Fn(&ChatRequest) -> Result<ScriptedReply, ModelError> + Send + Sync;

enum Source {
    /// Replies in order; `next` is the index of the next one.
    List {
        replies: Vec<ScriptedReply>,
        next: usize,
    },
    Function(Box<ReplyFn>),
}

struct State {
    source: Source,
    /// Calls answered so far (recorded or not).
    calls: usize,
    /// The requests received, while [`ScriptedModel::record_requests`] is on.
    requests: Vec<ChatRequest>,
    /// By the conversation: the positions of error replies already given,
    /// in order. A failed call adds no answer to the conversation, so the
    /// retry would be shown the same error for ever; each is given once,
    /// and the script then goes on as if it were not there.
    failed: Vec<usize>,
}

/// A model that answers from a script: a list of replies used in order, or
/// a function of the request. It records every request, so tests can check
/// what the model was shown.
///
/// Tool-call ids are `call_<n>_<i>` (call number, position); usage is
/// estimated at four characters a token, so token budgets can be tested.
/// A list that runs out fails the call with
/// [`ModelError::ScriptExhausted`], unless [`ScriptedModel::when_exhausted`]
/// says to repeat the last reply or to start again; [`ScriptedModel::delay`]
/// makes every answer take a while.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use troupe_agents::model::{ChatMessage, ChatModel, ChatRequest, ScriptedModel, ScriptedReply};
///
/// let model = ScriptedModel::new([
///     ScriptedReply::tool_call("add", serde_json::json!({"a": 1, "b": 2})),
///     ScriptedReply::text("3"),
/// ]);
/// let ask = ChatRequest::new(vec![ChatMessage::user("1+2?")]);
/// assert_eq!(model.complete(&ask).await.unwrap().tool_calls[0].name, "add");
/// assert_eq!(model.complete(&ask).await.unwrap().text_content(), "3");
/// assert!(model.complete(&ask).await.is_err()); // exhausted
/// assert_eq!(model.requests().len(), 3);
/// # }
/// ```
pub struct ScriptedModel {
    name: String,
    position: ScriptPosition,
    when_exhausted: WhenExhausted,
    delay: Option<Duration>,
    record: bool,
    /// The context window it claims (see [`ChatModel::context_window`]).
    window: Option<usize>,
    state: Mutex<State>,
}

impl fmt::Debug for ScriptedModel {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScriptedModel")
            .field("name", &self.name)
            .field("position", &self.position)
            .field("when_exhausted", &self.when_exhausted)
            .field("delay", &self.delay)
            .field("remaining", &self.remaining())
            .finish()
    }
}

impl ScriptedModel {
    /// A model answering with `replies`, in order.
    pub fn new(replies: impl IntoIterator<Item = ScriptedReply>) -> Self {
        Self::with_source(Source::List {
            replies: replies.into_iter().collect(),
            next: 0,
        })
    }

    /// A model answering with whatever `reply` makes of each request.
    pub fn from_fn(
        reply: impl Fn(&ChatRequest) -> Result<ScriptedReply, ModelError> + Send + Sync + 'static,
    ) -> Self {
        Self::with_source(Source::Function(Box::new(reply)))
    }

    fn with_source(source: Source) -> Self {
        ScriptedModel {
            name: "scripted".to_string(),
            position: ScriptPosition::Counter,
            when_exhausted: WhenExhausted::Fail,
            delay: None,
            record: true,
            window: None,
            state: Mutex::new(State {
                source,
                calls: 0,
                requests: Vec::new(),
                failed: Vec::new(),
            }),
        }
    }

    /// Renames the model (the name shows in errors and events).
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// How a list script picks the reply to a request (default
    /// [`ScriptPosition::Counter`]); see [`ScriptPosition`].
    pub fn position(mut self, position: ScriptPosition) -> Self {
        self.position = position;
        self
    }

    /// Picks replies by the conversation, not by a counter: the same as
    /// `.position(ScriptPosition::Conversation)`.
    pub fn by_conversation(self) -> Self {
        self.position(ScriptPosition::Conversation)
    }

    /// What a list script does once every reply has been used: fail (the
    /// default), repeat the last reply, or start again. A function script
    /// never runs out.
    pub fn when_exhausted(mut self, when: WhenExhausted) -> Self {
        self.when_exhausted = when;
        self
    }

    /// Makes every answer take `delay` (to watch a spinner, or to
    /// interrupt a run mid-turn); the reply is chosen after the wait, so a
    /// call abandoned during it uses none.
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// Claims a context window of `tokens` (none by default), as a real
    /// model's client would: a `ChatAgent` with the default context shows
    /// it no more of the thread than fits.
    pub fn with_context_window(mut self, tokens: usize) -> Self {
        self.window = Some(tokens);
        self
    }

    /// Whether to keep every request for [`ScriptedModel::requests`] (on by
    /// default, for tests). Turn it off for a model that answers a long
    /// run (an offline config, a soak test): its memory then stays flat.
    pub fn record_requests(mut self, record: bool) -> Self {
        self.record = record;
        self
    }

    /// Every request received so far, oldest first (none while
    /// [`ScriptedModel::record_requests`] is off).
    pub fn requests(&self) -> Vec<ChatRequest> {
        self.lock().requests.clone()
    }

    /// Replies of a list script not used yet (`None` for a function
    /// script).
    pub fn remaining(&self) -> Option<usize> {
        match &self.lock().source {
            Source::List { replies, next } => Some(replies.len().saturating_sub(*next)),
            Source::Function(_) => None,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // The state stays consistent even if a scripted function panicked.
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The reply to `request`, and the number its tool calls' ids carry:
    /// the call's number, or by the conversation the position's.
    fn next_reply(&self, request: &ChatRequest) -> Result<(usize, ScriptedReply), ModelError> {
        let mut guard = self.lock();
        let state = &mut *guard;
        state.calls += 1;
        let mut call = state.calls;
        if self.record {
            state.requests.push(request.clone());
        }
        let failed = &mut state.failed;
        let reply = match &mut state.source {
            Source::List { replies, next } => {
                let index = match self.position {
                    ScriptPosition::Counter => {
                        *next += 1;
                        *next - 1
                    }
                    ScriptPosition::Conversation => {
                        let mut index = request
                            .messages
                            .iter()
                            .filter(|m| matches!(m, ChatMessage::Assistant { .. }))
                            .count();
                        for &f in failed.iter() {
                            if f <= index {
                                index += 1;
                            }
                        }
                        if matches!(replies.get(index), Some(ScriptedReply::Error(_))) {
                            failed.push(index);
                            failed.sort_unstable();
                        }
                        *next = (*next).max(index + 1);
                        call = index + 1;
                        index
                    }
                };
                let exhausted = || ModelError::ScriptExhausted {
                    model: self.name.clone(),
                    replies: replies.len(),
                    call,
                };
                match (self.when_exhausted, replies.len()) {
                    // Used once: moved out, nothing to copy. (By the
                    // conversation a reply may be asked for again.)
                    (WhenExhausted::Fail, len)
                        if index < len && self.position == ScriptPosition::Counter =>
                    {
                        std::mem::replace(&mut replies[index], ScriptedReply::Text(String::new()))
                    }
                    (WhenExhausted::Fail, len) if index < len => replay(&replies[index]),
                    (WhenExhausted::Fail, _) | (_, 0) => return Err(exhausted()),
                    (_, len) if index < len => replay(&replies[index]),
                    (WhenExhausted::RepeatLast, len) => replay(&replies[len - 1]),
                    (WhenExhausted::Cycle, len) => replay(&replies[index % len]),
                }
            }
            Source::Function(f) => f(request)?,
        };
        Ok((call, reply))
    }
}

/// About four characters a token: rough, but deterministic.
fn estimate_tokens(text: &str) -> u64 {
    (text.chars().count() as u64).div_ceil(4)
}

#[async_trait]
impl ChatModel for ScriptedModel {
    fn model_name(&self) -> &str {
        &self.name
    }

    fn provider_name(&self) -> &str {
        "troupe.scripted"
    }

    fn context_window(&self) -> Option<usize> {
        self.window
    }

    async fn complete(&self, request: &ChatRequest) -> Result<ChatResponse, ModelError> {
        if let Some(delay) = self.delay {
            tokio::time::sleep(delay).await;
        }
        let (call, reply) = self.next_reply(request)?;
        let calls = |list: Vec<(String, String)>| -> Vec<ToolCall> {
            list.into_iter()
                .enumerate()
                .map(|(i, (name, arguments))| ToolCall {
                    id: format!("call_{call}_{i}"),
                    name,
                    arguments,
                })
                .collect()
        };
        let mut response = match reply {
            ScriptedReply::Text(text) => ChatResponse::text(text),
            ScriptedReply::ToolCalls(list) => ChatResponse {
                content: None,
                tool_calls: calls(list),
                finish_reason: FinishReason::ToolCalls,
                usage: None,
                model: None,
            },
            ScriptedReply::Handoff { target, reason } => ChatResponse {
                content: None,
                tool_calls: calls(vec![(
                    handoff_tool_name(&target),
                    json_text(&serde_json::json!({ "reason": reason })),
                )]),
                finish_reason: FinishReason::ToolCalls,
                usage: None,
                model: None,
            },
            ScriptedReply::Response(r) => r,
            ScriptedReply::Error(e) => return Err(e),
        };
        if response.usage.is_none() {
            let prompt: u64 = request
                .messages
                .iter()
                .map(|m| estimate_tokens(m.text()) + 4)
                .sum();
            let completion = estimate_tokens(response.text_content())
                + response
                    .tool_calls
                    .iter()
                    .map(|c| estimate_tokens(&c.name) + estimate_tokens(&c.arguments))
                    .sum::<u64>();
            response.usage = Some(Usage {
                prompt_tokens: prompt,
                completion_tokens: completion.max(1),
            });
        }
        response.model.get_or_insert_with(|| self.name.clone());
        Ok(response)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ask() -> ChatRequest {
        ChatRequest::new(vec![ChatMessage::user("next?")])
    }

    async fn answers(model: &ScriptedModel, calls: usize) -> Vec<String> {
        let mut out = Vec::new();
        for _ in 0..calls {
            out.push(match model.complete(&ask()).await {
                Ok(r) => r.text_content().to_string(),
                Err(e) => format!("error: {e}"),
            });
        }
        out
    }

    fn ab() -> [ScriptedReply; 2] {
        [ScriptedReply::text("a"), ScriptedReply::text("b")]
    }

    #[tokio::test]
    async fn a_script_fails_when_it_runs_out_and_says_how_to_go_on() {
        let model = ScriptedModel::new(ab()).named("m");
        let said = answers(&model, 3).await;
        assert_eq!(said[..2], ["a", "b"]);
        assert!(
            said[2].contains("scripted model 'm' is exhausted: call 3")
                && said[2].contains("ran out of replies")
                && said[2].contains("`when_exhausted`"),
            "{}",
            said[2]
        );
        assert_eq!(model.remaining(), Some(0));
    }

    #[tokio::test]
    async fn a_model_that_records_nothing_still_counts_its_calls() {
        let model = ScriptedModel::new(ab()).named("m").record_requests(false);
        let said = answers(&model, 3).await;
        assert_eq!(said[..2], ["a", "b"]);
        assert!(said[2].contains("is exhausted: call 3"), "{}", said[2]);
        assert!(model.requests().is_empty());
        let recording = ScriptedModel::new(ab());
        answers(&recording, 2).await;
        assert_eq!(recording.requests().len(), 2);
    }

    #[tokio::test]
    async fn repeat_last_and_cycle_go_on_for_ever() {
        let repeat = ScriptedModel::new(ab()).when_exhausted(WhenExhausted::RepeatLast);
        assert_eq!(answers(&repeat, 4).await, ["a", "b", "b", "b"]);
        let cycle = ScriptedModel::new(ab()).when_exhausted(WhenExhausted::Cycle);
        assert_eq!(answers(&cycle, 5).await, ["a", "b", "a", "b", "a"]);
        // Nothing to repeat: an empty script still fails.
        let empty = ScriptedModel::new([]).when_exhausted(WhenExhausted::Cycle);
        assert!(answers(&empty, 1).await[0].contains("is exhausted"));
    }

    /// A request showing `answers` earlier assistant turns.
    fn after(answers: usize) -> ChatRequest {
        let mut messages = vec![ChatMessage::user("go")];
        for i in 0..answers {
            messages.push(ChatMessage::assistant(format!("answer {i}")));
            messages.push(ChatMessage::user("next?"));
        }
        ChatRequest::new(messages)
    }

    async fn said(model: &ScriptedModel, request: &ChatRequest) -> String {
        match model.complete(request).await {
            Ok(r) => r.text_content().to_string(),
            Err(e) => format!("error: {e}"),
        }
    }

    #[tokio::test]
    async fn by_the_conversation_the_reply_depends_on_the_request_alone() {
        let model = ScriptedModel::new(ab()).named("m").by_conversation();
        // Asked in any order, any number of times (a resumed run, workers
        // sharing the model), each conversation gets its reply.
        assert_eq!(said(&model, &after(1)).await, "b");
        assert_eq!(said(&model, &after(0)).await, "a");
        assert_eq!(said(&model, &after(0)).await, "a");
        assert_eq!(said(&model, &after(1)).await, "b");
        let past = said(&model, &after(2)).await;
        assert!(past.contains("is exhausted: call 3"), "{past}");
        assert_eq!(model.remaining(), Some(0));
        let cycle = ScriptedModel::new(ab())
            .by_conversation()
            .when_exhausted(WhenExhausted::Cycle);
        assert_eq!(said(&cycle, &after(3)).await, "b");
        let repeat = ScriptedModel::new(ab())
            .position(ScriptPosition::Conversation)
            .when_exhausted(WhenExhausted::RepeatLast);
        assert_eq!(said(&repeat, &after(5)).await, "b");
        // The counter, the default, goes by calls.
        let counter = ScriptedModel::new(ab());
        assert_eq!(said(&counter, &after(1)).await, "a");
    }

    #[tokio::test]
    async fn by_the_conversation_tool_call_ids_follow_the_position() {
        let model = ScriptedModel::new([
            ScriptedReply::tool_call("add", serde_json::json!({})),
            ScriptedReply::tool_call("add", serde_json::json!({})),
        ])
        .by_conversation();
        let second = model.complete(&after(1)).await.unwrap();
        assert_eq!(second.tool_calls[0].id, "call_2_0");
        let first = model.complete(&after(0)).await.unwrap();
        assert_eq!(first.tool_calls[0].id, "call_1_0");
    }

    #[tokio::test]
    async fn by_the_conversation_an_error_is_given_once_then_skipped() {
        let model = ScriptedModel::new([
            ScriptedReply::error("HTTP 429: rate limit"),
            ScriptedReply::text("a"),
            ScriptedReply::text("b"),
        ])
        .by_conversation();
        // The retry of the failed call is shown the same conversation.
        assert_eq!(said(&model, &after(0)).await, "error: HTTP 429: rate limit");
        assert_eq!(said(&model, &after(0)).await, "a");
        assert_eq!(said(&model, &after(1)).await, "b");
        assert_eq!(said(&model, &after(0)).await, "a");
    }

    #[tokio::test]
    async fn a_repeated_error_keeps_its_kind() {
        let model = ScriptedModel::new([ScriptedReply::Error(ModelError::Status {
            endpoint: "http://x".into(),
            status: 429,
            body: "slow down".into(),
            retry_after: Some(Duration::from_secs(2)),
        })])
        .when_exhausted(WhenExhausted::RepeatLast);
        for _ in 0..2 {
            let e = model.complete(&ask()).await.unwrap_err();
            assert!(e.is_retryable(), "{e}");
            assert_eq!(e.retry_after(), Some(Duration::from_secs(2)));
        }
        let other = ScriptedModel::new([ScriptedReply::error("broken")])
            .when_exhausted(WhenExhausted::Cycle);
        assert_eq!(answers(&other, 2).await, ["error: broken", "error: broken"]);
    }

    #[tokio::test(start_paused = true)]
    async fn every_answer_takes_the_delay() {
        let model = ScriptedModel::new(ab()).delay(Duration::from_secs(5));
        let start = tokio::time::Instant::now();
        assert_eq!(answers(&model, 2).await, ["a", "b"]);
        assert_eq!(start.elapsed(), Duration::from_secs(10));
        // A call abandoned while it waits uses no reply.
        let slow = ScriptedModel::new(ab()).delay(Duration::from_secs(5));
        let r = ask();
        let abandoned = tokio::time::timeout(Duration::from_secs(1), slow.complete(&r)).await;
        assert!(abandoned.is_err());
        assert_eq!(slow.remaining(), Some(2));
    }
}
