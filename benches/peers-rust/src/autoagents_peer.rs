//! `rr` and `idle` on AutoAgents 0.4.0 (liquidos-ai), whose agents are
//! ractor actors: an `ActorAgent` is built by `AgentBuilder`, spawned as a
//! ractor actor taking `Task`s in its mailbox, and reports on the event
//! channel of the runtime hosting it (`SingleThreadedRuntime`: `TaskStarted`,
//! `TaskComplete` with the output, ...), which a task of the runtime forwards
//! to the application.
//!
//! - `rr`: 3 actor agents (`BasicAgent` executor, one model call per task,
//!   instructions "Answer briefly."), each over a scripted `LLMProvider`
//!   answering `ok from aN`. AutoAgents has no group chat: the loop that
//!   takes turns is ours — it casts each agent, in turn, a `Task` holding the
//!   previous message and waits for that task's `TaskComplete` on the
//!   runtime's event stream. N messages: the task and N − 1 answers, each
//!   checked (the agent in turn, its text). `--context default` is the
//!   builder's default (no memory: an agent sees its instructions and the
//!   previous message); `window` gives each agent a `SlidingWindowMemory` of
//!   2 messages.
//! - `fan`: K worker actor agents whose executor is a plain function (no
//!   model: it answers `done: <task>`), as troupe's and AutoGen's fan workers
//!   are; our coordinating loop casts each a `Task` and gathers the K
//!   `TaskComplete`s; a cold round, then a warm one on the same agents, whose
//!   wall time / K is the figure.
//! - `pub`: one such function agent subscribed to a `Topic<Task>`; N tasks
//!   published to the topic through the runtime (`TypedRuntime::publish`,
//!   from a task of ours: AutoAgents' agents do not publish to one another),
//!   each delivered to the subscriber's mailbox and answered; the figure is
//!   the wall time until the N-th `TaskComplete` / N, every answer checked in
//!   order.
//! - `idle`: K such function agents built (each its own ractor actor,
//!   spawned and waiting) on one runtime; the figure is (RSS after − RSS
//!   before) / K. Every agent has its actor up: troupe's `idle` hosts agents
//!   whose actor is spawned only when they first have work (its
//!   `idle_spawned` is the like-for-like figure).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use autoagents::core::actor::Topic;
use autoagents::core::agent::error::RunnableAgentError;
use autoagents::core::agent::memory::SlidingWindowMemory;
use autoagents::core::agent::prebuilt::executor::BasicAgent;
use autoagents::core::agent::task::Task;
use autoagents::core::agent::{
    ActorAgent, ActorAgentHandle, AgentBuilder, AgentDeriveT, AgentExecutor, AgentHooks, Context,
    ExecutorConfig,
};
use autoagents::core::runtime::{Runtime, SingleThreadedRuntime, TypedRuntime};
use autoagents::core::tool::ToolT;
use autoagents::llm::chat::{
    ChatMessage, ChatProvider, ChatResponse, StructuredOutputFormat, Tool,
};
use autoagents::llm::completion::{CompletionProvider, CompletionRequest, CompletionResponse};
use autoagents::llm::embedding::EmbeddingProvider;
use autoagents::llm::error::LLMError;
use autoagents::llm::models::ModelsProvider;
use autoagents::llm::{LLMProvider, ToolCall};
use autoagents::protocol::Event;
use futures::StreamExt;
use serde_json::{Value, json};

use super::{BoxError, current_rss_kib, round1, us};

/// A scripted model: the same short text every call, no network.
#[derive(Debug)]
struct Scripted {
    reply: String,
}

#[derive(Debug)]
struct Answer(String);

impl ChatResponse for Answer {
    fn text(&self) -> Option<String> {
        Some(self.0.clone())
    }

    fn tool_calls(&self) -> Option<Vec<ToolCall>> {
        None
    }
}

impl std::fmt::Display for Answer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

