//! The `troupe` command line.

// Everything the CLI prints to stderr goes through the secrets registry
// (`troupe::secrets`): these two shadow the standard macros in every
// module of the CLI declared below, so no message can print a key.
macro_rules! eprintln {
    () => { ::std::eprintln!() };
    ($($arg:tt)*) => {{
        let line = ::std::format!($($arg)*);
        ::std::eprintln!("{}", ::troupe::secrets::redact(&line));
    }};
}

macro_rules! eprint {
    ($($arg:tt)*) => {{
        let text = ::std::format!($($arg)*);
        ::std::eprint!("{}", ::troupe::secrets::redact(&text));
    }};
}

mod chat;
mod cluster;
mod console_text;
mod db;
mod end_line;
mod eval;
mod input;
mod interrupt;
mod lease;
mod log_writer;
mod mcp;
mod mcp_demo;
mod metrics;
mod otlp_probe;
mod prune;
mod render;
mod run;
mod run_fork;
mod run_start;
mod runs;
mod runs_show;
mod speakers;
mod store;
pub(crate) mod telemetry;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use clap::{Parser, Subcommand, ValueEnum};
use troupe::config::{BuildOptions, Config, ConfigError};
use troupe::{RunStatus, sink::EventSink};

/// Exit codes.
pub(crate) const OK: u8 = 0;
pub(crate) const FAILED: u8 = 1;
pub(crate) const INVALID: u8 = 2;
/// The run waits for answers (`--resume ID --answer REQUEST=TEXT`).
pub(crate) const WAITING: u8 = 3;
pub(crate) const INTERRUPTED: u8 = 130;

/// troupe: teams of LLM agents from a YAML file.
#[derive(Parser)]
#[command(name = "troupe", version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
    /// Which logs to print on stderr: a level (error, warn, info, debug,
    /// trace) or a filter (`troupe=debug,rmcp=warn`). Default: RUST_LOG,
    /// else warn.
    #[arg(long, global = true, value_name = "FILTER")]
    log_level: Option<String>,
    /// Exports spans over OTLP/HTTP to this collector (its base URL, e.g.
    /// http://localhost:4318). Default: OTEL_EXPORTER_OTLP_ENDPOINT, if
    /// set. Message contents are included only with
    /// TROUPE_CAPTURE_CONTENT=1.
    #[arg(long, global = true, value_name = "URL")]
    otlp: Option<String>,
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
    /// The cassette: `--record DIR`, `--replay DIR`, `--replay-mode`.
    #[command(flatten)]
    tape: crate::tape_args::TapeArgs,
}

/// `troupe db`'s subcommands.
#[derive(Subcommand)]
enum DbAction {
    /// Applies the schema migrations a PostgreSQL database lacks (stores
    /// also apply them when they open); exit 1 naming what failed.
    Migrate {
        /// The database: postgres://user:password@host:5432/dbname
        /// (default: $DATABASE_URL).
        #[arg(long)]
        url: Option<String>,
    },
}

/// `troupe runs`' subcommands.
#[derive(Subcommand)]
enum RunsAction {
    /// Deletes finished runs older than `--older-than` (or the config's
    /// `checkpoint.retention`), old checkpoints and idle sessions, and gives
    /// the space back (SQLite: VACUUM).
    Prune(prune::PruneArgs),
    /// Lists one run's checkpoints (id, superstep, time, last speaker,
    /// questions waiting) and where it was forked from: the ids
    /// `troupe run FILE --resume RUN --at CHECKPOINT [--fork]` takes.
    Show(runs_show::ShowArgs),
}

