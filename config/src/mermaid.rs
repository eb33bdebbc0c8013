//! The workflow as a Mermaid flowchart (`troupe graph`).

use std::collections::BTreeSet;
use std::fmt::Write;

use crate::load::Config;
use crate::plan::Plan;
use crate::refs::{ref_id, split_ref};
use crate::schema::{PlacementSpec, PlanSectionSpec, WorkflowSpec};
use troupe_planning::PlanGraph;

/// A Mermaid node id: letters, digits and `_` only (names may hold `-`
/// or `#`), prefixed so it never collides with Mermaid keywords.
fn node_id(name: &str) -> String {
    let mut id = String::from("n_");
    for c in name.chars() {
        if c.is_ascii_alphanumeric() || c == '_' {
            id.push(c);
        } else {
            let _ = write!(id, "_{:x}_", c as u32);
        }
    }
    id
}

/// Text for inside a quoted label: Mermaid reads `"` and `#` specially,
/// and a label is one line.
fn label(text: &str) -> String {
    text.replace('\n', " ")
        .replace('#', "#35;")
        .replace('"', "#quot;")
        .replace('|', "#124;")
}

struct Chart {
    out: String,
    declared: BTreeSet<String>,
}

impl Chart {
    fn new() -> Self {
        Chart {
            out: String::from("flowchart TD\n"),
            declared: BTreeSet::new(),
        }
    }

    fn node(&mut self, name: &str, text: &str, round: bool) -> String {
        let id = node_id(name);
        if self.declared.insert(id.clone()) {
            let t = label(text);
            let _ = if round {
                writeln!(self.out, "    {id}([\"{t}\"])")
            } else {
                writeln!(self.out, "    {id}[\"{t}\"]")
            };
        }
        id
    }

    fn edge(&mut self, from: &str, to: &str, text: &str, dashed: bool) {
        let arrow = if dashed { "-.->" } else { "-->" };
        if text.is_empty() {
            let _ = writeln!(self.out, "    {from} {arrow} {to}");
        } else {
            let _ = writeln!(self.out, "    {from} {arrow}|\"{}\"| {to}", label(text));
        }
    }
}

/// A participant reference's label: its name, what it is, and the node it
/// runs on (`researcher@b`, or an agent with `node: b`).
fn participant_label(config: &Config, reference: &str) -> String {
    let (name, node) = split_ref(reference).unwrap_or((reference, None));
    let node = node.or_else(|| config.spec().agents.get(name)?.node.as_deref());
    let mut text = name.to_string();
    if config.spec().workflows.contains_key(name) {
        text.push_str(" (workflow)");
    }
    if let Some(n) = node {
        text.push_str(&format!(" @ node {n}"));
    }
    text
}

impl Config {
    /// The workflow as a Mermaid flowchart (`troupe graph`).
    pub fn mermaid(&self) -> String {
        let mut c = Chart::new();
        let user = c.node("user", "user", true);
        match &self.spec().workflow {
            Some(w) => draw(&mut c, self, w, &user),
            None => {
                if let Some(name) = self.spec().agents.keys().next() {
                    let a = c.node(name, name, false);
                    c.edge(&user, &a, "", false);
                }
            }
        }
        c.out
    }
}

