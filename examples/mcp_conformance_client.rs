//! troupe's MCP client under the official conformance suite
//! (`@modelcontextprotocol/conformance`, client scenarios): the suite
//! starts a test server for a scenario and runs this program with the
//! server's URL as its last argument (and the scenario's name in
//! `MCP_CONFORMANCE_SCENARIO`).
//!
//! It does what an agent would: connects (`server/discover`, or the
//! session-era `initialize`), lists the tools and calls each with
//! arguments made from its schema. An elicitation is answered `defaults`,
//! as a user taking the form's defaults would (troupe's elicitation is the
//! run's human-in-the-loop question; here the answer is given up front).
//!
//! A server that answers 401 is authorized by OAuth (troupe's
//! [`McpOAuth`]); the step a person would take in a browser is done
//! headlessly here: the authorization URL is fetched and the code taken
//! from the redirect the test authorization server answers with at once.
//! A pre-registered client comes from the suite's context (`client_id`,
//! `client_secret`).
//!
//! Where the suite says which calls to make (`toolCalls` in the JSON of
//! `MCP_CONFORMANCE_CONTEXT`), it makes exactly those, with the given
//! arguments, as a model would. A tool taking a `schema` object is given
//! another tool's input schema as troupe received it (what the suite's
//! schema-preservation scenario echoes back and compares).
//!
//! ```text
//! npx @modelcontextprotocol/conformance client \
//!     --command "target/debug/examples/mcp_conformance_client" --scenario tools_call
//! ```

use std::error::Error;

use serde_json::{Map, Value, json};
use troupe_agents::{Authorized, McpClient, McpOAuth, McpServerConfig, McpToolInfo, ToolContext};

/// Arguments for a tool from its input schema: each property a plain
/// value of its type.
fn arguments(schema: &Value) -> Value {
    let mut out = Map::new();
    for (name, property) in schema["properties"].as_object().into_iter().flatten() {
        let value = match property["type"].as_str() {
            Some("number") | Some("integer") => json!(1),
            Some("boolean") => json!(true),
            Some("array") => json!([]),
            Some("object") => json!({}),
            _ => json!("x"),
        };
        out.insert(name.clone(), value);
    }
    Value::Object(out)
}

/// Where the authorization server sends the user back.
const REDIRECT_URI: &str = "http://localhost:3000/callback";

/// A client ID metadata document's URL offered to servers that take one.
const CLIENT_METADATA_URL: &str = "https://conformance-test.local/client-metadata.json";

/// The suite's context for the scenario (`{}` when none).
fn context() -> Value {
    std::env::var("MCP_CONFORMANCE_CONTEXT")
        .ok()
        .and_then(|c| serde_json::from_str(&c).ok())
        .unwrap_or_else(|| json!({}))
}

/// The headless authorization step: the authorization URL fetched without
/// following redirects, the redirect's URL (carrying the code) returned.
fn headless(auth_url: String) -> Authorized {
    Box::pin(async move {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| e.to_string())?;
        let answer = http
            .get(&auth_url)
            .send()
            .await
            .map_err(|e| e.to_string())?;
        answer
            .headers()
            .get(reqwest::header::LOCATION)
            .and_then(|l| l.to_str().ok())
            .map(str::to_string)
            .ok_or_else(|| {
                format!(
                    "no redirect from the authorization URL ({})",
                    answer.status()
                )
            })
    })
}

/// OAuth as the driver does it: headless, with the context's client.
fn oauth(context: &Value) -> McpOAuth {
    let mut oauth = McpOAuth::new(REDIRECT_URI, headless).client_metadata_url(CLIENT_METADATA_URL);
    if let Some(id) = context["client_id"].as_str() {
        let secret = context["client_secret"].as_str().map(str::to_string);
        oauth = oauth.client(id, secret);
    }
    oauth
}

/// The calls the suite asks for, if any: `(tool, arguments)`.
fn context_calls() -> Option<Vec<(String, Value)>> {
    let context: Value =
        serde_json::from_str(&std::env::var("MCP_CONFORMANCE_CONTEXT").ok()?).ok()?;
    let calls = context["toolCalls"].as_array()?;
    Some(
        calls
            .iter()
            .filter_map(|c| Some((c["name"].as_str()?.to_string(), c["arguments"].clone())))
            .collect(),
    )
}

/// Whether a tool's only required argument is a `schema` object.
fn takes_schema(tool: &McpToolInfo) -> bool {
    let schema = &tool.input_schema;
    schema["properties"]["schema"]["type"] == "object"
        && schema["required"].as_array().is_some_and(|r| r.len() == 1)
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let url = std::env::args()
        .next_back()
        .ok_or("usage: mcp_conformance_client SERVER_URL")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    eprintln!("scenario {scenario:?} against {url}");
    let config = McpServerConfig::http("conformance", url.as_str()).oauth(oauth(&context()));
    let client = McpClient::connect(config).await?;
    eprintln!("protocol {}", client.protocol());
    let tools = client.list_tools().await?;
    let calls = context_calls().unwrap_or_else(|| {
        tools
            .iter()
            .map(|tool| {
                let echoed = tools.iter().find(|other| other.name != tool.name);
                let args = match echoed {
                    Some(other) if takes_schema(tool) => json!({"schema": other.input_schema}),
                    _ => arguments(&tool.input_schema),
                };
                (tool.name.clone(), args)
            })
            .collect()
    });
    for (name, args) in calls {
        let mut ctx = ToolContext::detached(format!("call-{name}"));
        ctx.answers = vec!["defaults".to_string()];
        match client.call_tool_in(&name, args, Some(&ctx)).await {
            Ok(result) => println!("{name}: {}", result.text),
            Err(e) => println!("{name}: failed: {e}"),
        }
    }
    client.close().await;
    Ok(())
}
