"""Drives troupe's MCP server with the official Python SDK (`mcp`) as a
user's client would, and checks what it sees (tests/mcp_sdk.rs runs it).

    mcp_team_client.py --mode legacy|2026-07-28 --troupe BIN --dir DIR
        (--stdio | --url URL --token TOKEN)

DIR holds copies of examples/configs/durable.yaml (`release-notes`: three
scripted steps of a second each, a SQLite store) and
examples/configs/human_in_the_loop.yaml (`refund-desk`: a question, an
approval and a sign-off). With --stdio the client spawns `troupe mcp DIR`;
with --url it talks to `troupe serve DIR`'s /mcp with the bearer token.
Checks: the teams are listed as tools with a `message` input (a call
without one is the tool's error, an unknown tool a protocol error); a call
answers the team's answer and progress arrives on the way; the team's three
questions come as elicitations, answered, and the run goes on to its
answer; a call cancelled while the team works stops the run (the store
lists it cancelled, its last step never ran). Prints `ok: ...` per check;
any failure raises (exit code 1).
"""

import argparse
import json
import subprocess
import sys
import time

import anyio
import httpx2
import mcp_types as types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

NOTES = (
    "Interrupted runs resume where they stopped (`troupe run FILE --resume ID`);"
    " `troupe runs FILE` lists them."
)
ANSWERS = {
    "Which order": "Order A-1001, charged 49.99 twice.",
    "approve calculator": "yes",
    "Sign the refund off": "Approved: refund sent to the customer.",
}


def check(cond, what):
    if not cond:
        raise SystemExit(f"FAILED: {what}")
    print(f"ok: {what}", flush=True)


def connect(args, **kw):
    if args.stdio:
        server = StdioServerParameters(command=args.troupe, args=["mcp", args.dir, "--offline"])
    else:
        http = httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {args.token}"},
            timeout=httpx2.Timeout(30.0, read=60.0),
        )
        server = streamable_http_client(args.url, http_client=http)
    return Client(server, mode=args.mode, **kw)


def newest_run(args):
    out = subprocess.run(
        [args.troupe, "runs", "--json", f"{args.dir}/durable.yaml"],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.splitlines()[0])