fn draw(c: &mut Chart, config: &Config, w: &WorkflowSpec, user: &str) {
    let label_of = |n: &str| participant_label(config, n);
    if let Some(t) = &w.round_robin {
        let ids: Vec<String> = t
            .participants
            .iter()
            .map(|n| c.node(ref_id(n), &label_of(n), false))
            .collect();
        if let Some(first) = ids.first() {
            c.edge(user, first, "", false);
        }
        for (i, id) in ids.iter().enumerate() {
            let next = &ids[(i + 1) % ids.len()];
            c.edge(id, next, "next turn", i + 1 == ids.len());
        }
    } else if let Some(s) = &w.selector {
        let sel = c.node("selector", "selector", true);
        c.edge(user, &sel, "", false);
        for n in &s.participants {
            let id = c.node(ref_id(n), &label_of(n), false);
            c.edge(&sel, &id, "selected", false);
            c.edge(&id, &sel, "", true);
        }
    } else if let Some(m) = &w.magentic {
        let manager = c.node("manager", "manager: ledgers", true);
        c.edge(user, &manager, "", false);
        for n in &m.participants {
            let id = c.node(ref_id(n), &label_of(n), false);
            c.edge(&manager, &id, "instructs", false);
            c.edge(&id, &manager, "", true);
        }
    } else if let Some(t) = &w.swarm {
        let ids: Vec<String> = t
            .participants
            .iter()
            .map(|n| c.node(ref_id(n), &label_of(n), false))
            .collect();
        if let Some(first) = ids.first() {
            c.edge(user, first, "", false);
        }
        for n in &t.participants {
            let from = node_id(ref_id(n));
            for target in config
                .spec()
                .agents
                .get(ref_id(n))
                .map(|a| a.handoffs.clone())
                .unwrap_or_default()
            {
                if target == troupe_runtime::message::USER {
                    c.edge(&from, user, "handoff to user", true);
                } else if t.participants.iter().any(|p| ref_id(p) == target) {
                    let to = node_id(&target);
                    c.edge(&from, &to, &format!("handoff to {target}"), false);
                }
            }
        }
    } else if let Some(s) = &w.sequential {
        let mut prev = user.to_string();
        for n in &s.participants {
            let id = c.node(ref_id(n), &label_of(n), false);
            c.edge(&prev, &id, "", false);
            prev = id;
        }
    } else if let Some(m) = &w.map_reduce {
        let mapper = c.node(ref_id(&m.mapper), &label_of(&m.mapper), false);
        let worker = if PlacementSpec::spreads(m.placement) {
            format!("{} × N, spread over nodes", ref_id(&m.worker))
        } else {
            format!("{} × N", label_of(&m.worker))
        };
        let map = c.node("map", &format!("map: {worker}"), true);
        let reducer = c.node(ref_id(&m.reducer), &label_of(&m.reducer), false);
        c.edge(user, &mapper, "", false);
        c.edge(&mapper, &map, "sub-tasks", false);
        c.edge(&map, &reducer, "results", false);
    } else if let Some(plan) = w
        .graph
        .as_ref()
        .map(Plan::of_graph)
        .or_else(|| w.steps.as_deref().map(Plan::of_steps))
    {
        draw_plan(c, config, &plan, user);
    } else if let Some(p) = &w.plan {
        draw_planning(c, config, p, user);
    } else if let Some(r) = &w.reasoner {
        // The reasoner loops: its actions run and come back to it.
        let n = c.node(&r.agent, &format!("reasoner: {}", r.agent), true);
        c.edge(user, &n, "", false);
        for a in &r.actions {
            let id = c.node(ref_id(a), &participant_label(config, a), false);
            c.edge(&n, &id, "next action", true);
            c.edge(&id, &n, "result", true);
        }
        for t in &r.tools {
            let name = match t {
                crate::schema::ToolSpec::Builtin(b, _) => b.name().to_string(),
                crate::schema::ToolSpec::Agent(a) => {
                    a.name.clone().unwrap_or_else(|| a.target().to_string())
                }
                crate::schema::ToolSpec::Mcp(m) => {
                    format!("mcp {}", m.name.as_deref().unwrap_or("server"))
                }
            };
            let id = c.node(&format!("tool {name}"), &format!("tool: {name}"), false);
            c.edge(&n, &id, "next action", true);
            c.edge(&id, &n, "result", true);
        }
    }
    if let Some(r) = &w.router {
        // Routes: who hears whom (dotted when a graph decides who runs).
        let dashed = w.graph.is_some();
        let members = r.route_members(|_| true);
        for route in &r.routes {
            let to = c.node(&route.to, &label_of(&route.to), false);
            let mut opts = Vec::new();
            if let Some(n) = route.batch_size {
                opts.push(format!("batch {n}"));
            }
            if let Some(t) = &route.ttl {
                opts.push(format!("ttl {t}"));
            }
            let text = opts.join(", ");
            for from in &route.from.0 {
                if from == "*" {
                    for m in members.iter().filter(|m| **m != route.to) {
                        let f = c.node(m, &label_of(m), false);
                        c.edge(&f, &to, &text, dashed);
                    }
                } else if from == troupe_runtime::message::USER {
                    c.edge(user, &to, &text, dashed);
                } else {
                    let f = c.node(from, &label_of(from), false);
                    c.edge(&f, &to, &text, dashed);
                }
            }
        }
        // A router-only member that no route targets hears every sender
        // (the router's default): one dashed edge from everyone, said.
        if w.graph.is_none() {
            let members = r.participants.clone().unwrap_or(members);
            let everyone = members
                .iter()
                .map(|m| ref_id(m).to_string())
                .filter(|m| !r.routes.iter().any(|route| &route.to == m))
                .collect::<Vec<_>>();
            if !everyone.is_empty() && !r.routes.is_empty() {
                let all = c.node("everyone", "everyone", true);
                for m in &everyone {
                    let to = c.node(m, &label_of(m), false);
                    c.edge(&all, &to, "hears everyone", true);
                }
            }
        }
    }
}

