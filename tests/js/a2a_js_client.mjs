// The official JavaScript A2A SDK's client (@a2a-js/sdk, installed under
// target/a2a-js by .ci/install-a2a-js.sh) against `troupe serve`, for
// tests/a2a_js_sdk.rs: the card, SendMessage (blocking, and non-blocking:
// the task seen working, subscribed to from a second client, completed),
// SendStreamingMessage, GetTask with historyLength, ListTasks with its
// filters and pages, CancelTask, the push notification configs, the
// extended card, and the spec's errors. Prints `ok` when every check passed.
//
//     node a2a_js_client.mjs SDK_DIR BASE_URL TOKEN [JSONRPC|HTTP+JSON]
//
// The last argument picks the binding the SDK's client uses (JSONRPC by
// default); the server's card offers both.

import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { createRequire } from "node:module";
import path from "node:path";

const [sdkDir, base, token, binding = "JSONRPC"] = process.argv.slice(2);
const require = createRequire(path.resolve(sdkDir, "package.json"));
const { ClientFactory, ClientFactoryOptions, JsonRpcTransportFactory, RestTransportFactory } = require("@a2a-js/sdk/client");
const { TaskState, Role } = require("@a2a-js/sdk");

// Every request carries the token (a fresh fetch per client: its own connections).
const authed = () => (url, init = {}) => {
  const headers = new Headers(init.headers);
  headers.set("Authorization", `Bearer ${token}`);
  return fetch(url, { ...init, headers });
};

function factory(config) {
  return new ClientFactory(
    ClientFactoryOptions.createFrom(ClientFactoryOptions.default, {
      transports: [
        binding === "HTTP+JSON"
          ? new RestTransportFactory({ fetchImpl: authed() })
          : new JsonRpcTransportFactory({ fetchImpl: authed() }),
      ],
      // The defaults' transports stay in the list: the one wanted goes first.
      preferredTransports: [binding],
      clientConfig: config,
    }),
  );
}

function message(text, extra = {}) {
  return {
    message: {
      messageId: randomUUID(),
      role: Role.ROLE_USER,
      parts: [{ content: { $case: "text", value: text }, metadata: undefined, filename: "", mediaType: "" }],
      contextId: "",
      taskId: "",
      metadata: undefined,
      extensions: [],
      referenceTaskIds: [],
      ...extra,
    },
  };
}

const text = (parts) => parts.map((p) => (p.content?.$case === "text" ? p.content.value : "")).join("");

// The A2A reasons (HTTP+JSON errors) of the JSON-RPC codes checked.
const REASONS = { [-32001]: "TASK_NOT_FOUND", [-32002]: "TASK_NOT_CANCELABLE", [-32602]: "INVALID_PARAMS" };

// Awaits a call that must fail with JSON-RPC error `code` (or, over
// HTTP+JSON, the ErrorInfo reason of that code).
async function rejects(promise, code, what) {
  let error;
  try {
    await promise;
  } catch (e) {
    error = e;
  }
  assert.ok(error, `${what}: no error`);
  if (binding === "HTTP+JSON") {
    assert.equal(error.transport, "rest", `${what}: ${error}`);
    assert.equal(error.reason, REASONS[code], `${what}: ${error}`);
  } else {
    assert.equal(error.envelopeCode, code, `${what}: ${error}`);
  }
}