#[derive(Subcommand)]
enum Command {
    /// Runs the workflow on a task (from the argument, or stdin with `-`),
    /// or continues a run from its last checkpoint (`--resume`).
    ///
    /// Exit codes: 0 done, 1 failed, 2 invalid config or usage, 3 waiting
    /// for answers, 130 interrupted.
    Run(run::RunArgs),
    /// Evaluates a team on a suite of cases (SUITE.yaml): assertions,
    /// judges, repeats; a table, `--json`, `--junit`, and regressions
    /// against a `--baseline`.
    ///
    /// Exit codes: 0 every case passed and none regressed, 1 otherwise, 2
    /// an invalid suite.
    Eval(eval::EvalArgs),
    /// Lists the runs in the config's checkpoint store, newest first
    /// (`troupe runs prune FILE` deletes the old ones).
    #[command(args_conflicts_with_subcommands = true, subcommand_negates_reqs = true)]
    Runs {
        /// What else to do with the runs.
        #[command(subcommand)]
        action: Option<RunsAction>,
        /// The config file.
        #[arg(required = true)]
        file: Option<PathBuf>,
        /// One JSON object per run and line.
        #[arg(long)]
        json: bool,
    },
    /// Talks to the workflow: one user turn per line; `/exit` ends.
    Chat {
        /// The config file.
        file: PathBuf,
        /// Continues this stored conversation (with `--new`: starts it).
        #[arg(long, conflicts_with = "list")]
        session: Option<String>,
        /// Starts the `--session` conversation instead of continuing one.
        #[arg(long, conflicts_with = "list")]
        new: bool,
        /// Lists the stored conversations and exits.
        #[arg(long)]
        list: bool,
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
    /// Prints the JSON Schema of config files (with `--events`: of a line
    /// of `--events jsonl`).
    Schema {
        /// The schema of event lines instead.
        #[arg(long)]
        events: bool,
    },
    /// Prints the workflow as a Mermaid flowchart.
    Graph {
        /// The config file.
        file: PathBuf,
    },
    /// Serves the team (or every config of a directory) over HTTP until
    /// Ctrl-C or SIGTERM: an OpenAI-compatible endpoint, a runs API with
    /// live events, stored sessions, each team as an A2A agent. Loopback
    /// unless told otherwise; anything else needs TROUPE_SERVE_TOKEN.
    Serve(crate::serve::ServeArgs),
    /// Serves the team (or every config of a directory) as an MCP server on
    /// stdio until the client closes it: each team one tool, called with a
    /// `message`, answering with the team's answer (see README, "MCP server").
    Mcp(mcp::McpArgs),
    /// Manages a PostgreSQL database used as a checkpoint store.
    Db {
        /// What to do.
        #[command(subcommand)]
        action: DbAction,
    },
    /// Serves a small demo MCP server on stdio (for the MCP example).
    #[command(hide = true)]
    McpDemo,
}

/// Runs the command line; returns the exit code.
pub(crate) fn main() -> u8 {
    // This binary is also the helpers a stdio MCP server runs under, so
    // that it never outlives `troupe` (see `mcp_reaper`).
    use troupe::agents::tool::mcp_reaper;
    if let Some(code) = mcp_reaper::run_if_asked() {
        return code;
    }
    if let Ok(exe) = std::env::current_exe() {
        mcp_reaper::supervise_with(exe);
    }
    let cli = match Cli::try_parse() {
        Ok(c) => c,
        Err(e) => {
            let _ = e.print();
            return if e.use_stderr() { INVALID } else { OK };
        }
    };
    if let Err(e) = telemetry::init(cli.log_level.as_deref(), cli.otlp.as_deref()) {
        eprintln!("troupe: {e}");
        return INVALID;
    }
    let code = dispatch(cli.command);
    // Spans still batched go out before the exit, whatever the exit code.
    telemetry::shutdown();
    code
}

/// Runs one command; returns the exit code.
fn dispatch(command: Command) -> u8 {
    match command {
        Command::Schema { events: false } => emit(&format!("{}\n", schema_text())),
        Command::Schema { events: true } => emit(&format!(
            "{}\n",
            serde_json::to_string_pretty(&end_line::schema()).unwrap_or_default()
        )),
        Command::Validate {
            file,
            deny_warnings,
        } => with_runtime(|| validate(file, deny_warnings)),
        Command::Graph { file } => match Config::load(&file) {
            Ok(c) => emit(&c.mermaid()),
            Err(e) => report(&e),
        },
        Command::McpDemo => mcp_demo::serve(),
        Command::Db {
            action: DbAction::Migrate { url },
        } => with_runtime(|| db::migrate(url)),
        Command::Run(args) => with_runtime(|| run::run(args)),
        Command::Eval(args) => with_runtime(|| eval::eval(args)),
        Command::Runs {
            action: Some(RunsAction::Prune(args)),
            ..
        } => with_runtime(|| prune::prune(args)),
        Command::Runs {
            action: Some(RunsAction::Show(args)),
            ..
        } => with_runtime(|| runs_show::show(args)),
        Command::Runs {
            file: Some(file),
            json,
            ..
        } => with_runtime(|| runs::runs(file, json)),
        Command::Runs { file: None, .. } => {
            eprintln!("troupe: `troupe runs` needs a config file");
            INVALID
        }
        Command::Chat {
            file,
            session,
            new,
            list,
            output,
            cluster,
        } => with_runtime(|| async move {
            if list {
                chat::list(file).await
            } else {
                chat::chat(file, chat::Start { session, new }, output, cluster).await
            }
        }),
        Command::Node(args) => with_runtime(|| cluster::node(args)),
        Command::Serve(args) => with_runtime(|| crate::serve::serve(args)),
        Command::Mcp(args) => with_runtime(|| mcp::mcp(args)),
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

/// Writes `text` to stdout (registered secrets masked) and flushes it,
/// returning any error rather than panicking as `print!` does.
pub(crate) fn write_out(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(troupe::secrets::redact(text).as_bytes())?;
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
        eprintln!("{}", w.warning_line());
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
        if d.len() > troupe::config::MAX_DIAGNOSTICS {
            eprintln!(
                "more than {} problems found (the first listed)",
                troupe::config::MAX_DIAGNOSTICS
            );
        } else {
            eprintln!("{} problem(s) found", d.len());
        }
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

/// How to build for `output`'s flags; a cassette that cannot be opened
/// (`--record`, `--replay`) is said on stderr (exit 2).
pub(crate) fn build_options(output: &Output) -> Result<BuildOptions, u8> {
    let cassette = output.tape.open(false).map_err(|e| {
        eprintln!("troupe: {e}");
        INVALID
    })?;
    Ok(BuildOptions {
        offline: output.offline,
        troupe_exe: std::env::current_exe().ok(),
        cassette,
        ..BuildOptions::default()
    })
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

/// Where events go, and the console view if there is one.
pub(crate) fn sinks(
    output: &Output,
    config: &troupe::config::Config,
) -> (EventSink, Option<render::Console>) {
    if output.quiet {
        return (EventSink::None, None);
    }
    match output.events {
        EventsFormat::Jsonl => (EventSink::json_lines(std::io::stdout()), None),
        EventsFormat::Pretty => {
            let console = render::Console::new(speakers::step_agents(config));
            (console.sink(), Some(console))
        }
    }
}

/// A status as one word, as `--events jsonl` and `troupe runs --json`
/// print it: `completed`, `stopped`, `cancelled`, `interrupted`,
/// `waiting_for_input`, or `unfinished` (a checkpoint taken while the run
/// was under way).
pub(crate) fn status_key(status: Option<&RunStatus>) -> &'static str {
    match status {
        None => "unfinished",
        Some(RunStatus::Completed) => "completed",
        Some(RunStatus::Stopped(_)) => "stopped",
        Some(RunStatus::Cancelled) => "cancelled",
        Some(RunStatus::Interrupted) => "interrupted",
        Some(RunStatus::WaitingForInput(_)) => "waiting_for_input",
        // `RunStatus` is non-exhaustive: a status added later ended the
        // run without failing.
        Some(_) => "ended",
    }
}

/// For `chat`: the path a store location is shown as.
pub(crate) fn show(path: Option<&Path>) -> String {
    path.map_or_else(|| "memory".into(), |p| p.display().to_string())
}

/// Leaves the cluster, if the run joined one.
pub(crate) async fn leave(node: Option<troupe::cluster::Node>) {
    if let Some(n) = node {
        n.shutdown().await;
    }
}
