//! The `troupe` command line.

mod chat;
mod cluster;
mod mcp_demo;
mod render;

use std::io::{IsTerminal, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::{Parser, Subcommand, ValueEnum};
use troupe::config::{BuildOptions, Built, Config, ConfigError};
use troupe::{EventSink, RunContext, RunResult, RunStatus};

/// Exit codes.
pub(crate) const OK: u8 = 0;
pub(crate) const FAILED: u8 = 1;
pub(crate) const INVALID: u8 = 2;
pub(crate) const INTERRUPTED: u8 = 130;

/// troupe: teams of LLM agents from a YAML file.
#[derive(Parser)]
#[command(name = "troupe", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// How events are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub(crate) enum EventsFormat {
    /// Readable lines (the default).
    Pretty,
    /// One JSON object per line (the last one is the result).
    Jsonl,
}

#[derive(clap::Args, Clone)]
pub(crate) struct Output {
    /// How to print events.
    #[arg(long, value_enum, default_value = "pretty")]
    events: EventsFormat,
    /// Print only the final response.
    #[arg(long, short)]
    quiet: bool,
    /// Run every `provider: auto` model scripted, even with an endpoint set.
    #[arg(long)]
    offline: bool,
}

#[derive(Subcommand)]
enum Command {
    /// Runs the workflow on a task (from the argument, or stdin with `-`).
    Run {
        /// The config file.
        file: PathBuf,
        /// The task; `-` (or nothing, when stdin is not a terminal) reads it from stdin.
        prompt: Option<String>,
        /// Names the run (checkpoints are saved under it).
        #[arg(long)]
        run_id: Option<String>,
        #[command(flatten)]
        output: Output,
        #[command(flatten)]
        cluster: cluster::ClusterArgs,
    },
    /// Talks to the workflow: one user turn per line; `/exit` ends.
    Chat {
        /// The config file.
        file: PathBuf,
        /// Continues this conversation from the configured store.
        #[arg(long)]
        session: Option<String>,
        #[command(flatten)]
        output: Output,
        #[command(flatten)]
        cluster: cluster::ClusterArgs,
    },
    /// Hosts the config's agents as a cluster node until Ctrl-C or
    /// SIGTERM: those it places on this node (`node: NAME`, `agent@NAME`,
    /// spread map-reduce workers), or every agent when it places none. The
    /// cookie comes from the TROUPE_COOKIE environment variable.
    Node(cluster::NodeArgs),
    /// Checks a config and lists every problem.
    Validate {
        /// The config file.
        file: PathBuf,
        /// Treats warnings (router cycles, unused models and agents) as
        /// errors.
        #[arg(long)]
        deny_warnings: bool,
    },
    /// Prints the JSON Schema of config files.
    Schema,
    /// Prints the workflow as a Mermaid flowchart.
    Graph {
        /// The config file.
        file: PathBuf,
    },
    /// Serves a small demo MCP server on stdio (for the MCP example).
    #[command(hide = true)]
    McpDemo,
}

/// Runs the command line; returns the exit code.
pub(crate) fn main() -> u8 {
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { INVALID } else { OK };
        }
    };
    match cli.command {
        Command::Schema => emit(&format!("{}\n", schema_text())),
        Command::Validate {
            file,
            deny_warnings,
        } => with_runtime(|| validate(file, deny_warnings)),
        Command::Graph { file } => match Config::load(&file) {
            Ok(c) => emit(&c.mermaid()),
            Err(e) => report(&e),
        },
        Command::McpDemo => mcp_demo::serve(),
        Command::Run {
            file,
            prompt,
            run_id,
            output,
            cluster,
        } => with_runtime(|| run(file, prompt, run_id, output, cluster)),
        Command::Chat {
            file,
            session,
            output,
            cluster,
        } => with_runtime(|| chat::chat(file, session, output, cluster)),
        Command::Node(args) => with_runtime(|| cluster::node(args)),
    }
}

/// Writes a command's whole output to stdout; returns the exit code.
///
/// `print!` would panic when stdout is closed (`troupe schema | head -1`);
/// a reader that went away is a failed write instead: exit code 1, and a
/// message unless the pipe was simply closed.
fn emit(text: &str) -> u8 {
    match write_out(text) {
        Ok(()) => OK,
        Err(e) => write_failed(&e),
    }
}

/// The exit code of a failed write to stdout: 1, with a message unless the
/// reader simply went away (EPIPE).
pub(crate) fn write_failed(e: &std::io::Error) -> u8 {
    if e.kind() != std::io::ErrorKind::BrokenPipe {
        eprintln!("troupe: cannot write to stdout: {e}");
    }
    FAILED
}

