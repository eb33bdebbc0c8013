//! `troupe`: run, chat with, check and draw declarative teams of agents.
//!
//! ```text
//! troupe run FILE [PROMPT | -]   run the workflow on a task
//! troupe run FILE --resume ID    continue a stored run (`latest`: the newest)
//! troupe runs FILE               list the runs in the config's store
//! troupe chat FILE               talk to it (a session per conversation)
//! troupe validate FILE           check a config
//! troupe eval SUITE              evaluate a team on a suite of cases
//! troupe schema                  print the config's JSON Schema
//! troupe graph FILE              print the workflow as Mermaid
//! troupe serve FILE|DIR          serve the team(s) over HTTP (OpenAI API, runs API)
//! troupe mcp FILE|DIR            serve the team(s) as MCP tools on stdio
//! troupe node --config FILE --name NODE --listen ADDR [--connect ADDR]...
//!                                host the agents placed on NODE until Ctrl-C
//! ```
//!
//! `run` and `chat` take `--connect ADDR` (repeatable) and `--listen ADDR`
//! to join a cluster first, so participants placed on other nodes (`node:`,
//! `agent@node`, `placement: spread`) are found. Nodes prove a shared
//! cookie, read from the `TROUPE_COOKIE` environment variable only.
//!
//! Every command takes `--log-level FILTER` (logs on stderr; default
//! `RUST_LOG`, else warn) and `--otlp URL` (spans over OTLP/HTTP; default
//! `OTEL_EXPORTER_OTLP_ENDPOINT`); `TROUPE_CAPTURE_CONTENT=1` puts message
//! contents in spans.
//!
//! Exit codes: 0 done (or a node stopped by Ctrl-C / SIGTERM), 1 run
//! failed, 2 invalid config (or usage, or no cookie, or an unknown run or
//! request id, or a checkpoint of a changed config), 3 waiting for input,
//! 130 interrupted.

#[cfg(all(unix, not(feature = "system-allocator")))]
mod allocator_options;
mod cli;
mod huge_pages;
mod mcp;
mod serve;
mod tape_args;

/// mimalloc: glibc's malloc spent ~35% of a busy server's time (the
/// `conc` benchmark) consolidating its free lists. See BENCHMARKS.md.
/// The `system-allocator` feature leaves it out, for heap profilers.
#[cfg(not(feature = "system-allocator"))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    #[cfg(all(unix, not(feature = "system-allocator")))]
    allocator_options::apply();
    huge_pages::turn_off();
    std::process::ExitCode::from(cli::main())
}
