//! `troupe serve`: teams behind HTTP — an OpenAI-compatible endpoint, a
//! runs API with live events over SSE, stored sessions, each team as an
//! A2A agent (`a2a/`) and as an MCP tool (`/mcp`, `mcp.rs`), and a description of each team (the HTTP contract is in the README's "Serve a team").
//!
//! Safe by default: loopback unless `--listen` says otherwise, and then
//! only with a bearer token (`TROUPE_SERVE_TOKEN`), checked on every route;
//! request bodies, concurrent runs and open connections are bounded, and a
//! connection is held to header, body and idle timeouts (`listen.rs`,
//! `conn.rs`, `intake.rs`); CORS is off unless
//! `--cors ORIGIN`. Ctrl-C or SIGTERM stops accepting, stops the runs in
//! flight gracefully (their turns finish and a checkpoint is saved when the
//! config has a store) and exits.

mod a2a;
mod agui;
mod app;
mod auth;
mod board;
mod body;
mod completion;
mod conn;
mod console;
mod cors;
mod deliver;
mod describe;
mod drive;
mod error;
mod event_log;
mod events;
mod fork;
mod intake;
mod lease_ahead;
mod lease_note;
mod limits;
mod listen;
mod mcp;
mod openai;
mod query;
mod registry;
mod retention;
mod run;
mod run_control;
mod runs;
mod schedules;
mod sessions;
mod settings;
mod shutdown;
mod start;
mod state;
mod takeover;
mod takeover_run;
pub(crate) mod team;
mod texting;
mod texting_table;
mod webhook;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use troupe::secrets::redact;

/// Exit codes (as the rest of the CLI).
const OK: u8 = 0;
const FAILED: u8 = 1;
const INVALID: u8 = 2;

/// The environment variable holding the bearer token.
pub(crate) const TOKEN_ENV: &str = "TROUPE_SERVE_TOKEN";

/// `troupe serve`'s arguments.
#[derive(clap::Args, Clone)]
pub(crate) struct ServeArgs {
    /// A config file, or a directory of them (each team served under its
    /// name).
    pub(crate) path: PathBuf,
    /// Where to listen. Anything but a loopback address needs
    /// TROUPE_SERVE_TOKEN set. Port 0 picks a free one (printed).
    #[arg(long, default_value = "127.0.0.1:8080")]
    pub(crate) listen: SocketAddr,
    /// The largest request body accepted, in bytes (larger: 413, refused
    /// from its Content-Length before it is read) [default: 1048576].
    #[arg(long, value_name = "BYTES")]
    pub(crate) max_body: Option<usize>,
    /// How many runs may be under way at once (more: 429) [default: 64].
    #[arg(long, value_name = "N")]
    pub(crate) max_runs: Option<usize>,
    /// How many connections may be open at once; one more is answered 503
    /// and closed [default: 512].
    #[arg(long, value_name = "N")]
    pub(crate) max_connections: Option<usize>,
    /// Seconds a request's head (request line and headers) may take to
    /// arrive; slower, the connection is closed [default: 10].
    #[arg(long, value_name = "SECS")]
    pub(crate) header_timeout: Option<f64>,
    /// Seconds a request's body may take to arrive (slower: 408)
    /// [default: 30].
    #[arg(long, value_name = "SECS")]
    pub(crate) body_timeout: Option<f64>,
    /// Seconds a keep-alive connection may wait idle for its next request
    /// [default: 60].
    #[arg(long, value_name = "SECS")]
    pub(crate) idle_timeout: Option<f64>,
    /// Allows this origin to call the API from a browser (CORS); off by
    /// default.
    #[arg(long, value_name = "ORIGIN")]
    pub(crate) cors: Option<String>,
    /// Seconds the runs under way get to finish their turns after Ctrl-C
    /// or SIGTERM before they are cancelled.
    #[arg(long, value_name = "SECS", default_value_t = 10.0)]
    pub(crate) grace: f64,
    /// Runs every `provider: auto` model scripted, even with an endpoint set.
    #[arg(long)]
    pub(crate) offline: bool,
    /// The cassette: `--record DIR` (each run into DIR/<run id>/),
    /// `--replay DIR` (every run replays DIR), `--replay-mode`.
    #[command(flatten)]
    pub(crate) tape: crate::tape_args::TapeArgs,
}

/// `troupe serve`; returns the exit code.
pub(crate) async fn serve(args: ServeArgs) -> u8 {
    let token = std::env::var(TOKEN_ENV).ok().filter(|t| !t.is_empty());
    if let Err(why) = auth::check_bind(args.listen, token.is_some()) {
        say(&format!("troupe serve: {why}"));
        return INVALID;
    }
    let Ok(grace) = Duration::try_from_secs_f64(args.grace) else {
        say(&format!(
            "troupe serve: --grace takes a number of seconds, 0 or more (got {})",
            args.grace
        ));
        return INVALID;
    };
    let cors = match args.cors.as_deref().map(cors::Cors::new).transpose() {
        Ok(c) => c,
        Err(why) => {
            say(&format!("troupe serve: {why}"));
            return INVALID;
        }
    };
    let cassette = match args.tape.open(true) {
        Ok(c) => c,
        Err(e) => {
            say(&format!("troupe serve: {e}"));
            return INVALID;
        }
    };
    let teams = match team::load_all(&args.path, args.offline, cassette.as_ref()).await {
        Ok(t) => t,
        Err(e) => {
            say(&e.message);
            return e.code;
        }
    };
    let settings = match settings::resolve(&args, &teams) {
        Ok(s) => s,
        Err(why) => {
            say(&format!("troupe serve: {why}"));
            return INVALID;
        }
    };
    let listener = match tokio::net::TcpListener::bind(args.listen).await {
        Ok(l) => l,
        Err(e) => {
            say(&format!(
                "troupe serve: cannot listen on {}: {e}",
                args.listen
            ));
            return FAILED;
        }
    };
    let addr = listener.local_addr().unwrap_or(args.listen);
    let state = state::State::new(teams, token.map(Arc::from), limits::Limits::new(&settings));
    let names: Vec<&str> = state.teams.keys().map(String::as_str).collect();
    say(&format!(
        "troupe serve: {} on http://{addr} (Ctrl-C to stop)",
        names.join(", ")
    ));
    board::start(&state);
    a2a::start_push(&state);
    retention::start(&state);
    takeover::start(&state);
    schedules::start(&state);
    let router = app::router(state.clone(), cors);
    let code = shutdown::run(listener, router, state.clone(), grace).await;
    for t in state.teams.values() {
        t.built.close().await;
    }
    code
}

/// Prints a line on stderr, registered secrets masked.
pub(crate) fn say(line: &str) {
    eprintln!("{}", redact(line));
}