/// Writes `text` to stdout and flushes it, returning any error rather than
/// panicking as `print!` does.
pub(crate) fn write_out(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// The JSON Schema, as committed in `schema/troupe.schema.json`.
fn schema_text() -> String {
    serde_json::to_string_pretty(&troupe::config::json_schema()).unwrap_or_default()
}

/// `troupe validate`: loads the config and builds it as `run` would,
/// starting and connecting to nothing; prints every warning.
async fn validate(file: PathBuf, deny_warnings: bool) -> u8 {
    let config = match Config::load(&file) {
        Ok(c) => c,
        Err(e) => return report(&e),
    };
    let options = BuildOptions {
        troupe_exe: std::env::current_exe().ok(),
        ..BuildOptions::default()
    };
    let warnings = match config.check(&options).await {
        Ok(w) => w,
        Err(e) => return report(&e),
    };
    for w in &warnings {
        eprintln!("{}", warning_line(w));
    }
    if deny_warnings && !warnings.is_empty() {
        eprintln!(
            "{} warning(s) found, denied by --deny-warnings",
            warnings.len()
        );
        return INVALID;
    }
    emit(&format!(
        "{}: valid ({})\n",
        file.display(),
        summary(&config)
    ))
}

/// `FILE:LINE:COL: warning: field `x`: message`.
fn warning_line(d: &troupe::config::Diagnostic) -> String {
    let mut line = format!(
        "{}:{}:{}: warning: ",
        d.file.display(),
        d.position.line,
        d.position.column
    );
    if !d.field.is_empty() {
        line.push_str(&format!("field `{}`: ", d.field));
    }
    line.push_str(&d.message);
    line
}

fn summary(c: &Config) -> String {
    let s = c.spec();
    format!(
        "{} model(s), {} agent(s), workflow `{}`",
        s.models.len(),
        s.agents.len(),
        c.workflow_name()
    )
}

/// Prints a config error; returns its exit code.
pub(crate) fn report(e: &ConfigError) -> u8 {
    eprintln!("{e}");
    if let ConfigError::Invalid(d) = e {
        eprintln!("{} problem(s) found", d.len());
    }
    match e {
        ConfigError::Build(_) => FAILED,
        _ => INVALID,
    }
}

fn with_runtime<F, Fut>(f: F) -> u8
where
    F: FnOnce() -> Fut,
    Fut: std::future::Future<Output = u8>,
{
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("troupe: cannot start the async runtime: {e}");
            return FAILED;
        }
    };
    let code = runtime.block_on(f());
    // Whatever is still running (an MCP child's reader, a stdin read) must
    // not hold the exit.
    runtime.shutdown_timeout(Duration::from_millis(200));
    code
}

pub(crate) fn build_options(output: &Output) -> BuildOptions {
    BuildOptions {
        offline: output.offline,
        troupe_exe: std::env::current_exe().ok(),
        ..BuildOptions::default()
    }
}

fn millis() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis())
}

/// A run id from the workflow's name: one safe path component.
pub(crate) fn make_id(prefix: &str) -> String {
    let clean: String = prefix
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '-' || c == '_' {
                c
            } else {
                '-'
            }
        })
        .take(40)
        .collect();
    format!("{clean}-{}", millis())
}

fn read_prompt(prompt: Option<String>) -> Result<String, String> {
    match prompt.as_deref() {
        Some("-") => read_stdin(),
        Some(p) => Ok(p.to_string()),
        None if !std::io::stdin().is_terminal() => read_stdin(),
        None => {
            Err("no task given: `troupe run FILE \"a task\"`, or `-` to read it from stdin".into())
        }
    }
}

fn read_stdin() -> Result<String, String> {
    let mut text = String::new();
    std::io::stdin()
        .read_to_string(&mut text)
        .map_err(|e| format!("cannot read the task from stdin: {e}"))?;
    let text = text.trim().to_string();
    if text.is_empty() {
        Err("the task read from stdin is empty".into())
    } else {
        Ok(text)
    }
}

/// Where events go, and the console view if there is one.
pub(crate) fn sinks(output: &Output) -> (EventSink, Option<render::Console>) {
    if output.quiet {
        return (EventSink::None, None);
    }
    match output.events {
        EventsFormat::Jsonl => (EventSink::json_lines(std::io::stdout()), None),
        EventsFormat::Pretty => {
            let console = render::Console::new();
            (console.sink(), Some(console))
        }
    }
}

/// Cancels `ctx` on Ctrl-C; a second Ctrl-C exits at once.
pub(crate) fn on_interrupt(ctx: &RunContext) -> Arc<AtomicBool> {
    let flag = Arc::new(AtomicBool::new(false));
    let (f, ctx) = (flag.clone(), ctx.clone());
    tokio::spawn(async move {
        if tokio::signal::ctrl_c().await.is_ok() {
            f.store(true, Ordering::SeqCst);
            eprintln!("\ninterrupted: stopping the run (Ctrl-C again to quit at once)");
            ctx.cancel();
            if tokio::signal::ctrl_c().await.is_ok() {
                std::process::exit(i32::from(INTERRUPTED));
            }
        }
    });
    flag
}

