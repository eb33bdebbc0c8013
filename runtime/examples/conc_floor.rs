//! The floor of the `conc` workload (`../shared/bench/WORKLOADS.md`) for a
//! design where every agent is an actor: K concurrent runs of a 3-agent
//! round robin of M messages, each agent a ractor actor shared by every
//! run, each turn a wait of L ms (the model call) and a short reply — and
//! nothing else: no threads, no routing, no stop condition, no context, no
//! model request. Whatever troupe does on top, its `conc` wall time cannot
//! go below what this prints.
//!
//! How a run is driven (`--run`):
//!
//! - `inline`: troupe's own way. The run, a plain task (as `RunTask`),
//!   sends each turn to its agent's actor; the actor polls the turn once
//!   (the model call starts its timer) and hands the waiting turn back to
//!   the run, which polls it to its end (as `InlineTurn`).
//! - `task`: the actor starts a task for each turn, which replies to the
//!   run's task through a oneshot (troupe's way for a turn beside others).
//! - `actor`: as `task`, the run a ractor actor the replies are cast to
//!   (as `RunActor`).
//! - `bare`: no actor at all; each run is one task that waits L ms M − 1
//!   times in a row — the async runtime's own floor (its timers, wake-ups
//!   and task polls), below which no design on tokio goes.
//!
//! On a current-thread runtime (`--threads 1`, as `conc_probe`) or a
//! multi-thread one.
//!
//! ```text
//! cargo run --release -p troupe-runtime --example conc_floor -- --k 10000 --run task --threads 1
//! ```
//!
//! Prints one JSON line: `k`, `run`, `threads`, `wall_s`, `ideal_s`, `ratio`.

use std::error::Error;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use ractor::{Actor, ActorProcessingErr, ActorRef};
use tokio::sync::oneshot;

type BoxError = Box<dyn Error + Send + Sync>;

/// An agent: one actor serving every run's turns.
struct Agent {
    latency: Duration,
}

/// A turn that waits, handed back to its run to be polled there.
type Waiting = Pin<Box<dyn Future<Output = String> + Send>>;

/// Where a turn's reply goes.
enum ReplyTo {
    /// A run's task, awaiting it.
    Task(oneshot::Sender<String>),
    /// A run's task, which polls the turn to its end once the actor's
    /// first poll left it waiting (as troupe's `InlineTurn`).
    Inline(oneshot::Sender<Waiting>),
    /// A run's actor.
    Actor(ActorRef<RunMsg>),
}

/// A turn over the last message.
struct Turn {
    text: String,
    reply: ReplyTo,
}

// With ractor's `cluster` feature (on in troupe) a message says it stays
// in the process.
troupe_runtime::local_message!(Turn);
troupe_runtime::local_message!(RunMsg);

impl Actor for Agent {
    type Msg = Turn;
    type State = ();
    type Arguments = ();

    async fn pre_start(&self, _: ActorRef<Turn>, _: ()) -> Result<(), ActorProcessingErr> {
        Ok(())
    }

    async fn handle(
        &self,
        _: ActorRef<Turn>,
        turn: Turn,
        _: &mut (),
    ) -> Result<(), ActorProcessingErr> {
        let latency = self.latency;
        let turn = match turn.reply {
            // troupe's way: the actor polls the turn once (the model call
            // starts its timer), then hands it to its run's task.
            ReplyTo::Inline(tx) => {
                let text = turn.text;
                let mut waiting: Waiting = Box::pin(async move {
                    tokio::time::sleep(latency).await;
                    format!("ok {}", text.len())
                });
                // A turn done on its first poll (no latency) goes back
                // done, so its run still gets its reply.
                if let std::task::Poll::Ready(out) = futures::poll!(&mut waiting) {
                    waiting = Box::pin(std::future::ready(out));
                }
                let _ = tx.send(waiting);
                return Ok(());
            }
            reply => Turn {
                text: turn.text,
                reply,
            },
        };
        // The model call runs beside the actor, as a turn beside others
        // does in troupe.
        tokio::spawn(async move {
            tokio::time::sleep(latency).await;
            let out = format!("ok {}", turn.text.len());
            match turn.reply {
                ReplyTo::Task(tx) => {
                    let _ = tx.send(out);
                }
                ReplyTo::Actor(run) => {
                    let _ = run.cast(RunMsg(out));
                }
                ReplyTo::Inline(_) => {}
            }
        });
        Ok(())
    }
}

/// A reply, to a run's actor.
struct RunMsg(String);

/// A run as a ractor actor.
struct RunActor;

/// A run actor's state.
struct RunState {
    agents: Vec<ActorRef<Turn>>,
    messages: u64,
    m: u64,
    done: Option<oneshot::Sender<u64>>,
}

impl Actor for RunActor {
    type Msg = RunMsg;
    type State = RunState;
    type Arguments = (Vec<ActorRef<Turn>>, u64, oneshot::Sender<u64>);

    async fn pre_start(
        &self,
        myself: ActorRef<RunMsg>,
        (agents, m, done): Self::Arguments,
    ) -> Result<RunState, ActorProcessingErr> {
        agents[0].cast(Turn {
            text: "go".into(),
            reply: ReplyTo::Actor(myself),
        })?;
        Ok(RunState {
            agents,
            messages: 1,
            m,
            done: Some(done),
        })
    }

