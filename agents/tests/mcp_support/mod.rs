//! What the MCP test binaries share: a test MCP server (served on stdio
//! by the test binary itself, when the environment asks it to, or over
//! streamable HTTP on 127.0.0.1), helpers, and a small test runner (the
//! targets have no libtest harness: filters by substring, `--list`, a
//! timeout per test).

#![allow(dead_code)]

use std::future::Future;
use std::panic::AssertUnwindSafe;
use std::pin::Pin;
use std::time::{Duration, Instant};

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{CallToolResult, ContentBlock};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ErrorData, ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;
use troupe_agents::McpServerConfig;
use troupe_runtime::CancellationToken;

/// A test: a future made fresh for each run.
pub type Test = fn() -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// `tests![a, b]`: the named async functions as a test table.
macro_rules! tests {
    ($($name:ident),* $(,)?) => {
        &[$((stringify!($name), (|| Box::pin($name())) as $crate::mcp_support::Test)),*]
    };
}

pub const SERVE: &str = "TROUPE_MCP_TEST_SERVE";

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct AddArgs {
    /// The first number.
    a: i64,
    /// The second number.
    b: i64,
}

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct SleepArgs {
    /// How long, in milliseconds.
    ms: u64,
}

#[derive(Debug, Clone)]
pub struct TestServer {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl TestServer {
    pub fn new() -> Self {
        TestServer {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Adds two integers.")]
    fn add(&self, Parameters(AddArgs { a, b }): Parameters<AddArgs>) -> String {
        (a + b).to_string()
    }

    #[tool(description = "Always fails.")]
    fn fail(&self) -> Result<CallToolResult, ErrorData> {
        Ok(CallToolResult::error(vec![ContentBlock::text(
            "the tool broke",
        )]))
    }

    #[tool(description = "Sleeps, then answers.")]
    async fn sleep(&self, Parameters(SleepArgs { ms }): Parameters<SleepArgs>) -> String {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        "woke up".into()
    }

    #[tool(description = "The names of the server's environment variables.")]
    fn env_names(&self) -> String {
        let mut names: Vec<String> = std::env::vars_os()
            .filter_map(|(k, _)| k.into_string().ok())
            .collect();
        names.sort();
        names.join(",")
    }

    #[tool(description = "The server's process id.")]
    fn pid(&self) -> String {
        std::process::id().to_string()
    }

    #[tool(description = "Makes the server process exit.")]
    fn crash(&self) -> String {
        std::process::exit(3)
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for TestServer {}

pub fn serve_stdio() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        if let Ok(service) = TestServer::new().serve(rmcp::transport::stdio()).await {
            let _ = service.waiting().await;
        }
    });
    // A pending stdin read would hold the runtime's shutdown: leave now.
    std::process::exit(0);
}

/// The stdio server: this binary in server mode.
pub fn stdio_config(name: &str) -> McpServerConfig {
    let exe = std::env::current_exe().expect("the test binary's path");
    McpServerConfig::stdio(name, exe.to_string_lossy())
        .env(SERVE, "stdio")
        .timeout(Duration::from_secs(5))
}

/// An HTTP server on 127.0.0.1; returns its URL, a token that stops its
/// sessions, and the task serving it.
pub async fn http_server() -> (String, CancellationToken, tokio::task::JoinHandle<()>) {
    let ct = CancellationToken::new();
    let service: StreamableHttpService<TestServer, LocalSessionManager> =
        StreamableHttpService::new(
            || Ok(TestServer::new()),
            Default::default(),
            StreamableHttpServerConfig::default().with_cancellation_token(ct.clone()),
        );
    let router = axum::Router::new().nest_service("/mcp", service);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let task = tokio::spawn(async move {
        let _ = axum::serve(listener, router).await;
    });
    (format!("http://{addr}/mcp"), ct, task)
}

/// Whether the process is gone and reaped (no zombie left).
pub fn reaped(pid: u32) -> bool {
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

pub async fn wait_until_reaped(pid: u32) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !reaped(pid) {
        assert!(Instant::now() < deadline, "process {pid} was not reaped");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The binary's `main`: serves MCP on stdio when asked to, else runs the
/// selected tests of `tests`.
pub fn main(tests: &[(&str, Test)]) {
    if std::env::var(SERVE).as_deref() == Ok("stdio") {
        serve_stdio();
        return;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.iter().any(|a| a == "--list") {
        for (name, _) in tests {
            println!("{name}: test");
        }
        return;
    }
    let exact = args.iter().any(|a| a == "--exact");
    let filters: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(String::as_str)
        .collect();
    let selected: Vec<&(&str, Test)> = tests
        .iter()
        .filter(|(name, _)| {
            filters.is_empty()
                || filters
                    .iter()
                    .any(|f| if exact { name == f } else { name.contains(f) })
        })
        .collect();
    let count = selected.len();
    println!("\nrunning {count} tests");
    let started = Instant::now();
    let mut failed = Vec::new();
    for (name, test) in selected {
        let test_started = Instant::now();
        let outcome = std::panic::catch_unwind(AssertUnwindSafe(|| {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("runtime");
            runtime.block_on(async {
                tokio::time::timeout(Duration::from_secs(30), test())
                    .await
                    .expect("the test hung")
            });
            runtime.shutdown_timeout(Duration::from_secs(5));
        }));
        println!(
            "test {name} ... {} ({:.2}s)",
            if outcome.is_ok() { "ok" } else { "FAILED" },
            test_started.elapsed().as_secs_f64()
        );
        if outcome.is_err() {
            failed.push(*name);
        }
    }
    println!(
        "\ntest result: {}. {} passed; {} failed; finished in {:.2}s\n",
        if failed.is_empty() { "ok" } else { "FAILED" },
        count - failed.len(),
        failed.len(),
        started.elapsed().as_secs_f64()
    );
    if !failed.is_empty() {
        println!("failures: {failed:?}");
        std::process::exit(101);
    }
}