async def main(args):
    asked = []
    schemas = []

    async def elicit(ctx, params):
        asked.append(params.message)
        schemas.append(params.requested_schema)
        for start, answer in ANSWERS.items():
            if params.message.startswith(start):
                return types.ElicitResult(action="accept", content={"answer": answer})
        return types.ElicitResult(action="decline")

    async with connect(args, elicitation_callback=elicit) as client:
        check(client.protocol_version == args.mode if args.mode != "legacy" else client.protocol_version == "2025-11-25",
              f"protocol version {client.protocol_version} for mode {args.mode}")

        tools = {t.name: t for t in (await client.list_tools()).tools}
        check({"release-notes", "refund-desk"} <= set(tools), f"teams listed as tools: {sorted(tools)}")
        schema = tools["release-notes"].input_schema
        check(schema["properties"]["message"]["type"] == "string" and schema["required"] == ["message"],
              "a tool's input is a required `message` string")

        result = await client.call_tool("release-notes", {})
        check(result.is_error and "takes a `message`" in result.content[0].text,
              f"a call without `message` is the tool's error: {result.content[0].text!r}")
        try:
            await client.call_tool("no-such-team", {"message": "hi"})
            check(False, "an unknown tool is refused")
        except MCPError as e:
            check("no tool `no-such-team`" in e.error.message and e.error.code == -32602,
                  f"an unknown tool is refused: {e.error.message}")

        progress = []

        async def on_progress(value, total, message):
            progress.append((value, message))

        result = await client.call_tool("release-notes", {"message": "Write the release notes"},
                                        progress_callback=on_progress)
        check(not result.is_error and result.content[0].text == NOTES, "the call answers the team's answer")
        values = [v for v, _ in progress]
        check(len(progress) >= 6 and values == sorted(values), f"{len(progress)} progress notifications, increasing")
        said = " | ".join(m or "" for _, m in progress)
        check("release-notes/collector" in said and "release-notes/editor" in said,
              "progress follows the run's turns")

        result = await client.call_tool("refund-desk", {"message": "I was charged twice"})
        check([a.split(" ")[0] for a in asked] == ["Which", "approve", "Sign"],
              f"the team's three questions came as elicitations: {asked}")
        check(all("answer" in s.get("properties", {}) for s in schemas), "each elicitation asks for an `answer`")
        check(not result.is_error and result.content[0].text == ANSWERS["Sign the refund off"],
              f"answered, the run goes on to its answer: {result.content[0].text!r}")

        if args.mode == "2026-07-28":
            # The stateless round trip by hand: the question comes back as an
            # InputRequiredResult; a forged requestState names no run; a
            # declined question cancels the run, and its state is spent.
            session = client.session
            first = await session.call_tool("refund-desk", {"message": "charged twice"},
                                            allow_input_required=True)
            check(isinstance(first, types.InputRequiredResult) and first.request_state
                  and len(first.input_requests) == 1,
                  "a question is an InputRequiredResult with a requestState")
            (key, ask), = first.input_requests.items()
            check(ask.method == "elicitation/create" and ask.params.message.startswith("Which order"),
                  f"its input request is the team's question, keyed `{key}`")
            for state in (first.request_state + "x", "forged"):
                try:
                    await session.call_tool("refund-desk", {"message": "x"}, request_state=state,
                                            input_responses={key: types.ElicitResult(action="accept",
                                                                                     content={"answer": "A-1"})},
                                            allow_input_required=True)
                    check(False, "a forged requestState is refused")
                except MCPError as e:
                    check("names no run waiting" in e.error.message, f"a forged requestState is refused: {e.error.message}")
            declined = await session.call_tool("refund-desk", {"message": "x"}, request_state=first.request_state,
                                               input_responses={key: types.ElicitResult(action="decline")},
                                               allow_input_required=True)
            check(declined.is_error and "declined" in declined.content[0].text,
                  f"a declined question cancels the run: {declined.content[0].text!r}")
            try:
                await session.call_tool("refund-desk", {"message": "x"}, request_state=first.request_state,
                                        input_responses={key: types.ElicitResult(action="decline")},
                                        allow_input_required=True)
                check(False, "an answered requestState is spent")
            except MCPError as e:
                check("names no run waiting" in e.error.message, "an answered requestState is spent")

        started = anyio.Event()

        async def on_start(value, total, message):
            if "release-notes/collector" in (message or ""):
                started.set()

        async def call():
            await client.call_tool("release-notes", {"message": "Cancel me"}, progress_callback=on_start)

        async with anyio.create_task_group() as tg:
            tg.start_soon(call)
            with anyio.fail_after(20):
                await started.wait()
            tg.cancel_scope.cancel()
        # The run ends cancelled in the store, its last step never started.
        deadline = time.monotonic() + 15
        run = newest_run(args)
        while run.get("status") != "cancelled" and time.monotonic() < deadline:
            await anyio.sleep(0.2)
            run = newest_run(args)
        # Over HTTP the run is `troupe serve`'s (listed in GET /runs too).
        prefix = "mcp-release-notes-" if args.stdio else "run-"
        check(run.get("status") == "cancelled" and run["run_id"].startswith(prefix),
              f"the cancelled call cancelled the run: {run.get('run_id')} is {run.get('status')}")
        await anyio.sleep(2.5)
        run = newest_run(args)
        check(run["stats"]["total"]["turns"] < 3 and run.get("status") == "cancelled",
              f"the cancelled run stopped ({run['stats']['total']['turns']} turns of 3)")
    print("all checks passed", flush=True)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--mode", required=True)
    p.add_argument("--troupe", required=True)
    p.add_argument("--dir", required=True)
    p.add_argument("--stdio", action="store_true")
    p.add_argument("--url")
    p.add_argument("--token")
    anyio.run(main, p.parse_args())
