//! `chain` and `fanin` on adk-graph 2.3.0 (ADK-Rust's Pregel graphs).

use std::time::Instant;

use adk_graph::{
    END, ExecutionConfig, NodeContext, NodeOutput, START, State, StateGraph, StateSchema,
};
use serde_json::{Value, json};

use super::{BoxError, chain_line, fanin_line, repeat};

fn text_of(ctx: &NodeContext) -> String {
    ctx.get("text")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_string()
}

pub async fn chain(length: usize, runs: usize) -> Result<Value, BoxError> {
    let mut graph = StateGraph::with_channels(&["text"]);
    for i in 0..length {
        graph = graph.add_node_fn(&format!("n{i}"), |ctx: NodeContext| async move {
            super::invoked();
            let text = text_of(&ctx);
            Ok(NodeOutput::new().with_update("text", json!(text)))
        });
    }
    graph = graph.add_edge(START, "n0");
    for i in 1..length {
        graph = graph.add_edge(&format!("n{}", i - 1), &format!("n{i}"));
    }
    let graph = graph.add_edge(&format!("n{}", length - 1), END).compile()?;
    let (walls, cold) = repeat(runs, || {
        let graph = &graph;
        async move {
            let mut input = State::new();
            input.insert("text".into(), json!("x"));
            let out = graph.invoke(input, ExecutionConfig::new("chain")).await?;
            if out.get("text").and_then(Value::as_str) != Some("x") {
                return Err(format!("chain ended with {:?}", out.get("text")).into());
            }
            Ok(())
        }
    })
    .await?;
    super::check_invocations(runs, length)?;
    let mut line = chain_line(length, runs, walls, cold);
    line["framework"] = json!("adk-graph 2.3.0 (invoke)");
    Ok(line)
}

pub async fn fanin(k: usize, runs: usize) -> Result<Value, BoxError> {
    let building = Instant::now();
    // The branches' answers gathered in a list channel (append reducer),
    // as the LangGraph peer gathers them (`operator.add`).
    let schema = StateSchema::builder()
        .channel("text")
        .list_channel("results")
        .channel("total")
        .build();
    let mut graph = StateGraph::new(schema)
        .add_node_fn("source", |_ctx: NodeContext| async move {
            super::invoked();
            Ok(NodeOutput::new().with_update("text", json!("x")))
        })
        .add_node_fn("sink", |ctx: NodeContext| async move {
            super::invoked();
            let n = ctx
                .get("results")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            Ok(NodeOutput::new().with_update("total", json!(n)))
        })
        .add_edge(START, "source")
        .add_edge("sink", END);
    for i in 0..k {
        let name = format!("b{i}");
        graph = graph
            .add_node_fn(&name, |ctx: NodeContext| async move {
                super::invoked();
                let text = text_of(&ctx);
                Ok(NodeOutput::new().with_update("results", json!(text)))
            })
            .add_edge("source", &name)
            .add_edge(&name, "sink");
    }
    // The sink has K incoming edges: compile() defers it (fan-in).
    let graph = graph.compile()?;
    let build = building.elapsed();
    let (walls, cold) = repeat(runs, || {
        let graph = &graph;
        async move {
            let out = graph
                .invoke(State::new(), ExecutionConfig::new("fanin"))
                .await?;
            let total = out.get("total").and_then(Value::as_u64);
            if total != Some(k as u64) {
                return Err(format!("fan-in ended with total {total:?}").into());
            }
            Ok(())
        }
    })
    .await?;
    super::check_invocations(runs, k + 2)?;
    let mut line = fanin_line(k, runs, build, walls, cold);
    line["framework"] = json!("adk-graph 2.3.0 (invoke)");
    Ok(line)
}
