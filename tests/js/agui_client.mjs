// Drives a troupe team through AG-UI's official TypeScript client
// (`@ag-ui/client`'s HttpAgent, which checks every event against
// @ag-ui/core's schemas and refuses a run that leaves interrupts
// unanswered): a run, then one `resume` per interrupt with the next of
// ANSWERS, until the run finishes without one. Prints one JSON line: the
// rounds, the interrupts, the event types seen, the final result, the
// messages and the state the agent holds.
//
// Usage: AGUI_NODE_DIR=target/node-agui node agui_client.mjs URL TOKEN THREAD MESSAGE ANSWER...
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.resolve(process.env.AGUI_NODE_DIR, "package.json"));
const { HttpAgent } = require("@ag-ui/client");

const [url, token, threadId, message, ...answers] = process.argv.slice(2);
const agent = new HttpAgent({ url, headers: { Authorization: `Bearer ${token}` }, threadId });
agent.messages.push({ id: "m1", role: "user", content: message });

const types = new Set();
const asked = [];
let open = null;
const subscriber = {
  onEvent: ({ event }) => { types.add(event.type); },
  onRunFinishedEvent: ({ event }) => {
    open = event.outcome?.type === "interrupt" ? event.outcome.interrupts : null;
  },
  onRunErrorEvent: ({ event }) => { throw new Error(`RUN_ERROR ${event.code}: ${event.message}`); },
};

let run = await agent.runAgent({}, subscriber);
let rounds = 0;
while (open) {
  if (rounds >= answers.length) throw new Error(`no answer left for ${JSON.stringify(open)}`);
  asked.push(...open.map((i) => i.message));
  const resume = open.map((i) => ({ interruptId: i.id, status: "resolved", payload: answers[rounds] }));
  open = null;
  rounds += 1;
  run = await agent.runAgent({ resume }, subscriber);
}
console.log(JSON.stringify({
  rounds,
  asked,
  types: [...types].sort(),
  result: run.result,
  messages: agent.messages.map((m) => ({ role: m.role, content: m.content })),
  state: agent.state,
}));
