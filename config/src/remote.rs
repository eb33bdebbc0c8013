//! Cluster placement in a config: which participants run on other nodes,
//! and which agents a node hosts.
//!
//! The rules are on [`RemoteRef`].

use std::collections::BTreeSet;
use std::fmt;

use crate::load::Config;
use crate::refs::{ref_id, split_ref};
use crate::schema::{ConfigFile, PlacementSpec, StepKind, StepSpec, WorkflowSpec};

/// An agent (or named workflow) that a workflow uses from another node of
/// the cluster.
///
/// Three things put work on other nodes:
///
/// - `node: b` on an agent: the workflow sends that agent's turns to node
///   `b` (a [`RemoteAgent`](troupe_cluster::RemoteAgent) pinned to
///   it), under the agent's own name, so routes, graph transitions and
///   templates are unchanged;
/// - a reference `researcher@b` where a workflow names a participant (preset
///   participant lists, `map_reduce`'s mapper, worker and reducer, graph
///   nodes, agent steps, a router's `participants`): the same, for this use
///   only. The agent need not be declared in this file (node `b`'s config
///   declares it);
/// - `placement: spread` (or `least_busy`) on a `map_reduce`: its workers
///   are remote agents taking turns over every node that hosts the worker.
///
/// `troupe node --config FILE --name NODE` hosts, by this rule
/// ([`Config::hosted_by`](crate::Config::hosted_by)):
///
/// - when the file places nothing on any node, every agent it declares;
/// - otherwise, the agents placed on `NODE` (`node: NODE`, `x@NODE`
///   references) and the workers of `placement: spread` / `least_busy`
///   map-reduces (every node hosts those).
///
/// So one file can describe the whole cluster: each node hosts its share,
/// and the process running the workflow (`troupe run --connect …`) finds
/// them by name.
///
/// ```
/// use troupe_config::{Config, RemoteRef};
///
/// let yaml = r#"
/// version: 1
/// models:
///   m: {provider: scripted, replies: [ok]}
/// agents:
///   writer: {model: m}
///   researcher: {model: m, node: b}
/// workflow:
///   sequential: {participants: [writer, researcher, editor@c]}
/// "#;
/// let config = Config::parse(yaml, "team.yaml").unwrap();
/// let remote: Vec<String> = config.remote_agents().iter().map(ToString::to_string).collect();
/// assert_eq!(remote, ["editor@c", "researcher@b"]);
/// assert_eq!(config.hosted_by("b"), ["researcher"]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RemoteRef {
    /// The hosted agent's (or named workflow's) name.
    pub agent: String,
    /// The node it runs on; `None`: any node hosting it (`placement:
    /// spread` or `least_busy`).
    pub node: Option<String>,
}

impl fmt::Display for RemoteRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.node {
            Some(n) => write!(f, "{}@{n}", self.agent),
            None => write!(f, "{} (any node)", self.agent),
        }
    }
}

/// Every participant reference a workflow makes (names as written), and
/// the worker of a spread map-reduce separately.
fn references<'w>(w: &'w WorkflowSpec, out: &mut Vec<&'w str>, spread: &mut Vec<&'w str>) {
    for list in [
        w.round_robin.as_ref().map(|t| &t.participants),
        w.selector.as_ref().map(|s| &s.participants),
        w.swarm.as_ref().map(|t| &t.participants),
        w.magentic.as_ref().map(|m| &m.participants),
        w.sequential.as_ref().map(|s| &s.participants),
        w.router.as_ref().and_then(|r| r.participants.as_ref()),
    ]
    .into_iter()
    .flatten()
    {
        out.extend(list.iter().map(String::as_str));
    }
    if let Some(m) = &w.map_reduce {
        out.push(&m.mapper);
        out.push(&m.reducer);
        if PlacementSpec::spreads(m.placement) {
            spread.push(&m.worker);
        } else {
            out.push(&m.worker);
        }
    }
    if let Some(g) = &w.graph {
        out.extend(g.nodes.iter().map(|n| n.0.agent.as_str()));
    }
    if let Some(steps) = &w.steps {
        step_references(steps, out);
    }
}

fn step_references<'w>(steps: &'w [StepSpec], out: &mut Vec<&'w str>) {
    for s in steps {
        if s.step_kind() == Some(StepKind::Agent)
            && let Some(t) = s.target()
        {
            out.push(t);
        }
        for list in s.children() {
            step_references(list, out);
        }
    }
}

/// Where a reference runs: a node, or `None` for here.
fn node_of<'s>(spec: &'s ConfigFile, reference: &'s str) -> Option<(&'s str, &'s str)> {
    let (agent, node) = split_ref(reference)?;
    let node = match node {
        Some(n) => n,
        None => spec.agents.get(agent)?.node.as_deref()?,
    };
    Some((agent, node))
}

