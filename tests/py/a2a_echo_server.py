"""A tiny echo agent served by the official A2A SDK (a2a-sdk), for
tests/a2a_sdk.rs: a troupe team with an `a2a` participant calls it.

    python a2a_echo_server.py [--no-streaming]

Listens on a free port of 127.0.0.1 and prints `listening on http://…` once
it accepts connections. What it does with a message's text:

- `ask …`: asks "Which colour?" (TASK_STATE_INPUT_REQUIRED); the follow-up
  message of the same task is echoed as `colour: <answer>`.
- `fail …`: the task fails with "the echo agent refuses: …".
- `slow …`: works for a minute (a task to cancel), logged on stderr as
  `working <task id>`; a cancel is logged as `cancelled <task id>`.
- `late …`: as `slow`, but first logs `starting <task id>` and waits a
  second before it names the task to the caller (a task cancelled before
  the caller knows its id).
- anything else: streamed back in pieces as the artifact `echo`:
  `echo #<n>: <text>`, n counting the messages of the context (so a test
  sees the context kept from one turn to the next).
"""

import asyncio
import socket
import sys

import uvicorn
from starlette.applications import Starlette

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Task,
    TaskState,
    TaskStatus,
)


class Echo(AgentExecutor):
    def __init__(self):
        self.seen = {}

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        task = context.current_task
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        if text.startswith("late"):
            print(f"starting {context.task_id}", file=sys.stderr, flush=True)
            await asyncio.sleep(1)
        if task is None:
            await event_queue.enqueue_event(
                Task(
                    id=context.task_id,
                    context_id=context.context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                    history=[context.message],
                )
            )
        await updater.start_work()
        if task is not None and task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            await updater.add_artifact([Part(text=f"colour: {text}")], artifact_id="echo", last_chunk=True)
            await updater.complete()
            return
        if text.startswith("ask"):
            await updater.requires_input(updater.new_agent_message([Part(text="Which colour?")]))
            return
        if text.startswith("fail"):
            await updater.failed(updater.new_agent_message([Part(text=f"the echo agent refuses: {text}")]))
            return
        if text.startswith("slow") or text.startswith("late"):
            print(f"working {context.task_id}", file=sys.stderr, flush=True)
            await asyncio.sleep(60)
            await updater.complete()
            return
        n = self.seen.get(context.context_id, 0) + 1
        self.seen[context.context_id] = n
        words = f"echo #{n}: {text}".split(" ")
        for i, word in enumerate(words):
            piece = word if i == 0 else " " + word
            await updater.add_artifact(
                [Part(text=piece)],
                artifact_id="echo",
                append=i > 0,
                last_chunk=i == len(words) - 1,
            )
            await asyncio.sleep(0.01)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        print(f"cancelled {context.task_id}", file=sys.stderr, flush=True)
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.cancel()


async def main() -> None:
    streaming = "--no-streaming" not in sys.argv[1:]
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    base = f"http://127.0.0.1:{port}"
    card = AgentCard(
        name="echo",
        description="Echoes what it is told.",
        supported_interfaces=[
            AgentInterface(url=f"{base}/", protocol_binding="JSONRPC", protocol_version="1.0")
        ],
        version="1.0.0",
        capabilities=AgentCapabilities(streaming=streaming),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="Echoes text.", tags=["echo"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card
    )
    app = Starlette(
        routes=create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url="/")
    )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started:
        await asyncio.sleep(0.02)
    print(f"listening on {base}", flush=True)
    await serving


if __name__ == "__main__":
    asyncio.run(main())
