// The workflow graph: the Mermaid flowchart `GET /team` gives (as
// `troupe graph` prints it) drawn as SVG, top to bottom, one layer per step.
//
// Only what troupe writes is read: `flowchart TD`, nodes `id["label"]` and
// `id(["label"])` (rounded), edges `a --> b` and `a -.-> b` (dashed), each
// with an optional `|"label"|`. Other lines are skipped. Edges that go back
// up (loops, turns handed back) are drawn as curves on the right.
"use strict";

(function () {
  const SVG = "http://www.w3.org/2000/svg";
  const NODE_H = 34;
  const LAYER_GAP = 64;
  const NODE_GAP = 28;
  const MAX_LABEL = 30;

  // A Mermaid label's text: troupe escapes `"`, `#` and `|` as entities.
  function unescape(text) {
    return text
      .replace(/#quot;/g, '"')
      .replace(/#(\d+);/g, (_, code) => String.fromCharCode(Number(code)));
  }

  // The node id troupe gives a participant `name` (see config/src/mermaid.rs).
  function nodeId(name) {
    let id = "n_";
    for (const c of name) {
      if (/[A-Za-z0-9_]/.test(c)) id += c;
      else id += "_" + c.codePointAt(0).toString(16) + "_";
    }
    return id;
  }

  // {nodes: [{id, label, round}], edges: [{from, to, label, dashed}]}
  function parse(text) {
    const nodes = [];
    const byId = new Map();
    const edges = [];
    const node = (id, label, round) => {
      let n = byId.get(id);
      if (!n) {
        n = { id: id, label: label === undefined ? id : label, round: !!round };
        byId.set(id, n);
        nodes.push(n);
      } else if (label !== undefined) {
        n.label = label;
        n.round = !!round;
      }
      return n;
    };
    const decl = /^\s*([\w-]+)\s*(\(\[|\[)"(.*)"(\]\)|\])\s*;?\s*$/;
    const edge = /^\s*([\w-]+)\s*(-\.->|-->|==>)\s*(?:\|"?(.*?)"?\|)?\s*([\w-]+)\s*;?\s*$/;
    for (const line of (text || "").split("\n")) {
      let m = decl.exec(line);
      if (m) {
        node(m[1], unescape(m[3]), m[2] === "([");
        continue;
      }
      m = edge.exec(line);
      if (m) {
        node(m[1]);
        node(m[4]);
        edges.push({ from: m[1], to: m[4], label: unescape(m[3] || ""), dashed: m[2] === "-.->" });
      }
    }
    return { nodes: nodes, edges: edges };
  }

  // Marks each edge `back` when it closes a cycle, and gives each node its
  // layer: the longest path to it from a node nothing points to.
  function layer(graph) {
    const out = new Map(graph.nodes.map((n) => [n.id, []]));
    const incoming = new Set();
    for (const e of graph.edges) {
      out.get(e.from).push(e);
      incoming.add(e.to);
    }
    const state = new Map(); // 1: on the stack, 2: done
    const order = [];
    const visit = (id) => {
      state.set(id, 1);
      for (const e of out.get(id)) {
        const s = state.get(e.to);
        if (s === 1) e.back = true;
        else if (!s) visit(e.to);
      }
      state.set(id, 2);
      order.push(id);
    };
    const starts = graph.nodes.filter((n) => !incoming.has(n.id)).concat(graph.nodes);
    for (const n of starts) if (!state.get(n.id)) visit(n.id);
    const rank = new Map(graph.nodes.map((n) => [n.id, 0]));
    for (const id of order.reverse()) {
      for (const e of out.get(id)) {
        if (!e.back) rank.set(e.to, Math.max(rank.get(e.to), rank.get(id) + 1));
      }
    }
    for (const n of graph.nodes) n.rank = rank.get(n.id);
  }

  function short(label) {
    return label.length > MAX_LABEL ? label.slice(0, MAX_LABEL - 1) + "…" : label;
  }

  function width(text, size) {
    return text.length * size * 0.6;
  }

  // Places nodes in their layers, each layer centred, ordered by where the
  // nodes above that point to them sit.
  function place(graph) {
    const layers = [];
    for (const n of graph.nodes) {
      n.text = short(n.label);
      n.w = Math.max(72, width(n.text, 13) + 28);
      (layers[n.rank] = layers[n.rank] || []).push(n);
    }
    const byId = new Map(graph.nodes.map((n) => [n.id, n]));
    const parents = (n) =>
      graph.edges.filter((e) => !e.back && e.to === n.id).map((e) => byId.get(e.from));
    let widest = 0;
    layers.forEach((nodes, i) => {
      if (i > 0) {
        const key = (n) => {
          const ps = parents(n);
          return ps.length ? ps.reduce((s, p) => s + p.x, 0) / ps.length : Infinity;
        };
        nodes.sort((a, b) => key(a) - key(b));
      }
      let x = 0;
      for (const n of nodes) {
        n.x = x + n.w / 2;
        x += n.w + NODE_GAP;
      }
      nodes.total = x - NODE_GAP;
      widest = Math.max(widest, nodes.total);
    });
    layers.forEach((nodes, i) => {
      const shift = (widest - nodes.total) / 2;
      for (const n of nodes) {
        n.x += shift;
        n.y = i * (NODE_H + LAYER_GAP) + NODE_H / 2;
      }
    });
    return { byId: byId, width: widest, height: layers.length * (NODE_H + LAYER_GAP) - LAYER_GAP };
  }

  function el(name, attrs, parent) {
    const e = document.createElementNS(SVG, name);
    for (const k in attrs) e.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(e);
    return e;
  }

  function edgeLabel(g, text, x, y) {
    if (!text) return;
    const t = short(text);
    const w = width(t, 11) + 8;
    el("rect", { class: "edge-label-bg", x: x - w / 2, y: y - 8, width: w, height: 16, rx: 3 }, g);
    const label = el("text", { class: "edge-label", x: x, y: y + 4, "text-anchor": "middle" }, g);
    label.textContent = t;
    if (t !== text) el("title", {}, label).textContent = text;
  }

  // Draws `mermaid` into `container` (replacing what it held).
  function render(container, mermaid) {
    const graph = parse(mermaid);
    container.textContent = "";
    if (!graph.nodes.length) {
      container.textContent = "No workflow graph.";
      return;
    }
    layer(graph);
    const at = place(graph);
    const pad = 12;
    const loops = graph.edges.filter((e) => e.back || at.byId.get(e.from).rank === at.byId.get(e.to).rank);
    const labelRoom = Math.max(0, ...loops.map((e) => width(short(e.label), 11) / 2));
    const right = loops.length ? 40 + 18 * loops.length + labelRoom : 0;
    const w = at.width + 2 * pad + right;
    const h = at.height + 2 * pad;
    const svg = el("svg", {
      viewBox: -pad + " " + -pad + " " + w + " " + h,
      width: w,
      height: h,
      role: "img",
      "aria-label": "workflow graph",
      "data-testid": "graph-svg",
    });
    const defs = el("defs", {}, svg);
    const marker = el("marker", {
      id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5,
      markerWidth: 7, markerHeight: 7, orient: "auto-start-reverse",
    }, defs);
    el("path", { d: "M0,0 L10,5 L0,10 z", class: "arrow-head" }, marker);

    const edges = el("g", { class: "edges" }, svg);
    graph.edges.forEach((e) => {
      const a = at.byId.get(e.from);
      const b = at.byId.get(e.to);
      const g = el("g", { class: "edge" + (e.dashed ? " dashed" : ""), "data-from": e.from, "data-to": e.to }, edges);
      if (loops.includes(e)) {
        const k = loops.indexOf(e);
        const x1 = a.x + a.w / 2;
        const x2 = b.x + b.w / 2;
        const bend = Math.max(x1, x2) + 30 + 18 * k;
        el("path", {
          d: "M" + x1 + "," + a.y + " C" + bend + "," + a.y + " " + bend + "," + b.y + " " + (x2 + 2) + "," + b.y,
          "marker-end": "url(#arrow)",
        }, g);
        edgeLabel(g, e.label, bend - 8, (a.y + b.y) / 2);
      } else {
        const y1 = a.y + NODE_H / 2;
        const y2 = b.y - NODE_H / 2 - 2;
        el("path", { d: "M" + a.x + "," + y1 + " L" + b.x + "," + y2, "marker-end": "url(#arrow)" }, g);
        // Nearer the end with fewer edges, so labels of edges that fan out
        // (or in) part.
        const fanIn = graph.edges.filter((f) => f.to === e.to).length;
        const fanOut = graph.edges.filter((f) => f.from === e.from).length;
        const t = fanIn > fanOut ? 0.35 : 0.65;
        edgeLabel(g, e.label, a.x + (b.x - a.x) * t, y1 + (y2 - y1) * t);
      }
    });

    const nodes = el("g", { class: "nodes" }, svg);
    for (const n of graph.nodes) {
      const g = el("g", {
        class: "node" + (n.round ? " round" : ""),
        "data-node": n.id,
        "data-label": n.label,
        "data-testid": "graph-node",
      }, nodes);
      el("title", {}, g).textContent = n.label;
      el("rect", {
        x: n.x - n.w / 2, y: n.y - NODE_H / 2, width: n.w, height: NODE_H,
        rx: n.round ? NODE_H / 2 : 6,
      }, g);
      const t = el("text", { x: n.x, y: n.y + 4.5, "text-anchor": "middle" }, g);
      t.textContent = n.text;
    }
    container.appendChild(svg);
  }

  // Marks the nodes that stand for agent `name` as speaking (or not).
  function highlight(container, name, on) {
    const id = nodeId(name);
    for (const g of container.querySelectorAll("g.node")) {
      const label = g.getAttribute("data-label") || "";
      if (
        g.getAttribute("data-node") === id ||
        label === name ||
        label.endsWith(": " + name) ||
        label.startsWith(name + " ")
      ) {
        g.classList.toggle("active", on);
      }
    }
  }

  window.troupe = window.troupe || {};
  window.troupe.graph = { parse, render, highlight, nodeId };
})();