impl Config {
    /// The agents the workflow, the file's named workflows and the files
    /// it nests use from other nodes of the cluster: agents with `node:`,
    /// `agent@node` references, and the workers of `placement: spread`
    /// map-reduces. Empty when everything runs in one process.
    pub fn remote_agents(&self) -> Vec<RemoteRef> {
        let mut found = BTreeSet::new();
        self.collect_remote(&mut found);
        found.into_iter().collect()
    }

    fn collect_remote(&self, found: &mut BTreeSet<RemoteRef>) {
        let spec = self.spec();
        let (mut refs, mut spread) = (Vec::new(), Vec::new());
        for w in spec.local_workflows() {
            references(w, &mut refs, &mut spread);
        }
        if spec.workflow.is_none()
            && let Some(only) = spec.agents.keys().next()
        {
            refs.push(only);
        }
        for r in refs {
            if let Some((agent, node)) = node_of(spec, r) {
                found.insert(RemoteRef {
                    agent: agent.to_string(),
                    node: Some(node.to_string()),
                });
            }
        }
        for w in spread {
            found.insert(RemoteRef {
                agent: ref_id(w).to_string(),
                node: None,
            });
        }
        for nested in self.nested_configs() {
            nested.collect_remote(found);
        }
    }

    /// The agents (and named workflows) `troupe node --name NODE` hosts
    /// from this file, sorted: every declared agent when the file places
    /// nothing on any node; otherwise those placed on `node` (`node:
    /// NODE`, `x@NODE` references) and the workers of spread map-reduces.
    /// Only what this file declares: an `x@NODE` reference to an agent it
    /// does not declare is for another config to host.
    pub fn hosted_by(&self, node: &str) -> Vec<String> {
        let spec = self.spec();
        let mut placed = false;
        let mut out = BTreeSet::new();
        for (name, a) in &spec.agents {
            if let Some(n) = &a.node {
                placed = true;
                if n == node {
                    out.insert(name.as_str());
                }
            }
        }
        let (mut refs, mut spread) = (Vec::new(), Vec::new());
        for w in spec.local_workflows() {
            references(w, &mut refs, &mut spread);
        }
        for r in refs {
            if let Some((agent, Some(n))) = split_ref(r) {
                placed = true;
                if n == node {
                    out.insert(agent);
                }
            }
        }
        for w in spread {
            placed = true;
            out.insert(ref_id(w));
        }
        if !placed {
            return spec.agents.keys().cloned().collect();
        }
        out.into_iter()
            .filter(|n| spec.agents.contains_key(*n) || spec.workflows.contains_key(*n))
            .map(str::to_string)
            .collect()
    }