#[async_trait]
impl ChatProvider for Scripted {
    async fn chat_with_tools(
        &self,
        _messages: &[ChatMessage],
        _tools: Option<&[Tool]>,
        _json_schema: Option<StructuredOutputFormat>,
    ) -> Result<Box<dyn ChatResponse>, LLMError> {
        Ok(Box::new(Answer(self.reply.clone())))
    }
}

#[async_trait]
impl CompletionProvider for Scripted {
    async fn complete(
        &self,
        _req: &CompletionRequest,
        _json_schema: Option<StructuredOutputFormat>,
    ) -> Result<CompletionResponse, LLMError> {
        Ok(CompletionResponse {
            text: self.reply.clone(),
        })
    }
}

#[async_trait]
impl EmbeddingProvider for Scripted {
    async fn embed(&self, input: Vec<String>) -> Result<Vec<Vec<f32>>, LLMError> {
        Ok(input.iter().map(|_| vec![0.0]).collect())
    }
}

#[async_trait]
impl ModelsProvider for Scripted {}

impl LLMProvider for Scripted {}

/// A chat agent: a name and its instructions, no tools, text out.
#[derive(Debug)]
struct Chatter {
    name: String,
}

impl AgentDeriveT for Chatter {
    type Output = String;

    fn description(&self) -> &str {
        "Answer briefly."
    }

    fn output_schema(&self) -> Option<Value> {
        None
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn tools(&self) -> Vec<Box<dyn ToolT>> {
        Vec::new()
    }
}

impl AgentHooks for Chatter {}

type Handle = ActorAgentHandle<BasicAgent<Chatter>>;

/// A function agent: its executor answers `done: <task>` without a model.
#[derive(Debug)]
struct Worker {
    name: String,
}

impl AgentDeriveT for Worker {
    type Output = String;

    fn description(&self) -> &str {
        "A worker."
    }

    fn output_schema(&self) -> Option<Value> {
        None
    }

    fn name(&self) -> &str {
        &self.name
    }

    fn tools(&self) -> Vec<Box<dyn ToolT>> {
        Vec::new()
    }
}

#[async_trait]
impl AgentExecutor for Worker {
    type Output = String;
    type Error = RunnableAgentError;

    fn config(&self) -> ExecutorConfig {
        ExecutorConfig { max_turns: 1 }
    }

