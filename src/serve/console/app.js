// The console page: chat with the team (one run per message, in a
// session), the answer streaming in from the run's events, the event tree
// and the workflow graph beside it, past runs and sessions to reopen, and
// the questions a run waits on answered in place.
"use strict";

(function () {
  const { api, graph, Timeline, contentText, isText } = window.troupe;
  const $ = (id) => document.getElementById(id);
  const TERMINAL = ["completed", "stopped", "failed", "cancelled", "interrupted"];

  const state = {
    runId: null,
    status: null,
    stream: null, // AbortController of the events being read
    lastEventId: null,
    bubbles: new Map(), // path → the bubble its model is streaming into
    requests: new Map(), // request id → its form
    runs: [],
    chat: true, // whether the run's events also write the chat
    team: null, // the team talked to, when the server serves several
  };
  let timeline;

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  function leaf(path) {
    return path.slice(path.lastIndexOf("/") + 1);
  }

  function showError(err) {
    const banner = $("error-banner");
    if (!err) {
      banner.hidden = true;
      return;
    }
    let text = err.message || String(err);
    if (err.status === 401) {
      text = "Not authorized: open the console as /?token=YOUR_TOKEN (TROUPE_SERVE_TOKEN).";
      $("conn-status").textContent = "unauthorized";
    }
    banner.textContent = text;
    banner.hidden = false;
  }

  function newSession() {
    const bytes = crypto.getRandomValues(new Uint8Array(4));
    return "console-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  // ---- chat --------------------------------------------------------------

  function scrollChat() {
    const log = $("chat-log");
    log.scrollTop = log.scrollHeight;
  }

  // A bubble in the chat: `role` is user or agent, `who` the speaker.
  function bubble(role, who, text, streaming) {
    const b = el("div", "bubble " + role + (streaming ? " streaming" : ""));
    b.dataset.testid = "chat-message";
    b.dataset.role = role;
    if (who) b.dataset.agent = who;
    b.appendChild(el("div", "who", who || role));
    b.appendChild(el("div", "text", text || ""));
    $("chat-log").appendChild(b);
    scrollChat();
    return b;
  }

  // Ends the bubble `path`'s model was streaming into: what comes next
  // from it starts a new one.
  function settle(path) {
    const b = state.bubbles.get(path);
    if (b) b.classList.remove("streaming");
    state.bubbles.delete(path);
  }

  function setStatus(status, text) {
    state.status = status;
    const box = $("run-status");
    box.dataset.status = status || "";
    box.textContent = text || "";
    const busy = status === "running" || status === "waiting_for_input";
    $("chat-send").disabled = busy;
    $("cancel-run").disabled = !busy;
  }

  // ---- input requests ----------------------------------------------------

  function addRequest(req) {
    if (!req.id || state.requests.has(req.id)) return;
    const form = el("form", "request");
    form.dataset.testid = "input-request";
    form.dataset.requestId = req.id;
    const asker = req.agent || (req.path ? leaf(req.path) : "the team");
    form.appendChild(el("div", "question", asker + " asks: " + (req.prompt || req.question || "")));
    const answer = el("input");
    answer.name = "answer";
    answer.dataset.testid = "input-answer";
    answer.placeholder = "Your answer";
    answer.required = true;
    const send = el("button", "", "Answer");
    send.type = "submit";
    send.dataset.testid = "input-submit";
    form.append(answer, send);
    form.addEventListener("submit", (e) => {
      e.preventDefault();
      answerRequest(req.id, asker, answer.value, form);
    });
    $("input-requests").appendChild(form);
    state.requests.set(req.id, form);
    answer.focus();
  }

  function dropRequests(keep) {
    for (const [id, form] of state.requests) {
      if (!keep || !keep.has(id)) {
        form.remove();
        state.requests.delete(id);
      }
    }
  }

  async function answerRequest(id, asker, text, form) {
    const runId = state.runId;
    for (const c of form.elements) c.disabled = true;
    // Shown before it is sent: the run goes on at once, and its answers
    // may stream in before the POST returns.
    const b = bubble("user", "you → " + asker, text);
    b.dataset.answer = id;
    try {
      await api.json("POST", "/runs/" + encodeURIComponent(runId) + "/input", {
        request_id: id,
        answer: text,
      });
    } catch (err) {
      b.remove();
      for (const c of form.elements) c.disabled = false;
      showError(err);
      return;
    }
    form.remove();
    state.requests.delete(id);
    if (state.status === "waiting_for_input") setStatus("running", "running");
    // A run that ended its stream to wait is read on from where it stopped.
    if (!state.stream && state.runId === runId) follow(runId);
  }

  // ---- one run's events --------------------------------------------------

  function onEvent(ev) {
    timeline.add(ev);
    const path = ev.path || "";
    switch (ev.type) {
      case "agent_started":
        graph.highlight($("graph"), leaf(path), true);
        $("speaking").textContent = leaf(path) + " is speaking…";
        settle(path);
        break;
      case "agent_finished":
      case "agent_failed": {
        graph.highlight($("graph"), leaf(path), false);
        $("speaking").textContent = "";
        // The message the streamed answer makes comes after the turn ends.
        const b = state.bubbles.get(path);
        if (b) b.classList.remove("streaming");
        break;
      }
      case "model_call_started":
        settle(path);
        break;
      case "tool_call_started":
        startToolClock(leaf(path), ev.name, Date.parse(ev.time));
        break;
      case "tool_call_finished":
        stopToolClock();
        $("speaking").textContent = "";
        break;
      case "input_requested":
        addRequest({ id: ev.request, path: path, prompt: ev.prompt });
        setStatus("waiting_for_input", "waiting for input");
        break;
    }
    if (!state.chat) return;
    if (ev.type === "text_delta") {
      let b = state.bubbles.get(path);
      if (!b) {
        b = bubble("agent", leaf(path), "", true);
        state.bubbles.set(path, b);
      }
      b.lastChild.textContent += ev.text;
      b.dataset.deltas = String(Number(b.dataset.deltas || 0) + 1);
      scrollChat();
    } else if (ev.type === "message_produced") {
      const content = ev.message && ev.message.content;
      const text = contentText(content);
      const b = state.bubbles.get(path);
      if (b && isText(content)) {
        // The streamed bubble becomes the message it made.
        b.lastChild.textContent = text;
        settle(path);
      } else if (b) {
        settle(path);
      } else if (isText(content) && text) {
        bubble("agent", leaf(path), text);
      }
    } else if (ev.type === "handoff") {
      $("chat-log").appendChild(el("div", "note", leaf(path) + " hands off to " + ev.to));
    }
  }

  // A tool call under way: who runs which tool, and for how long so far,
  // updated every second until it finishes.
  function startToolClock(agent, tool, started) {
    stopToolClock();
    const t0 = Number.isNaN(started) ? Date.now() : started;
    const show = () => {
      const secs = Math.max(0, Math.round((Date.now() - t0) / 1000));
      $("speaking").textContent = agent + " is running " + tool + "… " + secs + "s";
    };
    show();
    state.toolClock = setInterval(show, 1000);
  }

  function stopToolClock() {
    if (state.toolClock) clearInterval(state.toolClock);
    state.toolClock = null;
  }

  // The run as GET /runs/{id} (or the stream's `end`) gives it.
  function onRun(run) {
    const parts = [run.status.replace(/_/g, " ")];
    if (run.usage) {
      const u = run.usage;
      if (u.prompt_tokens !== undefined) parts.push("in " + u.prompt_tokens + " · out " + u.completion_tokens);
      if (u.cost !== undefined && u.cost !== null) parts.push("$" + Number(u.cost).toFixed(5));
    }
    if (run.error) parts.push(run.error);
    setStatus(run.status, parts.join(" · "));
    const open = new Set();
    for (const q of run.requests || []) {
      open.add(q.id);
      addRequest(q);
    }
    dropRequests(open);
    if (TERMINAL.includes(run.status)) {
      $("speaking").textContent = "";
      stopToolClock();
      for (const b of state.bubbles.values()) b.classList.remove("streaming");
      state.bubbles.clear();
      // A cancelled (or failed, interrupted) run's agents are not speaking
      // any more, whatever their last event said.
      for (const li of document.querySelectorAll("#timeline .tnode.speaking")) {
        li.classList.remove("speaking");
        const s = li.querySelector(".state");
        if (s && s.textContent === "speaking") s.textContent = run.status.replace(/_/g, " ");
      }
      for (const g of document.querySelectorAll("#graph g.node.active")) g.classList.remove("active");
    }
  }

  // Reads run `id`'s events from where this page left them (the start, for
  // a run it has not read) until the stream ends.
  async function follow(id) {
    if (state.stream) state.stream.abort();
    const controller = new AbortController();
    state.stream = controller;
    let ended = false;
    try {
      await api.stream("/runs/" + encodeURIComponent(id) + "/events", {
        lastEventId: state.lastEventId,
        signal: controller.signal,
        onEvent: (name, data, eventId) => {
          if (eventId !== null) state.lastEventId = eventId;
          if (name === "end") {
            ended = true;
            onRun(JSON.parse(data));
          } else if (name === "status") {
            // The run began or stopped waiting for input.
            onRun(JSON.parse(data));
          } else if (name === "message") {
            onEvent(JSON.parse(data));
          }
        },
      });
    } catch (err) {
      if (controller.signal.aborted) return;
      showError(err);
    } finally {
      if (state.stream === controller) state.stream = null;
    }
    if (!ended && state.runId === id) {
      // The connection dropped: ask where the run is, and read on if it runs.
      try {
        const run = await api.json("GET", "/runs/" + encodeURIComponent(id));
        onRun(run);
        if (run.status === "running") setTimeout(() => state.runId === id && !state.stream && follow(id), 1000);
      } catch (err) {
        showError(err);
      }
    }
    loadLists();
  }

  // Shows run `id`: its events in the tree (and, when `chat`, in the chat).
  function openRun(id, chat) {
    if (state.stream) state.stream.abort();
    state.stream = null;
    state.runId = id;
    state.lastEventId = null;
    state.chat = chat;
    state.bubbles.clear();
    dropRequests(null);
    timeline.clear();
    $("timeline-run").textContent = id;
    for (const li of document.querySelectorAll("#runs-list li")) {
      li.classList.toggle("current", li.dataset.runId === id);
    }
    setStatus("running", "running");
    return follow(id);
  }

  // Reopens a past run: its task and replayed events.
  async function reopenRun(id) {
    showError(null);
    try {
      const run = await api.json("GET", "/runs/" + encodeURIComponent(id));
      $("chat-log").textContent = "";
      showTeam(run.team);
      if (run.session) setSession(run.session);
      bubble("user", "you", run.task);
      openRun(id, true);
    } catch (err) {
      showError(err);
    }
  }

  async function send(task) {
    showError(null);
    const session = $("session-input").value.trim() || null;
    bubble("user", "you", task);
    setStatus("running", "starting");
    try {
      const run = await api.json("POST", "/runs", { task: task, session: session, team: state.team || undefined });
      openRun(run.id, true);
      loadLists();
    } catch (err) {
      setStatus(null, "");
      showError(err);
    }
  }

  // ---- sessions ----------------------------------------------------------

  function setSession(id) {
    $("session-input").value = id;
    for (const li of document.querySelectorAll("#sessions-list li")) {
      li.classList.toggle("current", li.dataset.sessionId === id);
    }
  }

  // Reopens session `id`: its messages in the chat, its newest run's events
  // in the tree; the next message continues it.
  async function openSession(id) {
    showError(null);
    try {
      const session = await api.json("GET", "/sessions/" + encodeURIComponent(id));
      if (state.stream) state.stream.abort();
      $("chat-log").textContent = "";
      dropRequests(null);
      showTeam(session.team);
      setSession(id);
      for (const m of session.messages || []) {
        const text = typeof m.content === "string" ? m.content : contentText(m.content);
        bubble(m.sender === "user" ? "user" : "agent", m.sender, text);
      }
      const latest = state.runs.find((r) => r.session === id);
      if (latest) openRun(latest.id, false);
      else {
        timeline.clear();
        setStatus(null, "");
      }
    } catch (err) {
      showError(err);
    }
  }

  // ---- lists and team ----------------------------------------------------

  function when(t) {
    const d = new Date(t);
    return Number.isNaN(d.getTime()) ? "" : d.toLocaleTimeString();
  }

  function pickerItem(list, testid, label, detail, onPick) {
    const li = el("li");
    li.dataset.testid = testid;
    const button = el("button", "", "");
    button.type = "button";
    button.append(el("span", "label", label), el("span", "detail", detail));
    button.addEventListener("click", onPick);
    li.appendChild(button);
    list.appendChild(li);
    return li;
  }

  async function loadLists() {
    try {
      const [runs, sessions] = await Promise.all([api.json("GET", "/runs"), api.json("GET", "/sessions")]);
      state.runs = runs || [];
      const rl = $("runs-list");
      rl.textContent = "";
      for (const r of state.runs) {
        const fork = r.forked_from ? " · fork of " + r.forked_from.run_id : "";
        const li = pickerItem(rl, "run-item", r.task || r.id, r.status + " · " + when(r.started_at) + fork, () =>
          reopenRun(r.id)
        );
        if (r.forked_from) li.dataset.forkedFrom = r.forked_from.run_id;
        li.dataset.runId = r.id;
        li.dataset.status = r.status;
        li.classList.toggle("current", r.id === state.runId);
        li.title = r.id + (r.session ? " (session " + r.session + ")" : "");
      }
      if (!state.runs.length) rl.appendChild(el("li", "empty", "no runs yet"));
      const sl = $("sessions-list");
      sl.textContent = "";
      for (const s of sessions || []) {
        const li = pickerItem(sl, "session-item", s.id, s.messages + " messages · " + when(s.updated_at), () =>
          openSession(s.id)
        );
        li.dataset.sessionId = s.id;
        li.classList.toggle("current", s.id === $("session-input").value);
      }
      if (!(sessions || []).length) sl.appendChild(el("li", "empty", "no sessions yet"));
    } catch (err) {
      showError(err);
    }
  }

  // "fork from here": a small form under checkpoint line `li` (the last
  // message, edited, optional); sent, the fork opens in the tree.
  function askFork(checkpoint, li) {
    if (li.querySelector("form")) return;
    const from = state.runId;
    const form = el("form", "fork-form");
    form.dataset.testid = "fork-form";
    const input = el("input");
    input.placeholder = "last message, edited (optional)";
    input.dataset.testid = "fork-message";
    const go = el("button", "", "Fork");
    go.type = "submit";
    go.dataset.testid = "fork-submit";
    form.append(input, go);
    form.addEventListener("submit", async (e) => {
      e.preventDefault();
      go.disabled = true;
      const body = { checkpoint: checkpoint };
      if (input.value.trim()) body.message = input.value;
      try {
        const run = await api.json("POST", "/runs/" + encodeURIComponent(from) + "/fork", body);
        $("chat-log").appendChild(el("div", "note", "forked " + from + " at " + checkpoint + " as " + run.id));
        openRun(run.id, false);
        loadLists();
      } catch (err) {
        go.disabled = false;
        showError(err);
      }
    });
    li.appendChild(form);
    input.focus();
  }

  // A server of several teams (a directory of configs) gets a picker.
  async function loadTeams() {
    try {
      const models = await api.json("GET", "/v1/models");
      const names = ((models && models.data) || []).map((m) => m.id);
      const select = $("team-select");
      select.textContent = "";
      for (const name of names) select.appendChild(el("option", "", name));
      select.hidden = names.length < 2;
      if (names.length) state.team = names[0];
      $("team-name").hidden = !select.hidden;
    } catch (err) {
      showError(err);
    }
    await loadTeam();
  }

  // Switches to team `name` (a reopened run's or session's), if served.
  function showTeam(name) {
    if (!name || name === state.team) return;
    const select = $("team-select");
    if (![...select.options].some((o) => o.value === name)) return;
    state.team = name;
    select.value = name;
    loadTeam();
  }

  async function loadTeam() {
    try {
      const query = state.team ? "?team=" + encodeURIComponent(state.team) : "";
      const team = await api.json("GET", "/team" + query);
      $("conn-status").textContent = "connected";
      $("team-name").textContent = team.name || "team";
      $("team-description").textContent = team.description || "";
      document.title = (team.name || "team") + " · troupe console";
      const list = $("agents");
      list.textContent = "";
      for (const a of team.agents || []) {
        const li = el("li");
        li.dataset.agent = a.name;
        li.appendChild(el("span", "label", a.name));
        const model = a.model
          ? [a.model.provider, a.model.model].filter((x) => x).join(" · ")
          : "you (user)";
        const tools = a.tools && a.tools.length ? " · tools: " + a.tools.join(", ") : "";
        li.appendChild(el("span", "detail", model + tools));
        if (a.description) li.title = a.description;
        list.appendChild(li);
      }
      graph.render($("graph"), team.mermaid || "");
    } catch (err) {
      $("conn-status").textContent = "offline";
      showError(err);
    }
  }

  function start() {
    api.adoptToken();
    timeline = new Timeline($("timeline"));
    timeline.onFork = askFork;
    setSession(newSession());
    setStatus(null, "");
    $("chat-form").addEventListener("submit", (e) => {
      e.preventDefault();
      const input = $("chat-input");
      const task = input.value.trim();
      if (!task || $("chat-send").disabled) return;
      input.value = "";
      send(task);
    });
    $("chat-input").addEventListener("keydown", (e) => {
      if (e.key === "Enter" && !e.shiftKey) {
        e.preventDefault();
        $("chat-form").requestSubmit();
      }
    });
    $("team-select").addEventListener("change", (e) => {
      state.team = e.target.value;
      loadTeam();
      $("new-chat").click();
    });
    $("new-chat").addEventListener("click", () => {
      if (state.stream) state.stream.abort();
      state.runId = null;
      $("chat-log").textContent = "";
      dropRequests(null);
      timeline.clear();
      $("timeline-run").textContent = "";
      setStatus(null, "");
      setSession(newSession());
      $("chat-input").focus();
    });
    $("cancel-run").addEventListener("click", async () => {
      if (!state.runId) return;
      try {
        await api.json("POST", "/runs/" + encodeURIComponent(state.runId) + "/cancel");
      } catch (err) {
        showError(err);
      }
    });
    $("refresh-lists").addEventListener("click", loadLists);
    $("show-all").addEventListener("change", (e) => {
      $("timeline").classList.toggle("show-all", e.target.checked);
    });
    loadTeams();
    loadLists();
  }

  start();
})();