    /// The nodes this file places agents on by name (`node:`, `x@node`),
    /// sorted.
    pub fn nodes(&self) -> Vec<String> {
        let spec = self.spec();
        let mut out: BTreeSet<&str> = spec
            .agents
            .values()
            .filter_map(|a| a.node.as_deref())
            .collect();
        let (mut refs, mut spread) = (Vec::new(), Vec::new());
        for w in spec.local_workflows() {
            references(w, &mut refs, &mut spread);
        }
        out.extend(refs.into_iter().filter_map(|r| split_ref(r)?.1));
        out.into_iter().map(str::to_string).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::build::BuildOptions;
    use troupe_runtime::{RunContext, Workflow};

    const MODELS: &str = "version: 1
models:
  m: {provider: scripted, replies: [hi], when_exhausted: repeat_last}
";

    fn config(rest: &str) -> Config {
        match Config::parse(&format!("{MODELS}{rest}"), "t.yaml") {
            Ok(c) => c,
            Err(e) => panic!("{e}"),
        }
    }

    fn remote(c: &Config) -> Vec<String> {
        c.remote_agents().iter().map(ToString::to_string).collect()
    }

    /// Runs the config's workflow with no cluster: a remote participant
    /// fails its turn, naming its node and agent. (Time is paused in the
    /// callers: the few seconds a turn waits for a replica pass at once.)
    async fn run_alone(c: &Config) -> String {
        let built = c.build(&BuildOptions::default()).await.unwrap();
        match built.workflow.run_task("go", &RunContext::new()).await {
            Err(e) => e.to_string(),
            Ok(r) => format!("completed: {}", r.final_text()),
        }
    }

    #[test]
    fn an_agent_with_a_node_is_remote_and_hosted_there() {
        let c = config(
            "agents:
  writer: {model: m}
  researcher: {model: m, node: b}
workflow:
  graph:
    nodes:
      - writer
      - {agent: researcher, retry: {max_attempts: 1, on: [node]}}
    transitions: [{from: writer, to: researcher}]
",
        );
        assert_eq!(remote(&c), ["researcher@b"]);
        assert_eq!(c.hosted_by("b"), ["researcher"]);
        assert!(c.hosted_by("c").is_empty());
        assert_eq!(c.nodes(), ["b"]);
    }

    #[test]
    fn references_to_agents_on_nodes_are_accepted_undeclared() {
        // `editor@c` is declared by node c's config, not this one; graph
        // and step ids drop the `@node` part, so transitions and templates
        // name the agent alone.
        let c = config(
            "agents:
  writer: {model: m}
workflow:
  graph:
    nodes: [writer, editor@c, {id: second, agent: writer@b}]
    transitions:
      - {from: writer, to: editor}
      - {from: editor, to: second}
",
        );
        assert_eq!(remote(&c), ["editor@c", "writer@b"]);
        // c declares no `editor` here: nothing to host from this file.
        assert!(c.hosted_by("c").is_empty());
        assert_eq!(c.hosted_by("b"), ["writer"]);
        let steps = config(
            "agents:
  writer: {model: m}
workflow:
  steps:
    - agent: writer@b
    - condition: \"{{ $steps.writer.output }}\"
      true: writer
",
        );
        assert_eq!(remote(&steps), ["writer@b"]);
        let team = config(
            "agents:
  a: {model: m}
  b: {model: m, node: x}
workflow:
  sequential: {participants: [a@y, b, c@z]}
",
        );
        assert_eq!(remote(&team), ["a@y", "b@x", "c@z"]);
    }

    #[test]
    fn a_spread_map_reduce_is_hosted_by_every_node() {
        let c = config(
            "agents:
  split: {model: m}
  work: {model: m}
  join: {model: m}
  lookup: {model: m, node: b}
workflow:
  map_reduce: {mapper: split, worker: work, reducer: join, placement: spread, failover: 1}
",
        );
        assert_eq!(remote(&c), ["work (any node)"]);
        assert_eq!(c.hosted_by("b"), ["lookup", "work"]);
        assert_eq!(c.hosted_by("c"), ["work"]);
    }

    #[test]
    fn a_file_that_places_nothing_is_hosted_whole() {
        let c = config(
            "agents:
  a: {model: m}
  b: {model: m}
workflow: {sequential: {participants: [a, b]}}
",
        );
        assert!(c.remote_agents().is_empty());
        assert_eq!(c.hosted_by("anything"), ["a", "b"]);
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn the_built_workflow_calls_the_node() {
        let c = config(
            "agents:
  writer: {model: m}
  researcher: {model: m, node: b}
workflow: {sequential: {participants: [writer, researcher]}}
",
        );
        let error = run_alone(&c).await;
        assert!(
            error.contains("'researcher'") && error.contains("node 'b'"),
            "{error}"
        );
        let pinned = config(
            "agents:
  writer: {model: m}
workflow: {round_robin: {participants: [writer, critic@c]}, max_turns: 2}
",
        );
        let error = run_alone(&pinned).await;
        assert!(
            error.contains("'critic'") && error.contains("node 'c'"),
            "{error}"
        );
    }

    #[tokio::test(flavor = "current_thread", start_paused = true)]
    async fn spread_workers_are_remote() {
        let c = config(
            "agents:
  split: {model: m, script: ['[\"x\", \"y\"]']}
  work: {model: m}
  join: {model: m}
workflow:
  map_reduce: {mapper: split, worker: work, reducer: join, placement: spread}
",
        );
        let error = run_alone(&c).await;
        assert!(error.contains("no live node hosts agent 'work'"), "{error}");
        // Local (the default): the same team runs in the process.
        let local = config(
            "agents:
  split: {model: m, script: ['[\"x\", \"y\"]']}
  work: {model: m}
  join: {model: m, script: [joined]}
workflow:
  map_reduce: {mapper: split, worker: work, reducer: join}
",
        );
        assert_eq!(run_alone(&local).await, "completed: joined");
    }

    #[tokio::test]
    async fn a_node_builds_its_own_agents_locally() {
        let c = config(
            "agents:
  writer: {model: m}
  researcher: {model: m, node: b, script: [notes]}
workflow: {sequential: {participants: [writer, researcher]}}
",
        );
        let names = c.hosted_by("b");
        let hosted = c
            .build_hosted(&names, "b", &BuildOptions::default())
            .await
            .unwrap();
        assert_eq!(hosted.agents.len(), 1);
        assert_eq!(hosted.agents[0].name(), "researcher");
        let alone = Workflow::builder()
            .participant_arc(hosted.agents[0].clone())
            .build()
            .unwrap();
        let r = alone.run_task("go", &RunContext::new()).await.unwrap();
        assert_eq!(r.final_text(), "notes");
        let unknown = c
            .build_hosted(&["ghost".to_string()], "b", &BuildOptions::default())
            .await
            .unwrap_err();
        assert!(unknown.to_string().contains("`ghost`"), "{unknown}");
    }
}
