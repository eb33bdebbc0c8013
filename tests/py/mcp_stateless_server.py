"""A 2026-07-28 (stateless) MCP server written with the official Python SDK
(`mcp`), for tests/cli_mcp_eras.rs: no `initialize`, `server/discover`,
and multi-round-trip requests — its tool answers `input_required` with an
elicitation and finishes when the call comes back with the response.

    python mcp_stateless_server.py PORT

serves streamable HTTP on 127.0.0.1:PORT/mcp.
"""

import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult

PORT = int(sys.argv[1])

mcp = MCPServer("stateless-era")


@mcp.tool()
async def forecast(ctx: Context) -> str | InputRequiredResult:
    """The weather in a city it asks the user for."""
    responses = ctx.input_responses or {}
    city = responses.get("city")
    if city is None:
        return InputRequiredResult(
            input_requests={
                "city": ElicitRequest(
                    params=ElicitRequestFormParams(
                        message="Which city?",
                        requested_schema={
                            "type": "object",
                            "properties": {"city": {"type": "string"}},
                            "required": ["city"],
                        },
                    )
                )
            },
            request_state="asked-city",
        )
    if hasattr(city, "model_dump"):
        city = city.model_dump(by_alias=True)
    if city.get("action") != "accept":
        return f"no forecast ({city.get('action')})"
    return (
        f"sunny in {city['content']['city']} [protocol {ctx.protocol_version}, state {ctx.request_state}]"
    )


@mcp.tool()
async def era(ctx: Context) -> str:
    """Says which protocol revision the call came under."""
    return f"stateless server speaks {ctx.protocol_version}"


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=PORT)