async function main() {
  const blocking = factory({ polling: false });
  const polling = factory({ polling: true });

  // The card.
  const desk = await blocking.createFromUrl(`${base}/a2a/asking/`);
  const card = await desk.getAgentCard();
  assert.equal(desk.transport.protocolName, binding);
  assert.equal(card.name, "asking");
  assert.equal(card.capabilities.streaming, true);
  assert.equal(card.capabilities.pushNotifications, true);

  // Blocking SendMessage: the task waits for input; the answer completes it.
  const waiting = await desk.sendMessage(message("refund my order"));
  assert.equal(waiting.status.state, TaskState.TASK_STATE_INPUT_REQUIRED, JSON.stringify(waiting));
  assert.equal(text(waiting.status.message.parts), "Which order?");
  const withHistory = await desk.getTask({ tenant: "", id: waiting.id, historyLength: 1 });
  assert.equal(withHistory.history.length, 1);

  // Push notification configs on it.
  const config = {
    tenant: "", id: "hook-js", taskId: waiting.id, url: "http://127.0.0.1:9/hook", token: "t",
    authentication: { scheme: "Bearer", credentials: "secret" },
  };
  const made = await desk.createTaskPushNotificationConfig(config);
  assert.equal(made.id, "hook-js");
  const got = await desk.getTaskPushNotificationConfig({ tenant: "", taskId: waiting.id, id: "hook-js" });
  assert.equal(got.url, config.url);
  const listed = await desk.listTaskPushNotificationConfig({ tenant: "", taskId: waiting.id, pageSize: 0, pageToken: "" });
  assert.deepEqual(listed.configs.map((c) => c.id), ["hook-js"]);
  await desk.deleteTaskPushNotificationConfig({ tenant: "", taskId: waiting.id, id: "hook-js" });
  const none = await desk.listTaskPushNotificationConfig({ tenant: "", taskId: waiting.id, pageSize: 0, pageToken: "" });
  assert.equal(none.configs.length, 0);

  const answered = await desk.sendMessage(message("order 42", { taskId: waiting.id, contextId: waiting.contextId }));
  assert.equal(answered.status.state, TaskState.TASK_STATE_COMPLETED, JSON.stringify(answered));
  assert.equal(text(answered.artifacts[0].parts), "Refunded the order you named.");

  // Non-blocking: working at once; a second client subscribes; completed.
  const slow = await polling.createFromUrl(`${base}/a2a/slowish/`);
  const working = await slow.sendMessage(message("take your time", { contextId: "js-ctx" }));
  assert.equal(working.status.state, TaskState.TASK_STATE_WORKING, JSON.stringify(working));
  const seen = await slow.getTask({ tenant: "", id: working.id, historyLength: undefined });
  assert.equal(seen.status.state, TaskState.TASK_STATE_WORKING);
  const watcher = await factory({}).createFromUrl(`${base}/a2a/slowish/`);
  const events = [];
  for await (const e of watcher.resubscribeTask({ tenant: "", id: working.id })) events.push(e);
  assert.equal(events[0].payload.$case, "task", JSON.stringify(events[0]));
  assert.equal(events[0].payload.value.status.state, TaskState.TASK_STATE_WORKING);
  const last = events.at(-1).payload;
  assert.equal(last.$case, "statusUpdate", JSON.stringify(last));
  assert.equal(last.value.status.state, TaskState.TASK_STATE_COMPLETED);
  const done = await slow.getTask({ tenant: "", id: working.id, historyLength: undefined });
  assert.equal(text(done.artifacts[0].parts), "at last");

  // SendStreamingMessage in the same context.
  const streamed = [];
  for await (const e of watcher.sendMessageStream(message("once more", { contextId: "js-ctx" }))) streamed.push(e);
  assert.equal(streamed[0].payload.$case, "task");
  assert.equal(streamed.at(-1).payload.value.status.state, TaskState.TASK_STATE_COMPLETED);

  // ListTasks: the context's two tasks, a page at a time (the SDK's
  // messages are proto-shaped: an unset filter is TASK_STATE_UNSPECIFIED).
  const page = await slow.listTasks({ tenant: "", contextId: "js-ctx", status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 1, pageToken: "", includeArtifacts: true });
  assert.equal(page.totalSize, 2);
  assert.equal(page.tasks.length, 1);
  assert.ok(page.nextPageToken);
  const rest = await slow.listTasks({ tenant: "", contextId: "js-ctx", status: TaskState.TASK_STATE_UNSPECIFIED, pageSize: 1, pageToken: page.nextPageToken });
  assert.equal(rest.tasks.length, 1);
  assert.equal(rest.nextPageToken, "");
  const completed = await slow.listTasks({ tenant: "", status: TaskState.TASK_STATE_COMPLETED, pageToken: "" });
  assert.equal(completed.totalSize, 2);

  // CancelTask: a running task cancelled, then not cancelable.
  const victim = await slow.sendMessage(message("cancel me"));
  const cancelled = await slow.cancelTask({ tenant: "", id: victim.id, metadata: undefined });
  assert.equal(cancelled.status.state, TaskState.TASK_STATE_CANCELED);
  await rejects(slow.cancelTask({ tenant: "", id: victim.id, metadata: undefined }), -32002, "cancel twice");

  // Errors.
  await rejects(slow.getTask({ tenant: "", id: "no-such-task" }), -32001, "unknown task");
  await rejects(slow.getTask({ tenant: "", id: working.id, historyLength: -1 }), -32602, "negative history");
  await rejects(slow.sendMessage(message("x", { messageId: "" })), -32602, "no messageId");

  // The extended card (getAgentCard above fetched it too, as the card
  // announces it), asked for through the transport.
  const extended = await desk.transport.getExtendedAgentCard({ tenant: "" });
  assert.equal(extended.name, "asking");
  console.log("ok");
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
