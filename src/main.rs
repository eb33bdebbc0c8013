//! `troupe`: run, chat with, check and draw declarative teams of agents.
//!
//! ```text
//! troupe run FILE [PROMPT | -]   run the workflow on a task
//! troupe chat FILE               talk to it (a session per conversation)
//! troupe validate FILE           check a config
//! troupe schema                  print the config's JSON Schema
//! troupe graph FILE              print the workflow as Mermaid
//! ```
//!
//! Exit codes: 0 done, 1 run failed, 2 invalid config (or usage), 130
//! interrupted.

mod cli;

fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(cli::main())
}
