//! `chain` and `fanin` on graph-flow 0.8.1.

use std::sync::Arc;
use std::time::Instant;

use async_trait::async_trait;
use graph_flow::{
    Context, ExecutionStatus, FanOutTask, FlowRunner, Graph, GraphBuilder, InMemorySessionStorage,
    NextAction, Session, SessionStorage, Task, TaskResult,
};
use serde_json::{Value, json};

use super::{BoxError, chain_line, fanin_line, repeat};

/// A node passing the text on: reads it from the session's context,
/// writes it back and answers it; the last one ends the run.
struct PassOn {
    id: String,
    next: NextAction,
}

#[async_trait]
impl Task for PassOn {
    fn id(&self) -> &str {
        &self.id
    }

    async fn run(&self, ctx: Context) -> graph_flow::Result<TaskResult> {
        super::invoked();
        let text: String = ctx.get("text").unwrap_or_default();
        ctx.set("text", &text)?;
        Ok(TaskResult::new(Some(text), self.next.clone()))
    }
}

fn chain_graph(length: usize) -> Result<Arc<Graph>, BoxError> {
    let mut builder = GraphBuilder::new("chain");
    for i in 0..length {
        let next = if i + 1 == length {
            NextAction::End
        } else {
            // Run the next task in the same call, as a graph run does.
            NextAction::ContinueAndExecute
        };
        builder = builder.add_task(Arc::new(PassOn {
            id: format!("n{i}"),
            next,
        }));
    }
    for i in 1..length {
        builder = builder.add_edge(format!("n{}", i - 1), format!("n{i}"));
    }
    Ok(Arc::new(builder.set_start_task("n0").build()?))
}

fn check(status: &ExecutionStatus, text: Option<String>) -> Result<(), BoxError> {
    if !matches!(status, ExecutionStatus::Completed) || text.as_deref() != Some("x") {
        return Err(format!("chain ended {status:?} with {text:?}").into());
    }
    Ok(())
}

pub async fn chain(length: usize, runs: usize, api: &str) -> Result<Value, BoxError> {
    let graph = chain_graph(length)?;
    let mut n = 0u64;
    let (walls, cold) = match api {
        // The engine: a session made per run and executed to its end.
        "engine" => {
            repeat(runs, || {
                n += 1;
                let graph = graph.clone();
                let id = n;
                async move {
                    let mut session = Session::new_from_task(format!("s{id}"), "n0");
                    session.context.set("text", "x")?;
                    let result = graph.execute_session(&mut session).await?;
                    check(&result.status, session.context.get("text"))
                }
            })
            .await?
        }
        // The documented way: the session saved to storage, then
        // `FlowRunner::run` (load, execute, save).
        "runner" => {
            let storage = Arc::new(InMemorySessionStorage::new());
            let runner = FlowRunner::new(graph.clone(), storage.clone());
            repeat(runs, || {
                n += 1;
                let runner = runner.clone();
                let storage = storage.clone();
                let id = format!("s{n}");
                async move {
                    let session = Session::new_from_task(id.clone(), "n0");
                    session.context.set("text", "x")?;
                    storage.save(session).await?;
                    let result = runner.run(&id).await?;
                    let text = storage
                        .get(&id)
                        .await?
                        .and_then(|s| s.context.get::<String>("text"));
                    storage.delete(&id).await?;
                    check(&result.status, text)
                }
            })
            .await?
        }
        other => return Err(format!("--api {other}: engine or runner").into()),
    };
    super::check_invocations(runs, length)?;
    let mut line = chain_line(length, runs, walls, cold);
    line["framework"] = json!(format!("graph-flow 0.8.1 ({api})"));
    Ok(line)
}

/// A branch of the fan-out: reads the text and answers it.
struct Branch {
    id: String,
}

#[async_trait]
impl Task for Branch {
    fn id(&self) -> &str {
        &self.id
    }

    async fn run(&self, ctx: Context) -> graph_flow::Result<TaskResult> {
        super::invoked();
        let text: String = ctx.get("text").unwrap_or_default();
        Ok(TaskResult::new(Some(text), NextAction::End))
    }
}

/// The fan-in: counts the branches' answers that `FanOutTask` gathered
/// into the context (`fanout.<child>.response`).
struct Sink {
    k: usize,
}

#[async_trait]
impl Task for Sink {
    fn id(&self) -> &str {
        "sink"
    }

    async fn run(&self, ctx: Context) -> graph_flow::Result<TaskResult> {
        super::invoked();
        let count = (0..self.k)
            .filter(|i| {
                ctx.get::<String>(&format!("fanout.b{i}.response"))
                    .is_some()
            })
            .count();
        ctx.set("total", count)?;
        Ok(TaskResult::new(Some(count.to_string()), NextAction::End))
    }
}

pub async fn fanin(k: usize, runs: usize) -> Result<Value, BoxError> {
    let building = Instant::now();
    let children: Vec<Arc<dyn Task>> = (0..k)
        .map(|i| {
            Arc::new(Branch {
                id: format!("b{i}"),
            }) as Arc<dyn Task>
        })
        .collect();
    // The source is the fan-out itself: it runs the K branches (each a
    // tokio task) and gathers their answers, then the sink runs.
    let source =
        FanOutTask::new("source", children).with_next_action(NextAction::ContinueAndExecute);
    let graph = Arc::new(
        GraphBuilder::new("fanin")
            .add_task(source)
            .add_task(Arc::new(Sink { k }))
            .add_edge("source", "sink")
            .set_start_task("source")
            .build()?,
    );
    let build = building.elapsed();
    let mut n = 0u64;
    let (walls, cold) = repeat(runs, || {
        n += 1;
        let graph = graph.clone();
        let id = n;
        async move {
            let mut session = Session::new_from_task(format!("s{id}"), "source");
            session.context.set("text", "x")?;
            let result = graph.execute_session(&mut session).await?;
            let total: Option<usize> = session.context.get("total");
            if !matches!(result.status, ExecutionStatus::Completed) || total != Some(k) {
                return Err(format!("fan-in ended {:?} with {total:?}", result.status).into());
            }
            Ok(())
        }
    })
    .await?;
    // The branches and the sink (the source is FanOutTask's own code).
    super::check_invocations(runs, k + 1)?;
    let mut line = fanin_line(k, runs, build, walls, cold);
    line["framework"] = json!("graph-flow 0.8.1 (FanOutTask)");
    Ok(line)
}
