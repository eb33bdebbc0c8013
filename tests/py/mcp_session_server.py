"""A 2025-11-25 (session era) MCP server written with the official Python
SDK (`mcp`), for tests/cli_mcp_eras.rs. It refuses `server/discover`
(as a server of that era does: method not found), so a client must open a
session with `initialize`. Its tools use what that era offers a server:
elicitation (form and URL), sampling, progress, and a call that waits to be
cancelled.

    python mcp_session_server.py PORT MARKER_DIR

serves streamable HTTP on 127.0.0.1:PORT/mcp; MARKER_DIR receives
`cancelled` when a call of `wait` is cancelled.
"""

import sys
from pathlib import Path

import anyio
from pydantic import BaseModel

from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from mcp_types import SamplingMessage, TextContent

PORT = int(sys.argv[1])
MARKERS = Path(sys.argv[2])


async def legacy_only(ctx, call_next):
    if ctx.method == "server/discover":
        raise MCPError(-32601, "Method not found: server/discover")
    return await call_next(ctx)


mcp = MCPServer("session-era", middleware=[legacy_only])


class Person(BaseModel):
    name: str
    age: int


@mcp.tool()
async def greet(ctx: Context) -> str:
    """Greets a person whose name and age it asks the user for."""
    answer = await ctx.elicit("Who should I greet?", Person)
    if answer.action != "accept":
        return f"nobody greeted ({answer.action})"
    return f"hello {answer.data.name}, {answer.data.age} [protocol {ctx.protocol_version}]"


@mcp.tool()
async def sign_in(ctx: Context) -> str:
    """Asks the user to sign in at a URL."""
    answer = await ctx.elicit_url("Sign in to continue", "https://example.test/sign-in", "e-1")
    return f"sign-in: {answer.action}"


@mcp.tool()
async def summarize(text: str, ctx: Context) -> str:
    """Summarizes a text with the client's model (sampling)."""
    try:
        result = await ctx.session.create_message(
            [SamplingMessage(role="user", content=TextContent(type="text", text=f"Summarize: {text}"))],
            max_tokens=50,
        )
    except Exception as e:  # the client's refusal, as the tool's answer
        return f"sampling failed: {e!r}"
    return f"summary: {result.content.text}"


@mcp.tool()
async def crunch(steps: int, ctx: Context) -> str:
    """Works through some steps, reporting progress on each."""
    for i in range(1, steps + 1):
        await ctx.report_progress(i, steps, f"step {i} of {steps}")
        await anyio.sleep(0.05)
    return f"crunched {steps}"


@mcp.tool()
async def wait(ctx: Context) -> str:
    """Waits until cancelled."""
    (MARKERS / "waiting").write_text("1")
    try:
        await anyio.sleep(3600)
    except anyio.get_cancelled_exc_class():
        (MARKERS / "cancelled").write_text("1")
        raise
    return "never"


@mcp.tool()
async def era(ctx: Context) -> str:
    """Says which protocol revision the call came under."""
    return f"session server speaks {ctx.protocol_version}"


if __name__ == "__main__":
    mcp.run("streamable-http", host="127.0.0.1", port=PORT)
