"""A spec-derived fake of a 2026-07-28 (stateless) MCP server offering the
Tasks extension (SEP-2663, `io.modelcontextprotocol/tasks`), for
tests/cli_mcp_eras.rs: the official Python SDK does not implement Tasks, so
this speaks the wire format by hand (standard library only). A call of
`long_job` from a client that declares the extension becomes a task that
`tasks/get` reports working twice, then completed.

    python mcp_tasks_fake.py PORT LOG

serves POST JSON-RPC on 127.0.0.1:PORT/mcp and appends each method it is
sent to LOG, one a line.
"""

import json
import sys
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[1])
LOG = sys.argv[2]
TASKS_EXT = "io.modelcontextprotocol/tasks"
tasks = {}


def now():
    return datetime.now(timezone.utc).isoformat()


def task(tid, status, **payload):
    return {"taskId": tid, "status": status, "createdAt": now(), "lastUpdatedAt": now(),
            "ttlMs": None, "pollIntervalMs": 100, **payload}


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        method, id_ = body.get("method"), body.get("id")
        with open(LOG, "a") as log:
            log.write(f"{method}\n")
        if id_ is None:
            self.send_response(202)
            self.end_headers()
            return
        params = body.get("params") or {}
        if method == "server/discover":
            result = {"resultType": "complete", "supportedVersions": ["2026-07-28"],
                      "capabilities": {"tools": {}, "extensions": {TASKS_EXT: {}}},
                      "ttlMs": 0, "cacheScope": "private",
                      "_meta": {"io.modelcontextprotocol/serverInfo": {"name": "tasks-fake", "version": "1"}}}
        elif method == "tools/list":
            result = {"resultType": "complete", "tools": [{
                "name": "long_job", "description": "A long job, run as a task",
                "inputSchema": {"type": "object", "properties": {}}}]}
        elif method == "tools/call":
            if TASKS_EXT in json.dumps(params.get("_meta", {})):
                tid = f"task-{len(tasks) + 1}"
                tasks[tid] = 0
                result = {"resultType": "task", **task(tid, "working")}
            else:
                result = {"resultType": "complete",
                          "content": [{"type": "text", "text": "ran inline: no tasks declared"}]}
        elif method == "tasks/get":
            tid = params["taskId"]
            tasks[tid] += 1
            if tasks[tid] < 3:
                result = {"resultType": "complete", **task(tid, "working")}
            else:
                result = {"resultType": "complete", **task(tid, "completed", result={
                    "content": [{"type": "text", "text": f"job done after {tasks[tid]} polls"}],
                    "isError": False})}
        elif method == "tasks/cancel":
            result = {"resultType": "complete"}
        else:
            self.reply({"jsonrpc": "2.0", "id": id_, "error": {"code": -32601, "message": f"no method {method}"}})
            return
        self.reply({"jsonrpc": "2.0", "id": id_, "result": result})

    def reply(self, message):
        data = json.dumps(message).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