    async fn execute(&self, task: &Task, _context: Arc<Context>) -> Result<String, Self::Error> {
        Ok(format!("done: {}", task.prompt))
    }
}

impl AgentHooks for Worker {}

/// Builds and spawns K function agents on `runtime` (one model handle shared:
/// the builder wants one, the executor never calls it).
async fn workers(
    k: usize,
    runtime: &Arc<SingleThreadedRuntime>,
) -> Result<Vec<ActorAgentHandle<Worker>>, BoxError> {
    let llm: Arc<dyn LLMProvider> = Arc::new(Scripted {
        reply: String::new(),
    });
    let mut out = Vec::with_capacity(k);
    for i in 0..k {
        let worker = Worker {
            name: format!("w{i}"),
        };
        out.push(
            AgentBuilder::<_, ActorAgent>::new(worker)
                .llm(llm.clone())
                .runtime(runtime.clone())
                .build()
                .await?,
        );
    }
    Ok(out)
}

/// Builds and spawns one actor agent on `runtime`.
async fn actor(
    name: String,
    runtime: &Arc<SingleThreadedRuntime>,
    window: bool,
) -> Result<Handle, BoxError> {
    let llm: Arc<dyn LLMProvider> = Arc::new(Scripted {
        reply: format!("ok from {name}"),
    });
    let mut builder = AgentBuilder::<_, ActorAgent>::new(BasicAgent::new(Chatter { name }))
        .llm(llm)
        .runtime(runtime.clone());
    if window {
        builder = builder.memory(Box::new(SlidingWindowMemory::new(2)));
    }
    Ok(builder.build().await?)
}

/// A runtime with its event loop running and the application's event stream.
async fn runtime() -> Result<
    (
        Arc<SingleThreadedRuntime>,
        autoagents::core::utils::BoxEventStream<Event>,
    ),
    BoxError,
> {
    let runtime = SingleThreadedRuntime::new(None);
    let events = runtime
        .take_event_receiver()
        .await
        .ok_or("the runtime's event receiver was already taken")?;
    let running = runtime.clone();
    tokio::spawn(async move {
        let _ = running.run().await;
    });
    Ok((runtime, events))
}

pub async fn rr(n: u64, context: &str) -> Result<Value, BoxError> {
    let window = match context {
        "default" => false,
        "window" => true,
        other => return Err(format!("--context {other}: default or window").into()),
    };
    let (runtime, mut events) = runtime().await?;
    let mut team = Vec::new();
    for i in 0..3 {
        team.push(actor(format!("a{i}"), &runtime, window).await?);
    }
    let started = Instant::now();
    // The task message, then every agent's answer, in turn.
    let mut previous = "go".to_string();
    let mut messages = 1u64;
    while messages < n {
        let turn = ((messages - 1) % 3) as usize;
        let task = Task::new(previous);
        let id = task.submission_id;
        team[turn]
            .actor_ref
            .cast(task)
            .map_err(|e| format!("casting the task to a{turn}: {e}"))?;
        let result = loop {
            match events.next().await {
                Some(Event::TaskComplete {
                    sub_id,
                    actor_name,
                    result,
                    ..
                }) if sub_id == id => break (actor_name, result),
                Some(Event::TaskError { sub_id, error, .. }) if sub_id == id => {
                    return Err(format!("message {messages}: a{turn} failed: {error}").into());
                }
                Some(_) => {}
                None => return Err("the runtime's event stream ended".into()),
            }
        };
        // TaskComplete carries the executor's output as JSON.
        let (speaker, result) = result;
        let text = serde_json::from_str::<Value>(&result)?
            .get("response")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_default();
        let expected = format!("a{turn}");
        if speaker != expected || text != format!("ok from {expected}") {
            return Err(format!(
                "message {messages}: {speaker} said {text:?}, expected {expected}"
            )
            .into());
        }
        previous = text;
        messages += 1;
    }
    let wall = started.elapsed();
    Ok(json!({
        "bench": "rr",
        "framework": format!("AutoAgents 0.4.0 (3 actor agents taking turns, {})",
            if window { "sliding-window memory of 2" } else { "no memory" }),
        "n": n,
        "messages": messages,
        "wall_s": wall.as_secs_f64(),
        "per_message_us": us(wall) / messages as f64,
        "figure": us(wall) / messages as f64,
        "unit": "µs/message",
    }))
}

pub async fn idle(k: usize) -> Result<Value, BoxError> {
    let (runtime, _events) = runtime().await?;
    let rss_before = current_rss_kib();
    let started = Instant::now();
    let hosted = workers(k, &runtime).await?;
    let built = started.elapsed();
    // Every actor in its mailbox loop (ractor marks it running there, once
    // its task is first polled) before the RSS is read.
    let waiting = Instant::now();
    loop {
        let alive = hosted
            .iter()
            .filter(|h| h.actor_ref.get_status() == autoagents::core::ractor::ActorStatus::Running)
            .count();
        if alive == k {
            break;
        }
        if waiting.elapsed() > Duration::from_secs(60) {
            return Err(format!("{alive} of {k} agents' actors running after 60 s").into());
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    let hosting = current_rss_kib();
    let per_agent_kib = (hosting - rss_before) / k as f64;
    Ok(json!({
        "bench": "idle",
        "framework": "AutoAgents 0.4.0 (K function actor agents, each a spawned ractor actor)",
        "k": k,
        "build_s": built.as_secs_f64(),
        "wall_s": built.as_secs_f64(),
        "rss_before_mib": round1(rss_before / 1024.0),
        "rss_hosting_mib": round1(hosting / 1024.0),
        "rss_per_agent_kib": round1(per_agent_kib),
        "figure": round1(per_agent_kib),
        "unit": "KiB/agent",
    }))
}

/// One round of `fan`: a task to each worker, then every answer gathered.
async fn fan_round(
    team: &[ActorAgentHandle<Worker>],
    events: &mut autoagents::core::utils::BoxEventStream<Event>,
) -> Result<Duration, BoxError> {
    let started = Instant::now();
    let mut waiting = HashSet::with_capacity(team.len());
    for (i, worker) in team.iter().enumerate() {
        let task = Task::new(format!("part {i}"));
        waiting.insert(task.submission_id);
        worker
            .actor_ref
            .cast(task)
            .map_err(|e| format!("casting the task to w{i}: {e}"))?;
    }
    while !waiting.is_empty() {
        match events.next().await {
            Some(Event::TaskComplete { sub_id, result, .. }) => {
                if !waiting.remove(&sub_id) || !result.contains("done: part ") {
                    return Err(format!("unexpected answer {result:?}").into());
                }
            }
            Some(Event::TaskError { error, .. }) => {
                return Err(format!("a worker failed: {error}").into());
            }
            Some(_) => {}
            None => return Err("the runtime's event stream ended".into()),
        }
    }
    Ok(started.elapsed())
}

pub async fn fan(k: usize) -> Result<Value, BoxError> {
    let (runtime, mut events) = runtime().await?;
    let started = Instant::now();
    let team = workers(k, &runtime).await?;
    let setup = started.elapsed();
    let cold = fan_round(&team, &mut events).await?;
    let warm = fan_round(&team, &mut events).await?;
    Ok(json!({
        "bench": "fan",
        "framework": "AutoAgents 0.4.0 (K function actor agents; a task cast to each, K TaskCompletes gathered)",
        "k": k,
        "setup_s": setup.as_secs_f64(),
        "cold_round_s": cold.as_secs_f64(),
        "warm_round_s": warm.as_secs_f64(),
        "wall_s": warm.as_secs_f64(),
        "warm_per_worker_us": us(warm) / k as f64,
        "figure": us(warm) / k as f64,
        "unit": "µs/worker",
    }))
}

pub async fn publish(n: u64) -> Result<Value, BoxError> {
    let (runtime, mut events) = runtime().await?;
    let topic = Topic::<Task>::new("jobs");
    let llm: Arc<dyn LLMProvider> = Arc::new(Scripted {
        reply: String::new(),
    });
    let _subscriber = AgentBuilder::<_, ActorAgent>::new(Worker {
        name: "subscriber".into(),
    })
    .llm(llm)
    .runtime(runtime.clone())
    .subscribe(topic.clone())
    .build()
    .await?;
    let started = Instant::now();
    // Published from a task of its own while this one drains the events: the
    // runtime's channels are bounded, and a publisher that did not let the
    // answers out would wait on them forever.
    let publisher = {
        let runtime = runtime.clone();
        tokio::spawn(async move {
            for i in 0..n {
                runtime
                    .publish(&topic, Task::new(format!("m{i}")))
                    .await
                    .map_err(|e| format!("publishing message {i}: {e}"))?;
            }
            Ok::<(), String>(())
        })
    };
    let mut answered = 0u64;
    while answered < n {
        match events.next().await {
            Some(Event::TaskComplete { result, .. }) => {
                // Delivered and answered in order: `"done: m<i>"` as JSON.
                if result != format!("\"done: m{answered}\"") {
                    return Err(format!("answer {answered} was {result:?}").into());
                }
                answered += 1;
            }
            Some(Event::TaskError { error, .. }) => {
                return Err(format!("the subscriber failed: {error}").into());
            }
            Some(_) => {}
            None => return Err("the runtime's event stream ended".into()),
        }
    }
    let wall = started.elapsed();
    publisher.await??;
    Ok(json!({
        "bench": "pub",
        "framework": "AutoAgents 0.4.0 (runtime.publish to a Topic<Task>, 1 subscribed function actor agent)",
        "n": n,
        "wall_s": wall.as_secs_f64(),
        "per_message_us": us(wall) / n as f64,
        "figure": us(wall) / n as f64,
        "unit": "µs/message",
    }))
}
