"""The official A2A SDK's client (a2a-sdk) calling the rest of A2A 1.0's
methods on `troupe serve`, for tests/a2a_sdk.rs: a non-blocking send
seen working, subscribed to from a second connection and completed;
ListTasks with its filters and pages; GetTask with historyLength; the
push notification configs (create, get, list, delete); a file part in
and a JSON answer out as data; the extended card; and the spec's errors as the SDK raises them. Prints `ok` when
every check passed.

    python a2a_sdk_methods.py BASE_URL TOKEN
"""

import asyncio
import sys
import uuid

import httpx

from a2a.client import ClientConfig, ClientFactory
from a2a.helpers import get_artifact_text
from a2a.utils.errors import (
    InvalidParamsError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a.types import (
    AuthenticationInfo,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    TaskPushNotificationConfig,
    TaskState,
)


def message(text, context_id=None):
    m = Message(role=Role.ROLE_USER, parts=[Part(text=text)], message_id=str(uuid.uuid4()))
    if context_id:
        m.context_id = context_id
    return SendMessageRequest(message=m)


async def first(client, request):
    async for event in client.send_message(request):
        return event
    raise AssertionError("no answer")


async def main(base, token):
    auth = {"Authorization": f"Bearer {token}"}
    http = httpx.AsyncClient(headers=auth, timeout=30)
    # A second client: its own connection pool.
    other = httpx.AsyncClient(headers=auth, timeout=30)
    polling = ClientFactory(ClientConfig(httpx_client=http, streaming=False, polling=True))
    streaming = ClientFactory(ClientConfig(httpx_client=other, streaming=True))

    # Non-blocking: the task comes back working and runs on; a second
    # connection subscribes to it and sees it complete.
    slow = await polling.create_from_url(f"{base}/a2a/slowish")
    working = (await first(slow, message("take your time", context_id="ctx-1"))).task
    assert working.status.state == TaskState.TASK_STATE_WORKING, working
    seen = await slow.get_task(GetTaskRequest(id=working.id))
    assert seen.status.state == TaskState.TASK_STATE_WORKING, seen
    watcher = await streaming.create_from_url(f"{base}/a2a/slowish")
    events = [e async for e in watcher.subscribe(SubscribeToTaskRequest(id=working.id))]
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds[0] == "task" and kinds[-1] == "status_update", kinds
    assert events[0].task.status.state == TaskState.TASK_STATE_WORKING, events[0]
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED, events[-1]
    done = await slow.get_task(GetTaskRequest(id=working.id))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED, done
    assert get_artifact_text(done.artifacts[0], "") == "at last", done
    # A task over cannot be subscribed to.
    try:
        async for _ in watcher.subscribe(SubscribeToTaskRequest(id=working.id)):
            pass
        raise AssertionError("subscribed to a completed task")
    except UnsupportedOperationError:
        pass

    # GetTask with historyLength: 0 leaves the history out, 1 keeps one.
    none = await slow.get_task(GetTaskRequest(id=working.id, history_length=0))
    assert len(none.history) == 0, none
    one = await slow.get_task(GetTaskRequest(id=working.id, history_length=1))
    assert len(one.history) == 1, one
    try:
        await slow.get_task(GetTaskRequest(id=working.id, history_length=-1))
        raise AssertionError("a negative history length was taken")
    except InvalidParamsError as e:
        assert "negative" in str(e), e

    # ListTasks: a second task in the context, then one per page.
    await first(slow, message("once more", context_id="ctx-1"))
    page = await slow.list_tasks(ListTasksRequest(context_id="ctx-1", page_size=1))
    assert page.total_size == 2 and page.page_size == 1, page
    assert len(page.tasks) == 1 and page.next_page_token, page
    rest = await slow.list_tasks(
        ListTasksRequest(context_id="ctx-1", page_size=1, page_token=page.next_page_token)
    )
    assert len(rest.tasks) == 1 and not rest.next_page_token, rest
    assert {page.tasks[0].id, rest.tasks[0].id} >= {working.id}, (page, rest)
    completed = await slow.list_tasks(
        ListTasksRequest(status=TaskState.TASK_STATE_COMPLETED, include_artifacts=True)
    )
    assert working.id in [t.id for t in completed.tasks], completed
    assert all(t.status.state == TaskState.TASK_STATE_COMPLETED for t in completed.tasks)
    assert all(t.artifacts for t in completed.tasks), completed
    try:
        await slow.list_tasks(ListTasksRequest(page_size=1000))
        raise AssertionError("a page of 1000 was taken")
    except InvalidParamsError:
        pass

    # Push notification configs on a task waiting for input.
    asking = await polling.create_from_url(f"{base}/a2a/asking")
    waiting = (await first(asking, message("refund my order"))).task
    config = TaskPushNotificationConfig(
        task_id=waiting.id,
        id="hook-1",
        url="http://127.0.0.1:9/hook",
        token="t",
        authentication=AuthenticationInfo(scheme="Bearer", credentials="secret"),
    )
    made = await asking.create_task_push_notification_config(config)
    assert made.id == "hook-1" and made.url == config.url, made
    assert made.authentication.scheme == "Bearer", made
    got = await asking.get_task_push_notification_config(
        GetTaskPushNotificationConfigRequest(task_id=waiting.id, id="hook-1")
    )
    assert got.url == config.url and got.task_id == waiting.id, got
    listed = await asking.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=waiting.id)
    )
    assert [c.id for c in listed.configs] == ["hook-1"], listed
    await asking.delete_task_push_notification_config(
        DeleteTaskPushNotificationConfigRequest(task_id=waiting.id, id="hook-1")
    )
    listed = await asking.list_task_push_notification_configs(
        ListTaskPushNotificationConfigsRequest(task_id=waiting.id)
    )
    assert len(listed.configs) == 0, listed
    try:
        await asking.get_task_push_notification_config(
            GetTaskPushNotificationConfigRequest(task_id="no-such-task", id="hook-1")
        )
        raise AssertionError("a config of an unknown task was found")
    except TaskNotFoundError:
        pass

    # A file part in (its bytes, read as text by the team), a JSON answer
    # out as a data part beside the text.
    blocking = ClientFactory(ClientConfig(httpx_client=http, streaming=False))
    ledger = await blocking.create_from_url(f"{base}/a2a/ledger")
    m = Message(
        role=Role.ROLE_USER,
        message_id=str(uuid.uuid4()),
        parts=[
            Part(text="Check this."),
            Part(raw=b"line one\nline two", filename="notes.txt", media_type="text/plain"),
        ],
    )
    answered = (await first(ledger, SendMessageRequest(message=m))).task
    assert answered.status.state == TaskState.TASK_STATE_COMPLETED, answered
    parts = answered.artifacts[0].parts
    assert parts[0].text == '{"ok": true, "order": 42}', parts
    assert parts[1].HasField("data") and parts[1].data.struct_value["order"] == 42, parts

    # The extended card, to the authenticated caller.
    card = await asking.get_extended_agent_card(GetExtendedAgentCardRequest())
    assert card.name == "asking", card
    assert card.capabilities.push_notifications and card.capabilities.extended_agent_card, card

    print("ok")


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1], sys.argv[2]))
