"""The official A2A SDK's client (a2a-sdk) against `troupe serve`, for
tests/a2a_sdk.rs: cards, SendMessage, SendStreamingMessage (token deltas
as pieces of an artifact), GetTask, CancelTask, an input-required round
trip, contexts kept as sessions. Prints `ok` when every check passed.

    python a2a_sdk_client.py BASE_URL TOKEN
"""

import asyncio
import sys
import uuid

import httpx

from a2a.client import A2ACardResolver, ClientConfig, ClientFactory
from a2a.helpers import get_artifact_text, get_message_text
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)


def message(text, task_id=None, context_id=None):
    m = Message(role=Role.ROLE_USER, parts=[Part(text=text)], message_id=str(uuid.uuid4()))
    if task_id:
        m.task_id = task_id
    if context_id:
        m.context_id = context_id
    return SendMessageRequest(message=m)


async def collect(client, request):
    return [event async for event in client.send_message(request)]


def final_task(events):
    """The task as the events left it: the task, status and artifacts."""
    task, artifacts, status = None, {}, None
    for e in events:
        kind = e.WhichOneof("payload")
        if kind == "task":
            task = e.task
            status = e.task.status
            for a in e.task.artifacts:
                artifacts[a.artifact_id] = get_artifact_text(a, "")
        elif kind == "status_update":
            status = e.status_update.status
        elif kind == "artifact_update":
            u = e.artifact_update
            text = get_artifact_text(u.artifact, "")
            artifacts[u.artifact.artifact_id] = (
                artifacts.get(u.artifact.artifact_id, "") + text if u.append else text
            )
    return task, status, artifacts


async def main(base, token):
    http = httpx.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    plain = ClientFactory(ClientConfig(httpx_client=http, streaming=False))
    streaming = ClientFactory(ClientConfig(httpx_client=http, streaming=True))
    polling = ClientFactory(ClientConfig(httpx_client=http, streaming=False, polling=True))

    # The card: the team's name, a skill per agent, streaming.
    card = await A2ACardResolver(http, f"{base}/a2a/desk").get_agent_card()
    assert card.name == "desk", card
    assert card.capabilities.streaming, card
    assert sorted(s.id for s in card.skills) == ["editor", "writer"], card.skills
    assert card.supported_interfaces[0].url.endswith("/a2a/desk"), card
    # The default card is the first team's (directory order: asking).
    default = await A2ACardResolver(http, base).get_agent_card()
    assert default.name == "asking", default
    desk = streaming.create(card)

    # SendMessage, whole: the task completed, the response its artifact.
    desk_plain = await plain.create_from_url(f"{base}/a2a/desk")
    events = await collect(desk_plain, message("write about otters"))
    assert len(events) == 1 and events[0].HasField("task"), events
    first = events[0].task
    assert first.status.state == TaskState.TASK_STATE_COMPLETED, first
    assert get_artifact_text(first.artifacts[0], "") == "final one", first.artifacts
    context = first.context_id
    assert context, first

    # SendStreamingMessage in the same context: the session goes on (the
    # scripted agents give their second replies), token deltas arrive as
    # pieces of the response artifact before the last piece and the status.
    events = await collect(desk, message("and about seals", context_id=context))
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[0] == "task" and kinds[-1] == "status_update", kinds
    pieces = [e.artifact_update for e in events if e.HasField("artifact_update")]
    assert len(pieces) >= 3, pieces  # the writer's delta, the editor's, the whole
    assert not pieces[0].last_chunk and pieces[-1].last_chunk, pieces
    deltas = [get_artifact_text(p.artifact, "") for p in pieces[:-1]]
    assert "draft two" in deltas and "final two" in deltas, deltas
    task, status, artifacts = final_task(events)
    assert status.state == TaskState.TASK_STATE_COMPLETED, status
    assert artifacts == {"response": "final two"}, artifacts
    assert task.context_id == context, (task.context_id, context)
    second = task.id
    assert second != first.id

    # GetTask.
    got = await desk.get_task(GetTaskRequest(id=second))
    assert got.status.state == TaskState.TASK_STATE_COMPLETED, got
    assert get_artifact_text(got.artifacts[0], "") == "final two", got
    try:
        await desk.get_task(GetTaskRequest(id="no-such-task"))
        raise AssertionError("an unknown task was found")
    except TaskNotFoundError as e:
        assert "no task" in str(e), e

    # Input required: the clerk's question, then a follow-up with the
    # task's id answers it and the task completes.
    asking = await streaming.create_from_url(f"{base}/a2a/asking")
    events = await collect(asking, message("refund my order"))
    task, status, _ = final_task(events)
    assert status.state == TaskState.TASK_STATE_INPUT_REQUIRED, status
    assert get_message_text(status.message) == "Which order?", status
    waiting = await asking.get_task(GetTaskRequest(id=task.id))
    assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, waiting
    events = await collect(asking, message("order 42", task_id=task.id, context_id=task.context_id))
    done, status, artifacts = final_task(events)
    assert status.state == TaskState.TASK_STATE_COMPLETED, status
    assert artifacts == {"response": "Refunded the order you named."}, artifacts
    assert done.id == task.id, (done.id, task.id)

    # CancelTask: a slow task, answered at once (polling), cancelled.
    slow = await polling.create_from_url(f"{base}/a2a/slow")
    events = await collect(slow, message("take your time"))
    working = events[0].task
    assert working.status.state == TaskState.TASK_STATE_WORKING, working
    cancelled = await slow.cancel_task(CancelTaskRequest(id=working.id))
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED, cancelled
    again = await slow.get_task(GetTaskRequest(id=working.id))
    assert again.status.state == TaskState.TASK_STATE_CANCELED, again
    try:
        await slow.cancel_task(CancelTaskRequest(id=working.id))
        raise AssertionError("a cancelled task was cancelled again")
    except TaskNotCancelableError as e:
        assert "cannot be cancelled" in str(e), e

    # Without the token: the card is public (it announces the bearer
    # scheme), everything else refused.
    bare = httpx.AsyncClient(timeout=30)
    response = await bare.get(f"{base}/.well-known/agent-card.json")
    assert response.status_code == 200, response.status_code
    assert "bearer" in response.json().get("securitySchemes", {}), response.json()
    rpc = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}
    response = await bare.post(f"{base}/a2a", json=rpc)
    assert response.status_code == 401, response.status_code
    print("ok")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
