// The live timeline: a run's events as a tree by nesting path. Each path
// (`team`, `team/clerk`, `outer/inner/writer`) is a node; its events are
// lines in the order they came, and a nested path's node sits where its
// first event came. A node's heading says who it is, whether it is speaking
// now, and the tokens and cost of its model calls (its descendants' too).
//
// The streamed pieces of an answer (`text_delta`) grow one line until the
// message they make is produced. Bookkeeping events (deliveries,
// checkpoints, supersteps, call starts) are `minor`: hidden unless the
// page shows all events.
"use strict";

(function () {
  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function clip(text, n) {
    text = String(text);
    return text.length > n ? text.slice(0, n - 1) + "…" : text;
  }

  function ms(v) {
    if (v === undefined || v === null) return "";
    return v >= 1000 ? (v / 1000).toFixed(2) + " s" : v.toFixed(v < 10 ? 1 : 0) + " ms";
  }

  function cost(v) {
    return v === undefined || v === null ? "" : "$" + Number(v).toFixed(v < 0.01 ? 5 : 3);
  }

  function tokens(u) {
    if (!u) return "";
    return "in " + (u.prompt_tokens || 0) + " · out " + (u.completion_tokens || 0);
  }

  // The text of a message's content ({"Text": …}, {"ToolCalls": […]}, …).
  function contentText(content) {
    if (content === null || content === undefined) return "";
    if (typeof content === "string") return content;
    if ("Text" in content) return content.Text;
    if ("Structured" in content) return content.Structured;
    if ("Stop" in content) return "stop: " + content.Stop;
    if ("Handoff" in content) return "handoff to " + content.Handoff.target + ": " + content.Handoff.reason;
    if ("ToolCalls" in content) return content.ToolCalls.map((c) => c.name + "(" + c.arguments + ")").join("\n");
    if ("ToolResults" in content) return content.ToolResults.map((r) => r.content).join("\n");
    return JSON.stringify(content);
  }

  // Whether a message's content is words (an answer), not calls or results.
  function isText(content) {
    return !!content && typeof content === "object" && ("Text" in content || "Structured" in content || "Stop" in content);
  }

  // What one event says, as [css class, text]; null when it is not a line
  // of its own (the pieces of a tool call's arguments).
  function describe(ev) {
    switch (ev.type) {
      case "run_started":
        return ["run", "▶ run started · " + ev.participants + " participants"];
      case "run_finished": {
        const parts = ["■ " + ev.status.replace(/_/g, " ")];
        if (ev.detail) parts.push(ev.detail);
        parts.push(ev.turns + " turns", tokens(ev.usage));
        const total = ev.stats && ev.stats.total;
        if (total && total.cost !== null && total.cost !== undefined) parts.push(cost(total.cost));
        parts.push(ms(ev.elapsed_ms));
        return ["run status-" + ev.status, parts.join(" · ")];
      }
      case "agent_started":
        return ["minor", "turn started (" + ev.batch + " new)"];
      case "agent_finished":
        return ["minor", "turn done · produced " + ev.produced + " · " + ms(ev.elapsed_ms)];
      case "agent_failed":
        return ["error", "turn failed (" + ev.kind + ", attempt " + ev.attempt + "): " + ev.error];
      case "message_produced":
        return ["said", contentText(ev.message && ev.message.content)];
      case "message_delivered":
        return ["minor", "→ delivered to " + ev.to];
      case "message_dropped":
        return ["warn", "dropped for " + ev.to + ": " + ev.reason];
      case "message_held":
        return ["minor", "held for " + ev.to + " (inbox full, " + ev.capacity + ")"];
      case "tool_call":
        return ["tool", "call " + ev.call.name + "(" + clip(ev.call.arguments, 300) + ")"];
      case "tool_result":
        return [
          ev.result.is_error ? "tool error" : "tool",
          "result of " + ev.result.name + ": " + clip(ev.result.content, 400),
        ];
      case "tool_call_started":
        return ["minor", "tool " + ev.name + " started"];
      case "tool_call_finished":
        return ev.error
          ? ["error", "tool " + ev.name + " failed after " + ms(ev.elapsed_ms) + ": " + ev.error]
          : ["minor", "tool " + ev.name + " took " + ms(ev.elapsed_ms)];
      case "handoff":
        return ["handoff", "⇢ handoff to " + ev.to];
      case "plan":
        return ["plan", "plan:\n" + ev.plan];
      case "selected":
        return ["handoff", "selected next: " + ev.next.join(", ")];
      case "input_requested":
        return ["input", "asks: " + ev.prompt + " (request " + ev.request + ")"];
      case "checkpoint_saved":
        return ["checkpoint", "checkpoint after superstep " + ev.superstep + " (" + ev.bytes + " bytes)"];
      case "superstep_started":
        return ["minor", "superstep " + ev.superstep + ": " + ev.nodes.join(", ")];
      case "superstep_completed":
        return ["minor", "superstep " + ev.superstep + " done"];
      case "retry":
        return ["warn", "↻ retry after attempt " + ev.attempt + " in " + ms(ev.delay_ms) + ": " + ev.error];
      case "warning":
        return ["warn", "warning: " + ev.text];
      case "events_dropped":
        return ["warn", ev.count + " events dropped here"];
      case "text_delta":
        return ["said streaming", ev.text];
      case "tool_arguments_delta":
        return null;
      case "model_call_started":
        return ["minor", "model " + ev.model + " called (attempt " + ev.attempt + ")"];
      case "model_call_finished": {
        const parts = ["model " + ev.model + " answered in " + ms(ev.latency_ms)];
        if (ev.usage) parts.push(tokens(ev.usage) + (ev.usage_estimated ? " (estimated)" : ""));
        if (ev.cost !== undefined && ev.cost !== null) parts.push(cost(ev.cost));
        if (ev.error) return ["error", "model " + ev.model + " failed: " + ev.error];
        return ["model", parts.join(" · ")];
      }
      case "model_call_retry":
        return ["warn", "↻ model " + ev.model + " retry after attempt " + ev.attempt + " in " + ms(ev.delay_ms) + ": " + ev.error];
      case "model_call_throttled":
        return ["warn", "model " + ev.model + " waited " + ms(ev.waited_ms) + " for its rate limit"];
      default:
        return ["minor", ev.type + " " + JSON.stringify(ev)];
    }
  }

  class Timeline {
    constructor(root) {
      this.root = root;
      this.clear();
    }

    clear() {
      this.root.textContent = "";
      this.list = el("ul", "tree");
      this.root.appendChild(this.list);
      this.nodes = new Map();
      this.start = null;
    }

    // The node of `path`, made (with its ancestors) if new.
    node(path) {
      let n = this.nodes.get(path);
      if (n) return n;
      const cut = path.lastIndexOf("/");
      const parent = cut > 0 ? this.node(path.slice(0, cut)) : null;
      const li = el("li", "tnode");
      li.dataset.path = path;
      li.dataset.testid = "tree-node";
      const details = el("details");
      details.open = true;
      const summary = el("summary");
      const who = el("span", "who", cut > 0 ? path.slice(cut + 1) : path);
      who.title = path;
      const state = el("span", "state");
      const meter = el("span", "meter");
      summary.append(who, state, meter);
      const body = el("ol", "events");
      details.append(summary, body);
      li.appendChild(details);
      (parent ? parent.body : this.list).appendChild(li);
      n = { li, state, meter, body, parent, stream: null, usage: { in: 0, out: 0, cost: null } };
      this.nodes.set(path, n);
      return n;
    }

    // Adds the usage of one model call to `n` and its ancestors.
    count(n, usage, price) {
      for (let m = n; m; m = m.parent) {
        if (usage) {
          m.usage.in += usage.prompt_tokens || 0;
          m.usage.out += usage.completion_tokens || 0;
        }
        if (price !== undefined && price !== null) m.usage.cost = (m.usage.cost || 0) + price;
        const u = m.usage;
        m.meter.textContent =
          "in " + u.in + " · out " + u.out + (u.cost !== null ? " · " + cost(u.cost) : "");
      }
    }

    line(n, ev, cls, text) {
      const li = el("li", "ev " + cls);
      li.dataset.type = ev.type;
      li.dataset.testid = "tree-event";
      if (ev.seq !== undefined) li.dataset.seq = ev.seq;
      const t = Date.parse(ev.time);
      if (!Number.isNaN(t)) {
        if (this.start === null) this.start = t;
        li.appendChild(el("span", "at", "+" + ((t - this.start) / 1000).toFixed(2) + "s"));
      }
      li.appendChild(el("span", "text", text));
      n.body.appendChild(li);
      return li;
    }

    // Adds one event (an EventRecord as JSON) to the tree.
    add(ev) {
      const said = describe(ev);
      if (!said || !ev.path) return;
      const n = this.node(ev.path);
      const [cls, text] = said;
      switch (ev.type) {
        case "agent_started":
          n.li.classList.add("speaking");
          n.state.textContent = "speaking";
          n.stream = null;
          break;
        case "agent_finished":
        case "agent_failed":
          n.li.classList.remove("speaking");
          n.state.textContent = ev.type === "agent_failed" ? "failed" : "";
          // The message a streamed answer makes comes after the turn ends.
          if (n.stream) n.stream.classList.remove("streaming");
          break;
        case "input_requested":
          n.state.textContent = "waiting for input";
          break;
        case "run_finished":
          n.state.textContent = ev.status.replace(/_/g, " ");
          break;
        case "model_call_started":
          n.stream = null;
          break;
        case "checkpoint_saved": {
          // Time travel: a new run carried on from this checkpoint.
          const li = this.line(n, ev, cls, text);
          li.dataset.checkpoint = ev.checkpoint;
          if (this.onFork) {
            const fork = el("button", "fork", "fork from here");
            fork.type = "button";
            fork.dataset.testid = "fork-here";
            fork.title = "carry the run on from checkpoint " + ev.checkpoint + " as a new run";
            fork.addEventListener("click", () => this.onFork(ev.checkpoint, li));
            li.appendChild(fork);
          }
          return;
        }
        case "model_call_finished":
          this.count(n, ev.usage, ev.cost);
          break;
        case "text_delta":
          if (n.stream) {
            n.stream.lastChild.textContent += ev.text;
          } else {
            n.stream = this.line(n, ev, cls, ev.text);
          }
          return;
        case "message_produced":
          if (n.stream && isText(ev.message && ev.message.content)) {
            // The streamed line becomes the message it made.
            n.stream.className = "ev said";
            n.stream.dataset.type = ev.type;
            n.stream.lastChild.textContent = text;
            n.stream = null;
            return;
          }
          if (n.stream) n.stream.classList.remove("streaming");
          n.stream = null;
          break;
      }
      this.line(n, ev, cls, text);
    }
  }

  window.troupe = window.troupe || {};
  window.troupe.Timeline = Timeline;
  window.troupe.contentText = contentText;
  window.troupe.isText = isText;
})();
