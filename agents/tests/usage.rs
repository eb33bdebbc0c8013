//! A ChatAgent records every model call (priced) and every tool call of a
//! turn as it goes, so a run that fails after two paid calls still
//! reports them; tool calls have start and end events.

// Test helpers may fail loudly.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use serde::Deserialize;
use troupe_agents::schemars::JsonSchema;
use troupe_agents::{
    ChatAgent, ChatResponse, FinishReason, FunctionTool, Pricing, ScriptedModel, ScriptedReply,
};
use troupe_runtime::{
    Event, RunContext, RunError, Workflow, event::FinalStatus, message::ToolCall, message::Usage,
};

#[derive(Deserialize, JsonSchema)]
struct Pair {
    a: i64,
    b: i64,
}

/// A tool call answer that used `input` + `output` tokens.
fn calls(name: &str, input: u64, output: u64) -> ScriptedReply {
    ScriptedReply::Response(ChatResponse {
        content: None,
        tool_calls: vec![ToolCall {
            id: format!("c_{name}"),
            name: name.into(),
            arguments: r#"{"a": 2, "b": 3}"#.into(),
        }],
        finish_reason: FinishReason::ToolCalls,
        usage: Some(Usage {
            prompt_tokens: input,
            completion_tokens: output,
        }),
        model: None,
    })
}

#[tokio::test]
async fn a_run_failing_after_two_model_calls_reports_their_tokens_and_cost() {
    let model = ScriptedModel::new([
        calls("add", 100, 10),
        calls("mul", 200, 20),
        ScriptedReply::error("the server went away"),
    ]);
    let add = FunctionTool::new("add", "Adds.", |p: Pair| async move {
        Ok::<_, String>(p.a + p.b)
    });
    let mul = FunctionTool::new("mul", "Multiplies.", |p: Pair| async move {
        Ok::<_, String>(p.a * p.b)
    });
    let agent = ChatAgent::builder("writer")
        .model(model)
        .tool(add)
        .tool(mul)
        .pricing(Pricing::per_million(1000.0, 2000.0))
        .build()
        .unwrap();
    let wf = Workflow::builder()
        .name("team")
        .participant(agent)
        .build()
        .unwrap();
    let (ctx, mut events) = RunContext::stream();
    let err = tokio::time::timeout(Duration::from_secs(10), wf.run_task("go", &ctx))
        .await
        .unwrap()
        .unwrap_err();
    assert!(matches!(err, RunError::AgentFailed { .. }), "{err}");
    let stats = err.stats().unwrap();
    let expected_cost = (300.0 * 1000.0 + 30.0 * 2000.0) / 1e6;
    for s in [&stats.total, &stats.agents["team/writer"]] {
        assert_eq!(s.model_calls, 2, "{stats:?}");
        assert_eq!((s.input_tokens, s.output_tokens), (300, 30));
        assert_eq!(s.tool_calls, 2);
        assert_eq!(s.turns, 1);
        assert!((s.cost.unwrap() - expected_cost).abs() < 1e-9, "{s:?}");
    }

    let records = events.drain_ready();
    let tool_events: Vec<String> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ToolCallStarted { name, call_id, .. } => Some(format!("start {name} {call_id}")),
            Event::ToolCallFinished {
                name,
                error,
                elapsed_ms,
                ..
            } => {
                assert!(*elapsed_ms >= 0.0);
                Some(format!("end {name} {error:?}"))
            }
            _ => None,
        })
        .collect();
    assert_eq!(
        tool_events,
        [
            "start add c_add",
            "end add None",
            "start mul c_mul",
            "end mul None"
        ]
    );
    // Each call's event carries its cost; the failed third call none.
    let costs: Vec<Option<f64>> = records
        .iter()
        .filter_map(|r| match &r.event {
            Event::ModelCallFinished { cost, .. } => Some(*cost),
            _ => None,
        })
        .collect();
    assert_eq!(
        costs,
        [
            Some((100.0 * 1000.0 + 10.0 * 2000.0) / 1e6),
            Some((200.0 * 1000.0 + 20.0 * 2000.0) / 1e6),
            None
        ]
    );
    let finished = records
        .iter()
        .find(|r| matches!(r.event, Event::RunFinished { .. }))
        .unwrap();
    let Event::RunFinished { status, stats, .. } = &finished.event else {
        unreachable!()
    };
    assert_eq!(*status, FinalStatus::Failed);
    assert_eq!(stats.total.model_calls, 2);
    let json = serde_json::to_value(finished).unwrap();
    assert_eq!(json["stats"]["total"]["input_tokens"], 300);
    assert_eq!(json["stats"]["agents"]["team/writer"]["model_calls"], 2);
}