    async fn handle(
        &self,
        myself: ActorRef<RunMsg>,
        RunMsg(text): RunMsg,
        s: &mut RunState,
    ) -> Result<(), ActorProcessingErr> {
        s.messages += 1;
        if s.messages >= s.m {
            if let Some(done) = s.done.take() {
                let _ = done.send(s.messages);
            }
            myself.stop(None);
            return Ok(());
        }
        let next = &s.agents[(s.messages % s.agents.len() as u64) as usize];
        next.cast(Turn {
            text,
            reply: ReplyTo::Actor(myself),
        })?;
        Ok(())
    }
}

/// One run as a plain task: a turn, its reply awaited, the next. With
/// `inline`, each turn comes back waiting and the task polls it to its end.
async fn run_as_task(agents: Vec<ActorRef<Turn>>, m: u64, inline: bool) -> Result<u64, BoxError> {
    let mut text = "go".to_string();
    for i in 1..m {
        let agent = &agents[(i % agents.len() as u64) as usize];
        text = if inline {
            let (tx, rx) = oneshot::channel();
            agent.cast(Turn {
                text,
                reply: ReplyTo::Inline(tx),
            })?;
            rx.await?.await
        } else {
            let (tx, rx) = oneshot::channel();
            agent.cast(Turn {
                text,
                reply: ReplyTo::Task(tx),
            })?;
            rx.await?
        };
    }
    Ok(m)
}

/// One run as a ractor actor.
async fn run_as_actor(agents: Vec<ActorRef<Turn>>, m: u64) -> Result<u64, BoxError> {
    let (tx, rx) = oneshot::channel();
    Actor::spawn(None, RunActor, (agents, m, tx)).await?;
    Ok(rx.await?)
}

/// How a run is driven (`--run`).
#[derive(Clone, Copy, PartialEq)]
enum Run {
    /// A plain task awaiting each reply of the shared agent actors.
    Task,
    /// A plain task the shared agent actors hand each waiting turn back
    /// to, after their first poll: troupe's own way.
    Inline,
    /// A ractor actor the shared agent actors' replies are cast to.
    Actor,
    /// No actor: a task waiting out each model call itself.
    Bare,
}

impl Run {
    fn name(self) -> &'static str {
        match self {
            Run::Task => "task",
            Run::Inline => "inline",
            Run::Actor => "actor",
            Run::Bare => "bare",
        }
    }
}

/// One run with no actor: M − 1 waits of L ms in a row, each "reply" a
/// short string as the agents' are.
async fn run_bare(latency: Duration, m: u64) -> Result<u64, BoxError> {
    let mut text = "go".to_string();
    for _ in 1..m {
        tokio::time::sleep(latency).await;
        text = format!("ok {}", text.len());
    }
    Ok(m)
}

struct Args {
    k: usize,
    m: u64,
    latency: Duration,
    run: Run,
    threads: usize,
}

fn parse_args() -> Result<Args, BoxError> {
    let mut parsed = Args {
        k: 10_000,
        m: 10,
        latency: Duration::from_millis(20),
        run: Run::Task,
        threads: 1,
    };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or_else(|| format!("{flag} needs a value"))?;
        match flag.as_str() {
            "--k" => parsed.k = value.replace('_', "").parse()?,
            "--m" => parsed.m = value.parse()?,
            "--latency-ms" => parsed.latency = Duration::from_millis(value.parse()?),
            "--run" => {
                parsed.run = match value.as_str() {
                    "task" => Run::Task,
                    "inline" => Run::Inline,
                    "actor" => Run::Actor,
                    "bare" => Run::Bare,
                    other => {
                        return Err(format!(
                            "--run takes task, inline, actor or bare, not {other}"
                        )
                        .into());
                    }
                }
            }
            "--threads" => parsed.threads = value.parse()?,
            other => return Err(format!("unknown flag {other}").into()),
        }
    }
    Ok(parsed)
}

async fn floor(args: &Args) -> Result<String, BoxError> {
    let mut agents = Vec::new();
    for _ in 0..3 {
        let (agent, _) = Actor::spawn(
            None,
            Agent {
                latency: args.latency,
            },
            (),
        )
        .await?;
        agents.push(agent);
    }
    let started = Instant::now();
    let mut runs = Vec::with_capacity(args.k);
    for _ in 0..args.k {
        let agents = agents.clone();
        let (m, run, latency) = (args.m, args.run, args.latency);
        runs.push(tokio::spawn(async move {
            match run {
                Run::Task => run_as_task(agents, m, false).await,
                Run::Inline => run_as_task(agents, m, true).await,
                Run::Actor => run_as_actor(agents, m).await,
                Run::Bare => run_bare(latency, m).await,
            }
        }));
    }
    for run in runs {
        let messages = run.await??;
        if messages != args.m {
            return Err(format!("a run ended with {messages} messages").into());
        }
    }
    let wall = started.elapsed().as_secs_f64();
    let ideal = (args.m - 1) as f64 * args.latency.as_secs_f64();
    Ok(format!(
        "{{\"bench\":\"conc_floor\",\"k\":{},\"run\":\"{}\",\"threads\":{},\"wall_s\":{wall:.4},\"ideal_s\":{ideal},\"ratio\":{}}}",
        args.k,
        args.run.name(),
        args.threads,
        // No ratio to an ideal of zero (`--latency-ms 0`): JSON has no inf.
        if ideal > 0.0 {
            format!("{:.3}", wall / ideal)
        } else {
            "null".to_string()
        }
    ))
}

/// The `troupe` binary's allocator (src/main.rs), so the figures are what
/// it runs at.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> Result<(), BoxError> {
    let args = parse_args()?;
    let rt = if args.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.threads)
            .enable_all()
            .build()?
    };
    println!("{}", rt.block_on(floor(&args))?);
    Ok(())
}
