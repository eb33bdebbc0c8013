"""Drives what `serve: {mcp: ...}` declares through the official Python SDK
(`mcp`) over stdio, on a 2025-11-25 session (tests/mcp_sdk.rs runs it).

    mcp_surface_client.py --troupe BIN --dir DIR

DIR holds a copy of examples/mcp/conformance/. Checks: resources are
listed and read (text, a template's filled text); a prompt is filled from
its arguments; completion offers the declared values; a subscribed `file:`
resource tells of a change to its file, and no more once unsubscribed; a
client's log level brings the run's events as log messages; a tool takes
its declared input and answers with content blocks. Prints `ok: ...` per
check; any failure raises (exit code 1).
"""

import argparse
import warnings

import anyio
import mcp_types as types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters


def check(cond, what):
    if not cond:
        raise SystemExit(f"FAILED: {what}")
    print(f"ok: {what}", flush=True)


async def main(args):
    updated = []
    logs = []

    async def on_message(message):
        note = getattr(message, "root", message)
        if getattr(note, "method", None) == "notifications/resources/updated":
            updated.append(note.params.uri)

    async def on_log(params):
        logs.append(params)

    server = StdioServerParameters(command=args.troupe, args=["mcp", args.dir, "--offline"])
    warnings.simplefilter("ignore")
    async with Client(server, mode="legacy", message_handler=on_message, logging_callback=on_log) as client:
        listed = await client.list_resources()
        uris = [r.uri for r in listed.resources]
        check("test://static-text" in uris and "test://watched-resource" in uris, f"resources listed: {uris}")
        text = await client.read_resource("test://static-text")
        check(text.contents[0].text == "This is the content of the static text resource.", "a text resource is read")
        filled = await client.read_resource("test://template/42/data")
        check('"id":"42"' in filled.contents[0].text, f"a template is read with its part filled: {filled.contents[0].text}")

        prompt = await client.get_prompt("test_prompt_with_arguments", {"arg1": "one", "arg2": "two"})
        said = prompt.messages[0].content.text
        check(said == "Prompt with arguments: arg1='one', arg2='two'", f"a prompt is filled: {said}")
        offered = await client.complete(
            types.PromptReference(type="ref/prompt", name="test_prompt_with_arguments"),
            {"name": "arg1", "value": "pa"},
        )
        check(offered.completion.values == ["paris", "park", "party"], f"completion offers: {offered.completion.values}")

        await client.subscribe_resource("test://watched-resource")
        await anyio.sleep(0.7)
        with open(f"{args.dir}/watched.txt", "a") as f:
            f.write("changed\n")
        with anyio.move_on_after(5):
            while not updated:
                await anyio.sleep(0.1)
        check(updated == ["test://watched-resource"], f"a change to the file is told: {updated}")
        await client.unsubscribe_resource("test://watched-resource")
        await anyio.sleep(0.7)
        with open(f"{args.dir}/watched.txt", "a") as f:
            f.write("changed again\n")
        await anyio.sleep(1.5)
        check(len(updated) == 1, f"none once unsubscribed: {updated}")

        await client.call_tool("test_tool_with_logging", {})
        check(not logs, "no log messages before a level is set")
        await client.set_logging_level("info")
        await client.call_tool("test_tool_with_logging", {})
        await anyio.sleep(0.2)
        check(len(logs) >= 3 and all(l.level == "info" for l in logs), f"{len(logs)} log messages at info")

        mixed = await client.call_tool("test_multiple_content_types", {})
        kinds = [c.type for c in mixed.content]
        check(kinds == ["text", "image", "resource"], f"an answer as content blocks: {kinds}")
        wrong = await client.call_tool("test_sampling", {"prompt": 3})
        check(wrong.is_error and "input schema" in wrong.content[0].text, "arguments not fitting the declared schema are the tool's error")
    print("all checks passed", flush=True)


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--troupe", required=True)
    p.add_argument("--dir", required=True)
    anyio.run(main, p.parse_args())
