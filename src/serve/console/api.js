// The server's HTTP API as the console uses it: JSON requests and the
// server-sent events of a run, every one with the bearer token.
//
// The token comes from `?token=` in the page's address, once: it is kept in
// sessionStorage (this tab only) and taken out of the address bar. The
// events are read with fetch and parsed here, not with EventSource, which
// cannot send an Authorization header.
"use strict";

(function () {
  const KEY = "troupe.token";
  // The API sits beside the page: `/runs` for a page at `/`, `/a/runs` for
  // one at `/a/` (paths below are given from the API's root).
  const BASE = window.location.pathname.replace(/[^/]*$/, "");

  function url(path) {
    return BASE + path.replace(/^\//, "");
  }

  // Moves `?token=` from the address into sessionStorage.
  function adoptToken() {
    const url = new URL(window.location.href);
    const token = url.searchParams.get("token");
    if (token) {
      sessionStorage.setItem(KEY, token);
      url.searchParams.delete("token");
      window.history.replaceState(null, "", url.pathname + url.search + url.hash);
    }
  }

  function token() {
    return sessionStorage.getItem(KEY);
  }

  function headers(extra) {
    const h = Object.assign({}, extra || {});
    const t = token();
    if (t) h["Authorization"] = "Bearer " + t;
    return h;
  }

  // An error the server answered with ({"error": {"message", "type"}}), or
  // one of the network.
  class ApiError extends Error {
    constructor(status, message, type) {
      super(message);
      this.status = status;
      this.type = type || "";
    }
  }

  async function failure(res) {
    let message = res.status + " " + res.statusText;
    let type = "";
    try {
      const body = await res.json();
      if (body && body.error) {
        message = body.error.message || message;
        type = body.error.type || "";
      }
    } catch (_) {
      // not JSON: keep the status line
    }
    return new ApiError(res.status, message, type);
  }

  // `method path` with `body` as JSON; the answer's JSON (null when empty).
  async function json(method, path, body) {
    const init = { method: method, headers: headers({ Accept: "application/json" }) };
    if (body !== undefined) {
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    const res = await fetch(url(path), init);
    if (!res.ok) throw await failure(res);
    const text = await res.text();
    return text ? JSON.parse(text) : null;
  }

  // Reads the server-sent events at `path` until the server closes the
  // stream (or `signal` aborts it), calling `onEvent(name, data, id)` for
  // each. `lastEventId` resumes after that event.
  async function stream(path, options) {
    const h = headers({ Accept: "text/event-stream" });
    if (options.lastEventId) h["Last-Event-ID"] = options.lastEventId;
    const res = await fetch(url(path), { headers: h, signal: options.signal, cache: "no-store" });
    if (!res.ok) throw await failure(res);
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true }).replace(/\r\n?/g, "\n");
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        dispatch(block, options.onEvent);
      }
    }
    if (buffer.trim()) dispatch(buffer, options.onEvent);
  }

  // One event block: `event:`, `id:` and `data:` lines (comments, which
  // start with `:`, keep the connection alive and are skipped).
  function dispatch(block, onEvent) {
    let name = "message";
    let id = null;
    const data = [];
    for (const line of block.split("\n")) {
      if (!line || line.startsWith(":")) continue;
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let value = colon < 0 ? "" : line.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "event") name = value;
      else if (field === "id") id = value;
      else if (field === "data") data.push(value);
    }
    if (data.length) onEvent(name, data.join("\n"), id);
  }

  window.troupe = window.troupe || {};
  window.troupe.api = { adoptToken, token, json, stream, ApiError };
})();
