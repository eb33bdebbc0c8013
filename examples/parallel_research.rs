//! Nested parallel blocks feeding one aggregator (seed 004, "Can we nest
//! parallel blocks?"):
//!
//! ```text
//!            ┌→ generator ───────────────────────────────┐
//! planner ───┼→ research (a workflow: researcher ∥ summarizer → notes) ─┼→ aggregator
//!            └→ fact_checker ────────────────────────────┘
//! ```
//!
//! The planner fans out to three branches that run at the same time; one of
//! them is a whole workflow with its own parallel block, nested as a single
//! node (a `Workflow` is an `Agent`). The aggregator waits for all three
//! ([`Join::All`]) and reads them as one "Prior Step Outputs" block
//! ([`NodeInput::PriorOutputs`], the layout cagent injects), then writes the
//! report.
//!
//! A nested workflow answers with its final response only, the last message
//! of the last agent to run. So that the aggregator gets both the
//! researcher's and the summarizer's findings, the inner block ends in a
//! small `notes` node that joins them.
//!
//! The branches sleep (a stand-in for model calls: 120 ms, 300 + 80 ms and
//! 200 ms), so the timings show the parallelism: the run takes about as long
//! as its slowest branch, not as the sum. Everything is scripted and runs
//! offline; events print on the console.
//!
//! ```text
//! cargo run --example parallel_research
//! ```

use std::error::Error;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use troupe::{
    AgentError, FnAgent, Graph, RunContext, Thread, Workflow, graph::Join, graph::NodeInput,
};

fn last_text(t: &Thread) -> String {
    t.last()
        .map(|m| m.text_content().into_owned())
        .unwrap_or_default()
}

/// The text of the last message `source` put in the thread.
fn said_by(t: &Thread, source: &str) -> String {
    t.messages()
        .iter()
        .rev()
        .find(|m| &*m.source == source)
        .map(|m| m.text_content().into_owned())
        .unwrap_or_default()
}

/// An agent that "thinks" for `ms` milliseconds (as a model call would),
/// then answers with `answer` applied to its thread.
fn slow(
    name: &'static str,
    ms: u64,
    answer: impl Fn(&Thread) -> String + Send + Sync + 'static,
) -> FnAgent {
    let answer = Arc::new(answer);
    FnAgent::new(name, move |thread, _ctx| {
        let answer = answer.clone();
        async move {
            tokio::time::sleep(Duration::from_millis(ms)).await;
            Ok::<_, AgentError>(answer(&thread))
        }
    })
}

/// Splits a "Prior Step Outputs" block into (step, output) pairs.
fn prior_outputs(block: &str) -> Vec<(String, String)> {
    let mut sections: Vec<(String, String)> = Vec::new();
    for line in block.lines() {
        if line.starts_with("--- ") {
            continue;
        }
        match line
            .strip_prefix('[')
            .and_then(|l| l.split_once(" (agent: "))
        {
            Some((step, _)) if line.ends_with(")]:") => {
                sections.push((step.to_string(), String::new()));
            }
            _ => {
                if let Some((_, text)) = sections.last_mut()
                    && !line.is_empty()
                {
                    if !text.is_empty() {
                        text.push('\n');
                    }
                    text.push_str(line);
                }
            }
        }
    }
    sections
}

fn main() -> Result<(), Box<dyn Error>> {
    // The inner parallel block: two start nodes run in the same superstep,
    // then `notes` joins them into the block's one answer.
    let research = Workflow::builder()
        .name("research")
        .description("researches the topic and summarizes prior work, in parallel")
        .graph(
            Graph::builder()
                .add_agent(slow("researcher", 300, |t| {
                    format!(
                        "3 sources on {}: ractor docs, tokio scheduler notes, a LangGraph benchmark",
                        topic(&last_text(t))
                    )
                }))
                .add_agent(slow("summarizer", 80, |_| {
                    "prior work: Python frameworks spend 0.3–0.8 ms per step on orchestration"
                        .to_string()
                }))
                .add_agent(FnAgent::sync("notes", |t: &Thread| {
                    Ok(format!(
                        "research: {}\nsummary: {}",
                        said_by(t, "researcher"),
                        said_by(t, "summarizer")
                    ))
                }))
                .add_edge("researcher", "notes")
                .add_edge("summarizer", "notes")
                .join("notes", Join::All)
                .build()?,
        )
        .build()?;

    // What the aggregator was given, kept to print after the run.
    let aggregator_input = Arc::new(Mutex::new(String::new()));
    let seen = aggregator_input.clone();

    let graph = Graph::builder()
        .add_agent(FnAgent::sync("planner", |t: &Thread| {
            let task = last_text(t);
            Ok(format!(
                "Plan for \"{task}\": draft an answer, research the topic, check the claims"
            ))
        }))
        .add_agent(slow("generator", 120, |t| {
            format!(
                "draft: yes — {} suits a runtime that must run many agents cheaply",
                topic(&last_text(t))
            )
        }))
        .add_agent(research)
        .add_agent(slow("fact_checker", 200, |_| {
            "checked 2 claims: 'actors isolate failures' ✓, 'no GC pauses' ✓".to_string()
        }))
        .add_agent(FnAgent::sync("aggregator", move |t: &Thread| {
            let block = last_text(t);
            *seen.lock().unwrap_or_else(|p| p.into_inner()) = block.clone();
            let mut report = String::from("# Report\n");
            for (step, output) in prior_outputs(&block) {
                report.push_str(&format!("\n## {step}\n{output}\n"));
            }
            report.push_str("\nVerdict: adopt, pending a spike on cluster mode.");
            Ok(report)
        }))
        .add_edge("planner", "generator")
        .add_edge("planner", "research")
        .add_edge("planner", "fact_checker")
        .add_edge("generator", "aggregator")
        .add_edge("research", "aggregator")
        .add_edge("fact_checker", "aggregator")
        // All or nothing, as in seed 004: the report waits for every branch.
        .join("aggregator", Join::All)
        .input("aggregator", NodeInput::PriorOutputs)
        .build()?;
    let workflow = Workflow::builder()
        .name("parallel_research")
        .graph(graph)
        .build()?;

    let rt = tokio::runtime::Runtime::new()?;
    let started = Instant::now();
    let console = RunContext::console();
    let result =
        rt.block_on(workflow.run_task("Should we build our agent runtime in Rust?", &console))?;
    rt.block_on(console.sink().flush()); // its events are all printed first
    let elapsed = started.elapsed();

    println!();
    println!(
        "aggregator input:\n{}",
        aggregator_input.lock().unwrap_or_else(|p| p.into_inner())
    );
    println!();
    println!("final response:\n{}", result.final_text());
    println!();
    println!("status: {}, turns: {}", result.status, result.turns);
    // Sequential, the branches would take 120 + (300 + 80) + 200 = 700 ms.
    println!(
        "wall time: {:.0} ms (the slowest branch alone sleeps 300 ms; all sleeps in a row: 700 ms)",
        elapsed.as_secs_f64() * 1e3
    );
    Ok(())
}

/// The subject of a plan or question, for the scripted answers.
fn topic(text: &str) -> &str {
    if text.contains("Rust") {
        "Rust"
    } else {
        "the topic"
    }
}