fn draw_plan(c: &mut Chart, config: &Config, plan: &Plan, user: &str) {
    let ids: Vec<String> = plan
        .nodes
        .iter()
        .map(|n| {
            let text = if let Some(block) = plan.blocks.get(&n.id) {
                // A parallel block with `retry:`: one node, rerun whole.
                let steps: Vec<&str> = block.nodes.iter().map(|s| s.id.as_str()).collect();
                format!("{}: parallel {}, retried whole", n.id, steps.join(" + "))
            } else if n.id == ref_id(&n.target) {
                participant_label(config, &n.target)
            } else {
                format!("{}: {}", n.id, participant_label(config, &n.target))
            };
            c.node(&n.id, &text, false)
        })
        .collect();
    let starts: Vec<usize> = if plan.starts.is_empty() {
        // Nodes without an incoming forward transition start.
        (0..plan.nodes.len())
            .filter(|i| !plan.edges.iter().any(|e| e.to == *i && !e.is_loop))
            .collect()
    } else {
        plan.starts.clone()
    };
    for s in starts {
        c.edge(user, &ids[s], "", false);
    }
    for e in &plan.edges {
        let back = e.is_loop || plan_is_back(plan, e.from, e.to);
        let mut text = e.cond.label();
        if back {
            text = if text.is_empty() {
                "loop".into()
            } else {
                format!("loop: {text}")
            };
        }
        c.edge(&ids[e.from], &ids[e.to], &text, back);
    }
}

/// A `plan:` workflow: its text plan's steps and edges, its action groups
/// (each group of several joined by a merge node), or its planner.
fn draw_planning(c: &mut Chart, config: &Config, p: &PlanSectionSpec, user: &str) {
    let step = |c: &mut Chart, id: &str| {
        let agent = p.steps.get(id).map_or(id, |s| s.agent.as_str());
        let text = if agent == id {
            participant_label(config, id)
        } else {
            format!("{id}: {}", participant_label(config, agent))
        };
        c.node(id, &text, false)
    };
    if let Some(graph) = p.text.as_deref().and_then(|t| PlanGraph::parse(t).ok()) {
        for id in graph.starts() {
            let n = step(c, id);
            c.edge(user, &n, "", false);
        }
        for (from, to) in graph.edges() {
            let (a, b) = (step(c, from), step(c, to));
            c.edge(&a, &b, "", false);
        }
    } else if let Some(groups) = &p.groups {
        let mut prev = user.to_string();
        for group in groups {
            let ids: Vec<String> = group.iter().map(|id| step(c, id)).collect();
            for id in &ids {
                c.edge(&prev, id, "", false);
            }
            prev = match ids.as_slice() {
                [one] => one.clone(),
                _ => {
                    let by = p.summarizer.as_deref().unwrap_or("collect");
                    let merge = c.node(&group.join("+"), &format!("merge: {by}"), true);
                    for id in &ids {
                        c.edge(id, &merge, "", false);
                    }
                    merge
                }
            };
        }
    } else if let Some(planner) = &p.planner {
        let n = c.node("planner", &format!("planner ({})", planner.model), true);
        c.edge(user, &n, "", false);
        for a in &planner.agents {
            let id = c.node(ref_id(a), &participant_label(config, a), false);
            c.edge(&n, &id, "plan step", true);
        }
    }
}

/// Whether `to` comes before `from` in the order nodes were written (a
/// transition back: drawn dotted).
fn plan_is_back(_plan: &Plan, from: usize, to: usize) -> bool {
    to <= from
}
