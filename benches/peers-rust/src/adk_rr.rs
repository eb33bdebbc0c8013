//! `rr` on ADK-Rust 2.3.0's agents: a `LoopAgent` of 3 `LlmAgent`s.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Instant;

use adk_agent::{LlmAgentBuilder, LoopAgent};
use adk_core::{Agent, Content, IncludeContents, Llm, LlmRequest, LlmResponse, LlmResponseStream};
use adk_runner::Runner;
use adk_session::{CreateRequest, InMemorySessionService, SessionService};
use async_trait::async_trait;
use futures::StreamExt;
use serde_json::{Value, json};

use super::{BoxError, us};

/// A scripted model: the same short text every call, no network.
struct Scripted {
    reply: String,
}

#[async_trait]
impl Llm for Scripted {
    fn name(&self) -> &str {
        "scripted"
    }

    async fn generate_content(
        &self,
        _req: LlmRequest,
        _stream: bool,
    ) -> adk_core::Result<LlmResponseStream> {
        let response = LlmResponse {
            content: Some(Content::new("model").with_text(self.reply.clone())),
            turn_complete: true,
            ..Default::default()
        };
        Ok(Box::pin(futures::stream::once(async move { Ok(response) })))
    }
}

fn chatter(name: &str, include: IncludeContents) -> Result<Arc<dyn Agent>, BoxError> {
    let agent = LlmAgentBuilder::new(name)
        .instruction("Answer briefly.")
        .model(Arc::new(Scripted {
            reply: format!("ok from {name}"),
        }))
        .include_contents(include)
        .build()?;
    Ok(Arc::new(agent))
}

pub async fn rr(n: u64, context: &str) -> Result<Value, BoxError> {
    let include = match context {
        "default" => IncludeContents::Default,
        "none" => IncludeContents::None,
        other => return Err(format!("--context {other}: default or none").into()),
    };
    let rounds = (n.saturating_sub(1)).div_ceil(3) as u32;
    let team = LoopAgent::new(
        "rr",
        vec![
            chatter("a0", include)?,
            chatter("a1", include)?,
            chatter("a2", include)?,
        ],
    )
    .with_max_iterations(rounds);
    let sessions: Arc<dyn SessionService> = Arc::new(InMemorySessionService::new());
    let runner = Runner::builder()
        .app_name("rr")
        .agent(Arc::new(team))
        .session_service(sessions.clone())
        .build()?;
    let started = Instant::now();
    let session = sessions
        .create(CreateRequest {
            app_name: "rr".into(),
            user_id: "user".into(),
            session_id: Some("s1".into()),
            state: HashMap::new(),
        })
        .await?;
    drop(session);
    let mut events = runner
        .run_str("user", "s1", Content::new("user").with_text("go"))
        .await?;
    // The task message, then every agent's answer.
    let mut messages = 1u64;
    while let Some(event) = events.next().await {
        let event = event?;
        if let Some(content) = event.content()
            && event.author != "user"
        {
            // Every answer is the next agent's, in turn, with its text.
            let speaker = format!("a{}", (messages - 1) % 3);
            let text: String = content.parts.iter().filter_map(|p| p.text()).collect();
            if event.author != speaker || text != format!("ok from {speaker}") {
                return Err(format!(
                    "message {messages}: {} said {text:?}, expected {speaker}",
                    event.author
                )
                .into());
            }
            messages += 1;
        }
    }
    let wall = started.elapsed();
    let expected = 1 + 3 * u64::from(rounds);
    if messages != expected {
        return Err(format!("rr produced {messages} messages, expected {expected}").into());
    }
    Ok(json!({
        "bench": "rr",
        "framework": format!("ADK-Rust 2.3.0 (LoopAgent of 3 LlmAgents, include_contents {context})"),
        "n": n,
        "messages": messages,
        "wall_s": wall.as_secs_f64(),
        "per_message_us": us(wall) / messages as f64,
        "figure": us(wall) / messages as f64,
        "unit": "µs/message",
    }))
}
