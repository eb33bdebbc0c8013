//! `troupe mcp-demo`: a small MCP server on stdio, so the MCP example runs
//! on a fresh machine with nothing else installed. It serves an order
//! desk: `lookup_order` and `refund_policy`.

use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::{ServerHandler, ServiceExt, schemars, tool, tool_handler, tool_router};
use serde::Deserialize;

#[derive(Debug, Deserialize, schemars::JsonSchema)]
struct OrderArgs {
    /// The order number, such as `A-1001`.
    order_id: String,
}

#[derive(Debug, Clone)]
struct OrderDesk {
    tool_router: ToolRouter<Self>,
}

#[tool_router]
impl OrderDesk {
    fn new() -> Self {
        OrderDesk {
            tool_router: Self::tool_router(),
        }
    }

    #[tool(description = "Looks up an order: its status, items and delivery date.")]
    fn lookup_order(&self, Parameters(OrderArgs { order_id }): Parameters<OrderArgs>) -> String {
        match order_id.trim().to_uppercase().as_str() {
            "A-1001" => {
                "order A-1001: 1 × espresso machine, shipped 2024-05-02, delivered 2024-05-04"
                    .into()
            }
            "A-1002" => "order A-1002: 2 × milk jug, in the warehouse, ships tomorrow".into(),
            other => format!("no order {other}"),
        }
    }

    #[tool(description = "The refund policy, in one sentence.")]
    fn refund_policy(&self) -> String {
        "Delivered items can be returned for a full refund within 30 days.".into()
    }
}

#[tool_handler(router = self.tool_router)]
impl ServerHandler for OrderDesk {}

/// Serves until stdin closes.
pub(crate) fn serve() -> u8 {
    let Ok(runtime) = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
    else {
        eprintln!("troupe mcp-demo: cannot start a runtime");
        return 1;
    };
    runtime.block_on(async {
        match OrderDesk::new().serve(rmcp::transport::stdio()).await {
            Ok(service) => {
                let _ = service.waiting().await;
            }
            Err(e) => eprintln!("troupe mcp-demo: {e}"),
        }
    });
    // A pending stdin read would hold the runtime's shutdown: leave now.
    std::process::exit(0)
}
