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
//! ```text
//! npx @modelcontextprotocol/conformance client \
//!     --command "target/debug/examples/mcp_conformance_client" --scenario tools_call
//! ```

use std::error::Error;

use serde_json::{Map, Value, json};
use troupe_agents::{McpClient, McpServerConfig, ToolContext};

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

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    let url = std::env::args()
        .next_back()
        .ok_or("usage: mcp_conformance_client SERVER_URL")?;
    let scenario = std::env::var("MCP_CONFORMANCE_SCENARIO").unwrap_or_default();
    eprintln!("scenario {scenario:?} against {url}");
    let client = McpClient::connect(McpServerConfig::http("conformance", url.as_str())).await?;
    eprintln!("protocol {}", client.protocol());
    let tools = client.list_tools().await?;
    for tool in tools {
        let mut ctx = ToolContext::detached(format!("call-{}", tool.name));
        ctx.answers = vec!["defaults".to_string()];
        match client
            .call_tool_in(&tool.name, arguments(&tool.input_schema), Some(&ctx))
            .await
        {
            Ok(result) => println!("{}: {}", tool.name, result.text),
            Err(e) => println!("{}: failed: {e}", tool.name),
        }
    }
    client.close().await;
    Ok(())
}