async fn run(
    file: PathBuf,
    prompt: Option<String>,
    run_id: Option<String>,
    output: Output,
    cluster: cluster::ClusterArgs,
) -> u8 {
    let config = match Config::load(&file) {
        Ok(c) => c,
        Err(e) => return report(&e),
    };
    let task = match read_prompt(prompt) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("troupe run: {e}");
            return INVALID;
        }
    };
    let chatty = !output.quiet && output.events == EventsFormat::Pretty;
    let node = match cluster::join(&file, &config, &cluster, chatty).await {
        Ok(n) => n,
        Err(code) => return code,
    };
    let built = match config.build(&build_options(&output)).await {
        Ok(b) => b,
        Err(e) => {
            leave(node).await;
            return report(&e);
        }
    };
    if chatty {
        for note in &built.notes {
            eprintln!("{note}");
        }
    }
    let run_id = run_id.unwrap_or_else(|| make_id(&config.workflow_name()));
    let (sink, console) = sinks(&output);
    let ctx = RunContext::with_sink(sink.clone()).with_run_id(run_id.clone());
    let interrupted = on_interrupt(&ctx);
    let result = built.workflow.run_task(task, &ctx).await;
    // Every event is out before the result line and the exit.
    sink.flush().await;
    if let Some(c) = console {
        c.finish();
    }
    let code = finish(
        &built,
        &run_id,
        result,
        &output,
        interrupted.load(Ordering::SeqCst),
    );
    built.close().await;
    leave(node).await;
    code
}

/// Leaves the cluster, if the run joined one.
pub(crate) async fn leave(node: Option<troupe::cluster::Node>) {
    if let Some(n) = node {
        n.shutdown().await;
    }
}

fn checkpoint_note(built: &Built, run_id: &str, result: &RunResult) -> Option<String> {
    let store = built.store.as_ref()?;
    let id = result.checkpoint?;
    let place = store
        .location
        .as_deref()
        .map_or_else(|| "memory".to_string(), |p| p.display().to_string());
    Some(format!(
        "checkpoint {id} of run `{run_id}` saved ({:?} store at {place})",
        store.kind
    ))
}

fn finish(
    built: &Built,
    run_id: &str,
    result: Result<RunResult, troupe::RunError>,
    output: &Output,
    interrupted: bool,
) -> u8 {
    match result {
        Ok(r) => {
            // What goes to stdout, written at once so that a failed write
            // is seen.
            let out = if output.events == EventsFormat::Jsonl && !output.quiet {
                let line = serde_json::json!({
                    "type": "result",
                    "status": r.status.to_string(),
                    "final_response": r.final_text(),
                    "turns": r.turns,
                    "usage": r.usage,
                    "run_id": run_id,
                    "checkpoint": r.checkpoint.map(|c| c.to_string()),
                });
                format!("{line}\n")
            } else if output.quiet {
                format!("{}\n", r.final_text())
            } else if !(r.status == RunStatus::Cancelled && r.final_text().is_empty()) {
                let color =
                    std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
                let rule = "── final response ──";
                let rule = if color {
                    format!("\x1b[1m{rule}\x1b[0m")
                } else {
                    rule.into()
                };
                format!("\n{rule}\n{}\n", r.final_text())
            } else {
                String::new()
            };
            let written = write_out(&out);
            if let Some(note) = checkpoint_note(built, run_id, &r) {
                eprintln!("{note}");
            }
            if let RunStatus::WaitingForInput(requests) = &r.status {
                for q in requests {
                    eprintln!("{} asks ({}): {}", q.agent, q.id, q.prompt);
                }
            }
            let code = match r.status {
                _ if interrupted => INTERRUPTED,
                RunStatus::Cancelled => FAILED,
                _ => OK,
            };
            match written {
                Ok(()) => code,
                // Output lost fails a run that would have passed; an
                // interrupted or cancelled run keeps its own code.
                Err(e) => {
                    let failed = write_failed(&e);
                    if code == OK { failed } else { code }
                }
            }
        }
        Err(e) => {
            if interrupted {
                eprintln!("interrupted: {e}");
                return INTERRUPTED;
            }
            eprintln!("run failed: {e}");
            if output.events == EventsFormat::Jsonl && !output.quiet {
                let line =
                    serde_json::json!({"type": "error", "error": e.to_string(), "run_id": run_id});
                if let Err(e) = write_out(&format!("{line}\n")) {
                    // The run failed either way; the lost line is said too.
                    write_failed(&e);
                }
            }
            FAILED
        }
    }
}

/// For `chat`: the path a store location is shown as.
pub(crate) fn show(path: Option<&Path>) -> String {
    path.map_or_else(|| "memory".into(), |p| p.display().to_string())
}
