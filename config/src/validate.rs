//! Checks what types alone cannot: names that must exist, steps referenced
//! before they exist, loops with no exit, options that do not go together.
//! Every problem is collected, with the position of the field at fault.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::de::one_of;
use super::error::Diagnostic;
use super::remote::{ref_id, split_ref, spreads};
use super::schema::{
    AgentSpec, BranchSpec, ConditionForm, ConditionSpec, ConfigFile, GraphSpec, ModelSpec,
    PlacementSpec, Provider, StepKind, StepSpec, StopSpec, StoreKind, ToolSpec, WorkflowSpec,
};
use super::template::{Expr, Template};
use super::tree::{FieldPath, Node};
use troupe_runtime::USER;

/// Collects problems with positions.
pub(crate) struct Checker<'a> {
    file: &'a Path,
    tree: &'a Node,
    removed: &'a [FieldPath],
    pub(crate) diagnostics: Vec<Diagnostic>,
}

fn p(segments: &[&str]) -> FieldPath {
    segments
        .iter()
        .fold(FieldPath::root(), |path, s| path.key(*s))
}

impl<'a> Checker<'a> {
    pub(crate) fn new(file: &'a Path, tree: &'a Node, removed: &'a [FieldPath]) -> Self {
        Checker {
            file,
            tree,
            removed,
            diagnostics: Vec::new(),
        }
    }

    /// A problem with the field at `path` (its key's position).
    fn error(&mut self, path: &FieldPath, message: impl Into<String>, expected: Option<String>) {
        let mut d = Diagnostic::new(
            self.file,
            self.tree.position_of(path),
            path.to_string(),
            message,
        );
        d.expected = expected;
        self.diagnostics.push(d);
    }

    /// A problem with the value at `path` (where the value starts).
    fn value_error(
        &mut self,
        path: &FieldPath,
        message: impl Into<String>,
        expected: Option<String>,
    ) {
        let mut d = Diagnostic::new(
            self.file,
            self.tree.value_position(path),
            path.to_string(),
            message,
        );
        d.expected = expected;
        self.diagnostics.push(d);
    }

    /// Whether `path` was dropped for an error already reported.
    fn was_removed(&self, path: &FieldPath) -> bool {
        self.removed.iter().any(|r| path.starts_with(r))
    }

    /// Whether something inside `path` was dropped.
    fn lost_part(&self, path: &FieldPath) -> bool {
        self.removed.iter().any(|r| r.starts_with(path))
    }
}

/// The names a config defines, for checking references.
struct Names {
    models: BTreeSet<String>,
    agents: BTreeSet<String>,
    workflows: BTreeSet<String>,
    /// Entries removed for structural errors: references to them are not
    /// reported again.
    broken: BTreeSet<String>,
}

impl Names {
    fn of(spec: &ConfigFile, removed: &[FieldPath]) -> Self {
        let mut broken = BTreeSet::new();
        for r in removed {
            if let [
                super::tree::Seg::Key(section),
                super::tree::Seg::Key(name),
                ..,
            ] = r.0.as_slice()
                && matches!(section.as_str(), "models" | "agents" | "workflows")
            {
                broken.insert(name.clone());
            }
        }
        Names {
            models: spec.models.keys().cloned().collect(),
            agents: spec.agents.keys().cloned().collect(),
            workflows: spec.workflows.keys().cloned().collect(),
            broken,
        }
    }

    fn participant(&self, name: &str) -> bool {
        self.agents.contains(name) || self.workflows.contains(name) || self.broken.contains(name)
    }

    fn participants(&self) -> Vec<&str> {
        self.agents
            .iter()
            .chain(self.workflows.iter())
            .map(String::as_str)
            .collect()
    }
}

fn expected_names(names: Vec<&str>) -> Option<String> {
    if names.is_empty() {
        Some("a name defined in the config (none are)".into())
    } else {
        Some(one_of(&names))
    }
}

/// Checks a deserialized config. `removed` are the paths dropped while
/// deserializing (their errors are already reported).
pub(crate) fn check(
    spec: &ConfigFile,
    tree: &Node,
    file: &Path,
    removed: &[FieldPath],
) -> Vec<Diagnostic> {
    let mut c = Checker::new(file, tree, removed);
    let names = Names::of(spec, removed);

    if spec.version != super::schema::CONFIG_VERSION {
        c.value_error(
            &p(&["version"]),
            format!("unsupported config version {}", spec.version),
            Some(format!("{}", super::schema::CONFIG_VERSION)),
        );
    }

    for (name, model) in &spec.models {
        check_model(&mut c, name, model);
    }

    // Every id a template may name: steps, graph nodes, participants.
    let mut ids: BTreeSet<String> = names.participants().iter().map(|s| s.to_string()).collect();
    for w in spec.workflow.iter().chain(spec.workflows.values()) {
        collect_ids(w, &mut ids);
    }

    for (name, agent) in &spec.agents {
        let base = p(&["agents", name]);
        if name == USER {
            c.error(
                &base,
                "`user` is reserved for the caller",
                Some("another agent name".into()),
            );
        }
        if !valid_name(name) {
            c.error(
                &base,
                format!("`{name}` is not a valid agent name"),
                Some("letters, digits, `_` and `-`".into()),
            );
        }
        if names.workflows.contains(name) {
            c.error(
                &base,
                format!("`{name}` names both an agent and a workflow"),
                Some("distinct names".into()),
            );
        }
        match spec.models.get(&agent.model) {
            None if !names.broken.contains(&agent.model) => c.value_error(
                &base.key("model"),
                format!("unknown model `{}`", agent.model),
                expected_names(names.models.iter().map(String::as_str).collect()),
            ),
            None => {}
            Some(model)
                if model.provider != Provider::Openai
                    && agent.script.is_none()
                    && model.replies.is_none() =>
            {
                c.error(
                    &base,
                    format!(
                        "agent `{name}` has no scripted replies, but model `{}` runs scripted{}",
                        agent.model,
                        if model.provider == Provider::Auto {
                            " offline"
                        } else {
                            ""
                        }
                    ),
                    Some(format!(
                        "`script:` on the agent, or `replies:` on model `{}`",
                        agent.model
                    )),
                );
            }
            Some(_) => {}
        }
        for (i, tool) in agent.tools.iter().enumerate() {
            if let ToolSpec::Mcp(m) = tool {
                let path = base.key("tools").index(i).key("mcp");
                match (&m.command, &m.url) {
                    (Some(_), Some(_)) => c.error(
                        &path.key("url"),
                        "an MCP server has either `command` (stdio) or `url` (HTTP), not both",
                        None,
                    ),
                    (None, None) => c.error(
                        &path,
                        "an MCP server needs `command` (stdio) or `url` (HTTP)",
                        Some("`command:` or `url:`".into()),
                    ),
                    _ => {}
                }
                if m.url.is_none() && !m.headers.is_empty() {
                    c.error(
                        &path.key("headers"),
                        "`headers` are for HTTP servers (`url`)",
                        None,
                    );
                }
                if m.command.is_none() && (!m.args.is_empty() || !m.env.is_empty()) {
                    c.error(
                        &path,
                        "`args` and `env` are for stdio servers (`command`)",
                        None,
                    );
                }
                if m.tools.as_ref().is_some_and(Vec::is_empty) {
                    c.error(
                        &path.key("tools"),
                        "an empty allow-list exposes no tool",
                        Some("tool names, or no `tools:`".into()),
                    );
                }
            }
        }
        for (i, target) in agent.handoffs.iter().enumerate() {
            let path = base.key("handoffs").index(i);
            if target == name {
                c.value_error(&path, "an agent cannot hand off to itself", None);
            } else if target != USER && !names.participant(target) {
                let mut known = names.participants();
                known.push(USER);
                c.value_error(
                    &path,
                    format!("unknown handoff target `{target}`"),
                    expected_names(known),
                );
            }
        }
        if agent.max_tool_iterations == Some(0) {
            c.value_error(
                &base.key("max_tool_iterations"),
                "must be at least 1",
                Some("1 or more".into()),
            );
        }
        if let Some(schema) = &agent.structured_output
            && !schema.is_object()
        {
            c.value_error(
                &base.key("structured_output"),
                "a structured output schema must be a mapping",
                Some("a JSON Schema such as `{type: object, properties: …}`".into()),
            );
        }
        if let Some(t) = agent.temperature {
            check_temperature(&mut c, &base.key("temperature"), t);
        }
        if let Some(node) = &agent.node {
            let path = base.key("node");
            if !valid_name(node) {
                c.value_error(
                    &path,
                    format!("`{node}` is not a valid node name"),
                    Some("letters, digits, `_` and `-`".into()),
                );
            } else if uses_step_templates(agent) {
                c.value_error(
                    &path,
                    format!(
                        "agent `{name}` runs on node `{node}`, where the `{{{{ $steps… }}}}` templates of its instructions cannot see this workflow's steps"
                    ),
                    Some("instructions without `{{ $steps… }}`, or no `node:`".into()),
                );
            }
        }
        if let Some(text) = &agent.instructions {
            let path = base.key("instructions");
            match Template::parse(text) {
                Err(e) => c.value_error(&path, e.message, None),
                Ok(t) => {
                    for r in t.references() {
                        for step in r.steps() {
                            if !ids.contains(step) {
                                c.value_error(
                                    &path,
                                    format!("`{r}` names no step, node or participant `{step}`"),
                                    expected_names(ids.iter().map(String::as_str).collect()),
                                );
                            }
                        }
                    }
                }
            }
        }
    }

    for (name, w) in &spec.workflows {
        let base = p(&["workflows", name]);
        if name == USER || !valid_name(name) {
            c.error(
                &base,
                format!("`{name}` is not a valid workflow name"),
                Some("letters, digits, `_` and `-`, not `user`".into()),
            );
        }
        if w.file.is_some() {
            let others: Vec<&str> = kinds(w).into_iter().filter(|k| *k != "file").collect();
            if !others.is_empty() || w.router.is_some() {
                c.error(
                    &base.key("file"),
                    "a workflow from a file takes nothing else but `name` and `description`",
                    None,
                );
            }
            continue;
        }
        check_workflow(&mut c, &names, spec, &base, w);
    }

    match &spec.workflow {
        Some(w) => {
            let base = p(&["workflow"]);
            if w.file.is_some() {
                c.error(
                    &base.key("file"),
                    "the main workflow cannot come from a file",
                    Some("`workflows: {name: {file: …}}` and a workflow using `name`".into()),
                );
            } else if !c.was_removed(&base) {
                check_workflow(&mut c, &names, spec, &base, w);
            }
        }
        None if spec.agents.len() + names.broken.len() == 1 || c.was_removed(&p(&["workflow"])) => {
        }
        None => c.error(
            &FieldPath::root(),
            "the config has no `workflow`",
            Some("a `workflow:` section (or exactly one agent)".into()),
        ),
    }

    if let Some(cp) = &spec.checkpoint {
        let base = p(&["checkpoint"]);
        match (cp.store, &cp.path) {
            (StoreKind::Dir | StoreKind::Sqlite, None) => c.error(
                &base,
                "a `dir` or `sqlite` store needs a `path`",
                Some("`path:` (relative to the config file)".into()),
            ),
            (StoreKind::Memory, Some(_)) => c.error(
                &base.key("path"),
                "a `memory` store has no path",
                Some("`store: dir` or `store: sqlite` to keep checkpoints in a file".into()),
            ),
            _ => {}
        }
        if cp.every == Some(0) {
            c.value_error(
                &base.key("every"),
                "must be at least 1",
                Some("1 or more".into()),
            );
        }
    }

    c.diagnostics
}

/// Whether an agent's instructions read the workflow's steps (which only
/// the process running the workflow has).
fn uses_step_templates(agent: &AgentSpec) -> bool {
    agent
        .instructions
        .as_deref()
        .and_then(|t| Template::parse(t).ok())
        .is_some_and(|t| t.has_references())
}

/// A participant reference at `path`: a plain name is returned for the
/// caller to look up; `agent@node` (an agent hosted on another node, which
/// this file need not declare) is checked here and gives `None`.
fn plain_or_remote<'r>(
    c: &mut Checker<'_>,
    spec: &ConfigFile,
    path: &FieldPath,
    reference: &'r str,
) -> Option<&'r str> {
    if !reference.contains('@') {
        return Some(reference);
    }
    match split_ref(reference) {
        Some((agent, Some(node))) if agent != USER && valid_name(agent) && valid_name(node) => {
            if let Some(a) = spec.agents.get(agent)
                && uses_step_templates(a)
            {
                c.value_error(
                    path,
                    format!(
                        "`{reference}` runs agent `{agent}` on node `{node}`, where the `{{{{ $steps… }}}}` templates of its instructions cannot see this workflow's steps"
                    ),
                    Some(format!("`{agent}` alone, or instructions without templates")),
                );
            }
        }
        _ => c.value_error(
            path,
            format!("`{reference}` is not a valid remote reference"),
            Some("`agent@node` (letters, digits, `_` and `-` on both sides)".into()),
        ),
    }
    None
}

/// Whether `name` can name an agent or a node in a config (`node: NAME`,
/// `agent@NAME`): 1 to 64 ASCII letters, digits, `_` and `-`.
pub fn valid_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || ch == '_' || ch == '-')
}

fn check_temperature(c: &mut Checker<'_>, path: &FieldPath, t: f32) {
    if !(0.0..=2.0).contains(&t) {
        c.value_error(
            path,
            format!("temperature {t} is out of range"),
            Some("a number from 0 to 2".into()),
        );
    }
}

fn check_model(c: &mut Checker<'_>, name: &str, m: &ModelSpec) {
    let base = p(&["models", name]);
    if m.provider != Provider::Scripted && m.model.is_none() {
        c.error(
            &base,
            format!("model `{name}` has no `model` name for its server"),
            Some("`model:` such as `gpt-4o-mini` (or `provider: scripted`)".into()),
        );
    }
    if m.provider == Provider::Openai {
        for (field, given) in [
            ("replies", m.replies.is_some()),
            ("when_exhausted", m.when_exhausted.is_some()),
            ("delay", m.delay.is_some()),
        ] {
            if given {
                c.error(
                    &base.key(field),
                    format!("`{field}` is only used by scripted models"),
                    Some("`provider: scripted` or `provider: auto`".into()),
                );
            }
        }
    }
    if m.provider == Provider::Scripted {
        for (field, given) in [
            ("base_url", m.base_url.is_some()),
            ("api_key_env", m.api_key_env.is_some()),
        ] {
            if given {
                c.error(
                    &base.key(field),
                    format!("`{field}` is not used by a scripted model"),
                    Some("`provider: openai` or `provider: auto`".into()),
                );
            }
        }
    }
    if let Some(url) = &m.base_url
        && !(url.starts_with("http://") || url.starts_with("https://") || url.starts_with("${"))
    {
        c.value_error(
            &base.key("base_url"),
            format!("`{url}` is not an http(s) URL"),
            Some("a URL such as `http://localhost:11434/v1`".into()),
        );
    }
    if let Some(t) = m.temperature {
        check_temperature(c, &base.key("temperature"), t);
    }
    if m.retries == Some(0) {
        c.value_error(
            &base.key("retries"),
            "must be at least 1 (attempts, the first included)",
            Some("1 or more".into()),
        );
    }
    if m.replies.as_ref().is_some_and(Vec::is_empty) {
        c.value_error(
            &base.key("replies"),
            "an empty script answers nothing",
            Some("at least one reply".into()),
        );
    }
}

/// The kinds a workflow names (a router alone is not counted).
fn kinds(w: &WorkflowSpec) -> Vec<&'static str> {
    let mut out = Vec::new();
    for (name, given) in [
        ("round_robin", w.round_robin.is_some()),
        ("selector", w.selector.is_some()),
        ("swarm", w.swarm.is_some()),
        ("sequential", w.sequential.is_some()),
        ("map_reduce", w.map_reduce.is_some()),
        ("graph", w.graph.is_some()),
        ("steps", w.steps.is_some()),
        ("file", w.file.is_some()),
    ] {
        if given {
            out.push(name);
        }
    }
    out
}

const KINDS: &str = "one of `round_robin`, `selector`, `swarm`, `sequential`, `map_reduce`, `graph`, `steps`, `router`";

fn collect_ids(w: &WorkflowSpec, ids: &mut BTreeSet<String>) {
    if let Some(g) = &w.graph {
        for n in &g.nodes {
            ids.insert(n.id().to_string());
        }
    }
    if let Some(steps) = &w.steps {
        collect_step_ids(steps, ids);
    }
}

fn collect_step_ids(steps: &[StepSpec], ids: &mut BTreeSet<String>) {
    for s in steps {
        if let Some(id) = step_id(s) {
            ids.insert(id);
        }
        if let Some(children) = &s.steps {
            collect_step_ids(children, ids);
        }
        for b in [&s.when_true, &s.when_false].into_iter().flatten() {
            if let BranchSpec::Steps(list) = b {
                collect_step_ids(list, ids);
            }
        }
    }
}

/// What a step is, inferred when `type` is absent.
pub(crate) fn step_kind(s: &StepSpec) -> Option<StepKind> {
    if let Some(k) = s.kind {
        return Some(k);
    }
    if s.agent.is_some() {
        Some(StepKind::Agent)
    } else if s.workflow.is_some() {
        Some(StepKind::Workflow)
    } else if s.steps.is_some() {
        Some(StepKind::Parallel)
    } else if s.condition.is_some() {
        Some(StepKind::Condition)
    } else {
        None
    }
}

/// The agent or workflow a step runs.
pub(crate) fn step_target(s: &StepSpec) -> Option<&str> {
    match step_kind(s)? {
        StepKind::Agent => s.agent.as_deref().or(s.name.as_deref()),
        StepKind::Workflow => s.workflow.as_deref(),
        _ => None,
    }
}

/// A step's id: given, or its agent's / workflow's name. Parallel blocks
/// must be given one; condition steps have one only if given.
pub(crate) fn step_id(s: &StepSpec) -> Option<String> {
    if let Some(id) = &s.id {
        return Some(id.clone());
    }
    match step_kind(s)? {
        StepKind::Agent | StepKind::Workflow => step_target(s).map(|t| ref_id(t).to_string()),
        StepKind::Parallel | StepKind::Condition => None,
    }
}

fn has_stop(w: &WorkflowSpec) -> bool {
    w.stop.is_some() || w.max_turns.is_some()
}

fn check_workflow(
    c: &mut Checker<'_>,
    names: &Names,
    spec: &ConfigFile,
    base: &FieldPath,
    w: &WorkflowSpec,
) {
    let found = kinds(w);
    match found.as_slice() {
        [] if w.router.is_none() => c.error(base, "a workflow needs a kind", Some(KINDS.into())),
        [] | [_] => {}
        [_, second, ..] => c.error(
            &base.key(*second),
            format!(
                "a workflow has one kind; `{}` and `{second}` are both given",
                found[0]
            ),
            Some("one of them (a `router` may go with a `graph`)".into()),
        ),
    }
    if w.router.is_some() && !found.is_empty() && !found.contains(&"graph") {
        c.error(
            &base.key("router"),
            format!(
                "a `router` goes alone or with a `graph`, not with `{}`",
                found[0]
            ),
            None,
        );
    }
    // Presets build their own workflow: these options have nowhere to go.
    let preset = w.round_robin.is_some()
        || w.selector.is_some()
        || w.swarm.is_some()
        || w.sequential.is_some()
        || w.map_reduce.is_some();
    if preset {
        for (field, given) in [
            ("shared_threads", !w.shared_threads.is_empty()),
            ("max_concurrency", w.max_concurrency.is_some()),
            ("max_loop_iterations", w.max_loop_iterations.is_some()),
        ] {
            if given {
                c.error(
                    &base.key(field),
                    format!("`{field}` does not apply to a preset team"),
                    Some("a `graph`, `steps` or `router` workflow".into()),
                );
            }
        }
    }
    if w.max_loop_iterations == Some(0) {
        c.value_error(
            &base.key("max_loop_iterations"),
            "must be at least 1",
            Some("1 or more".into()),
        );
    }
    if w.max_concurrency == Some(0) {
        c.value_error(
            &base.key("max_concurrency"),
            "must be at least 1",
            Some("1 or more".into()),
        );
    }
    if let Some(stop) = &w.stop {
        check_stop(c, &base.key("stop"), stop);
    }

    let check_participants = |c: &mut Checker<'_>, path: &FieldPath, list: &[String]| {
        if list.is_empty() {
            c.value_error(
                path,
                "no participants",
                Some("at least one agent or workflow name".into()),
            );
        }
        let mut seen = BTreeSet::new();
        for (i, n) in list.iter().enumerate() {
            let known = match plain_or_remote(c, spec, &path.index(i), n) {
                Some(plain) => names.participant(plain),
                None => true,
            };
            if !known {
                c.value_error(
                    &path.index(i),
                    format!("unknown agent `{n}`"),
                    expected_names(names.participants()),
                );
            } else if !seen.insert(ref_id(n)) {
                c.value_error(
                    &path.index(i),
                    format!("`{}` takes part twice", ref_id(n)),
                    Some("each participant once".into()),
                );
            }
        }
    };
    let ids =
        |list: &[String]| -> Vec<String> { list.iter().map(|n| ref_id(n).to_string()).collect() };

    let mut participants: Vec<String> = Vec::new();
    if let Some(t) = &w.round_robin {
        let path = base.key("round_robin").key("participants");
        check_participants(c, &path, &t.participants);
        participants = ids(&t.participants);
        if !has_stop(w) {
            c.error(
                &base.key("round_robin"),
                "a loop with no exit: a round-robin team takes turns until a stop condition holds",
                Some("`stop:` or `max_turns:` on the workflow".into()),
            );
        }
    }
    if let Some(s) = &w.selector {
        let path = base.key("selector");
        check_participants(c, &path.key("participants"), &s.participants);
        participants = ids(&s.participants);
        if !names.models.contains(&s.model) && !names.broken.contains(&s.model) {
            c.value_error(
                &path.key("model"),
                format!("unknown model `{}`", s.model),
                expected_names(names.models.iter().map(String::as_str).collect()),
            );
        } else if let Some(m) = spec.models.get(&s.model)
            && m.provider != Provider::Openai
            && m.replies.is_none()
        {
            c.error(
                &path.key("model"),
                format!(
                    "the selector's model `{}` runs scripted but has no `replies`",
                    s.model
                ),
                Some(format!(
                    "`replies:` on model `{}` naming the speakers in turn",
                    s.model
                )),
            );
        }
        if !has_stop(w) {
            c.error(
                &path,
                "a loop with no exit: a selector team picks speakers until a stop condition holds",
                Some("`stop:` or `max_turns:` on the workflow".into()),
            );
        }
    }
    if let Some(t) = &w.swarm {
        let path = base.key("swarm").key("participants");
        check_participants(c, &path, &t.participants);
        participants = ids(&t.participants);
        if let Some(first) = t.participants.first().map(|f| ref_id(f))
            && let Some(agent) = spec.agents.get(first)
            && agent.handoffs.is_empty()
        {
            c.value_error(
                &path.index(0),
                format!("the first agent of a swarm must be able to hand off, and `{first}` has no `handoffs`"),
                Some(format!("`handoffs:` on agent `{first}`")),
            );
        }
    }
    if let Some(s) = &w.sequential {
        check_participants(
            c,
            &base.key("sequential").key("participants"),
            &s.participants,
        );
        participants = ids(&s.participants);
    }
    if let Some(m) = &w.map_reduce {
        let path = base.key("map_reduce");
        for (field, name) in [
            ("mapper", &m.mapper),
            ("worker", &m.worker),
            ("reducer", &m.reducer),
        ] {
            if let Some(plain) = plain_or_remote(c, spec, &path.key(field), name)
                && !names.participant(plain)
            {
                c.value_error(
                    &path.key(field),
                    format!("unknown agent `{name}`"),
                    expected_names(names.participants()),
                );
            }
        }
        check_placement(c, spec, &path, m.placement, m.failover, &m.worker);
        if m.max_concurrency == Some(0) {
            c.value_error(
                &path.key("max_concurrency"),
                "must be at least 1",
                Some("1 or more".into()),
            );
        }
        participants = ids(&[m.mapper.clone(), m.reducer.clone()]);
    }
    if let Some(g) = &w.graph {
        participants = check_graph(c, names, spec, &base.key("graph"), g, w);
    }
    if let Some(steps) = &w.steps {
        let path = base.key("steps");
        if steps.is_empty() {
            c.value_error(&path, "no steps", Some("at least one step".into()));
        }
        let mut defined = Vec::new();
        check_steps(c, names, spec, &path, steps, &mut defined, false, w);
        participants = defined;
    }
    if let Some(r) = &w.router {
        let path = base.key("router");
        let members: Vec<String> = match (&r.participants, w.graph.is_some()) {
            (Some(list), false) => {
                check_participants(c, &path.key("participants"), list);
                ids(list)
            }
            (Some(_), true) => {
                c.error(
                    &path.key("participants"),
                    "with a graph, the participants are the graph's nodes",
                    None,
                );
                participants.clone()
            }
            (None, true) => participants.clone(),
            (None, false) => {
                let mut list: Vec<String> = Vec::new();
                for route in &r.routes {
                    for n in route.from.0.iter().chain(std::iter::once(&route.to)) {
                        if n != USER && n != "*" && names.participant(n) && !list.contains(n) {
                            list.push(n.clone());
                        }
                    }
                }
                list
            }
        };
        if r.routes.is_empty() {
            c.error(
                &path,
                "a router with no routes",
                Some("`routes:` (`from`, `to`)".into()),
            );
        }
        for (i, route) in r.routes.iter().enumerate() {
            let rp = path.key("routes").index(i);
            for (j, from) in route.from.0.iter().enumerate() {
                if from != USER
                    && from != "*"
                    && !members.contains(from)
                    && !names.broken.contains(from)
                {
                    let fp = if route.from.0.len() == 1 {
                        rp.key("from")
                    } else {
                        rp.key("from").index(j)
                    };
                    let mut known: Vec<&str> = members.iter().map(String::as_str).collect();
                    known.extend([USER, "*"]);
                    c.value_error(
                        &fp,
                        format!("unknown agent `{from}` in a route"),
                        expected_names(known),
                    );
                }
            }
            if !members.contains(&route.to) && !names.broken.contains(&route.to) {
                let expected = if route.to.contains('@') {
                    Some(format!(
                        "the participant's name alone, `{}` (`agent@node` goes in `participants`)",
                        ref_id(&route.to)
                    ))
                } else {
                    expected_names(members.iter().map(String::as_str).collect())
                };
                c.value_error(
                    &rp.key("to"),
                    format!("unknown agent `{}` in a route", route.to),
                    expected,
                );
            }
            if route.batch_size == Some(0) {
                c.value_error(
                    &rp.key("batch_size"),
                    "must be at least 1",
                    Some("1 or more".into()),
                );
            }
            match (route.capacity, route.batch_size.unwrap_or(1)) {
                (Some(0), _) => c.value_error(
                    &rp.key("capacity"),
                    "must be at least 1",
                    Some("1 or more".into()),
                ),
                (Some(cap), batch) if cap < batch => c.value_error(
                    &rp.key("capacity"),
                    format!("capacity {cap} is below the batch size {batch}"),
                    Some(format!("{batch} or more")),
                ),
                _ => {}
            }
        }
        for (i, out) in r.output.iter().enumerate() {
            if !members.contains(out) && !names.broken.contains(out) {
                c.value_error(
                    &path.key("output").index(i),
                    format!("unknown agent `{out}`"),
                    expected_names(members.iter().map(String::as_str).collect()),
                );
            }
        }
        if w.graph.is_none() {
            participants = members;
        }
    }
    for (group, members) in &w.shared_threads {
        let gp = base.key("shared_threads").key(group.clone());
        for (i, m) in members.iter().enumerate() {
            if !participants.contains(m) && !names.broken.contains(m) {
                c.value_error(
                    &gp.index(i),
                    format!("`{m}` is not a participant of this workflow"),
                    expected_names(participants.iter().map(String::as_str).collect()),
                );
            }
        }
    }
}

/// A map-reduce's `placement` and `failover`: spread workers are remote
/// replicas on every node hosting the worker, so the worker cannot be
/// pinned to one node.
fn check_placement(
    c: &mut Checker<'_>,
    spec: &ConfigFile,
    path: &FieldPath,
    placement: Option<PlacementSpec>,
    failover: Option<u32>,
    worker: &str,
) {
    if !spreads(placement) {
        if failover.is_some() {
            c.error(
                &path.key("failover"),
                "`failover` applies to workers spread over cluster nodes",
                Some("`placement: spread` or `placement: least_busy`".into()),
            );
        }
        return;
    }
    let how = match placement {
        Some(PlacementSpec::LeastBusy) => "least_busy",
        _ => "spread",
    };
    if worker.contains('@') {
        c.value_error(
            &path.key("worker"),
            format!(
                "`placement: {how}` runs the worker on every node that hosts it, but `{worker}` pins it to one"
            ),
            Some(format!("`{}` alone, or `placement: local`", ref_id(worker))),
        );
    } else if let Some(agent) = spec.agents.get(worker) {
        if let Some(node) = &agent.node {
            c.value_error(
                &path.key("placement"),
                format!(
                    "`placement: {how}` runs agent `{worker}` on every node that hosts it, but its `node: {node}` pins it to one"
                ),
                Some(format!(
                    "no `node:` on agent `{worker}`, or `placement: local`"
                )),
            );
        } else if uses_step_templates(agent) {
            c.value_error(
                &path.key("placement"),
                format!(
                    "`placement: {how}` runs agent `{worker}` on other nodes, where the `{{{{ $steps… }}}}` templates of its instructions cannot see this workflow's steps"
                ),
                Some(format!(
                    "instructions without templates on agent `{worker}`, or `placement: local`"
                )),
            );
        }
    }
}

fn check_stop(c: &mut Checker<'_>, path: &FieldPath, s: &StopSpec) {
    let given = s.max_messages.is_some()
        || s.max_turns.is_some()
        || s.text_mention.is_some()
        || s.source_match.is_some()
        || s.handoff.is_some()
        || s.token_budget.is_some()
        || s.timeout.is_some()
        || s.all.is_some()
        || s.any.is_some();
    if !given && !c.lost_part(path) {
        c.error(
            path,
            "an empty stop condition never holds",
            Some("one of `max_messages`, `max_turns`, `text_mention`, `source_match`, `handoff`, `token_budget`, `timeout`, `all`, `any`".into()),
        );
    }
    for (field, list) in [("all", &s.all), ("any", &s.any)] {
        if let Some(list) = list {
            if list.is_empty() {
                c.value_error(
                    &path.key(field),
                    "an empty list",
                    Some("stop conditions".into()),
                );
            }
            for (i, sub) in list.iter().enumerate() {
                check_stop(c, &path.key(field).index(i), sub);
            }
        }
    }
}

/// Checks a condition; `known` are the ids it may refer to (`None`: any).
fn check_condition(
    c: &mut Checker<'_>,
    path: &FieldPath,
    cond: &ConditionSpec,
    known: &[String],
    all_ids: &BTreeSet<String>,
) {
    match &cond.0 {
        ConditionForm::Regex(r) => {
            if let Err(e) = regex::Regex::new(r) {
                let detail = e.to_string();
                let last = detail.lines().last().unwrap_or("").trim().to_string();
                c.value_error(
                    &path.key("regex"),
                    format!("invalid regular expression: {last}"),
                    None,
                );
            }
        }
        ConditionForm::Expr(text) => {
            let vp = if matches!(
                c.tree.get(path).map(|n| &n.value),
                Some(super::tree::Value::Map(_))
            ) {
                path.key("expr")
            } else {
                path.clone()
            };
            match Expr::parse(text) {
                Err(e) => c.value_error(&vp, e.message, None),
                Ok(expr) => {
                    for step in expr.reference().steps() {
                        if !known.iter().any(|k| k == step) {
                            if all_ids.contains(step) {
                                c.value_error(
                                    &vp,
                                    format!("step `{step}` is referenced before it exists"),
                                    Some(format!(
                                        "a step defined before this one: {}",
                                        one_of(
                                            &known.iter().map(String::as_str).collect::<Vec<_>>()
                                        )
                                    )),
                                );
                            } else {
                                c.value_error(
                                    &vp,
                                    format!("`{}` names no step `{step}`", expr.reference()),
                                    expected_names(known.iter().map(String::as_str).collect()),
                                );
                            }
                        }
                    }
                }
            }
        }
        ConditionForm::Any(list) | ConditionForm::All(list) => {
            let key = if matches!(cond.0, ConditionForm::Any(_)) {
                "any"
            } else {
                "all"
            };
            if list.is_empty() {
                c.value_error(&path.key(key), "an empty list", Some("conditions".into()));
            }
            for (i, sub) in list.iter().enumerate() {
                check_condition(c, &path.key(key).index(i), sub, known, all_ids);
            }
        }
        ConditionForm::Not(sub) => check_condition(c, &path.key("not"), sub, known, all_ids),
        ConditionForm::Field(f) if f.path.trim().is_empty() => {
            c.value_error(
                &path.key("field").key("path"),
                "an empty field path",
                Some("a field such as `verdict` or `/verdict`".into()),
            );
        }
        _ => {}
    }
}

fn check_graph(
    c: &mut Checker<'_>,
    names: &Names,
    spec: &ConfigFile,
    base: &FieldPath,
    g: &GraphSpec,
    w: &WorkflowSpec,
) -> Vec<String> {
    let mut ids: Vec<String> = Vec::new();
    if g.nodes.is_empty() {
        c.value_error(
            &base.key("nodes"),
            "a graph with no nodes",
            Some("at least one node".into()),
        );
    }
    for (i, n) in g.nodes.iter().enumerate() {
        let np = base.key("nodes").index(i);
        // The long form names the agent under `agent:`.
        let vp = if matches!(
            c.tree.get(&np).map(|x| &x.value),
            Some(super::tree::Value::Map(_))
        ) {
            np.key("agent")
        } else {
            np.clone()
        };
        if let Some(plain) = plain_or_remote(c, spec, &vp, &n.0.agent)
            && !names.participant(plain)
        {
            c.value_error(
                &vp,
                format!("unknown agent `{}`", n.0.agent),
                expected_names(names.participants()),
            );
        }
        let id = n.id().to_string();
        if ids.contains(&id) {
            c.value_error(
                &np,
                format!("two nodes are named `{id}`"),
                Some("a unique `id:` for each node".into()),
            );
        } else {
            ids.push(id);
        }
    }
    let all: BTreeSet<String> = ids.iter().cloned().collect();
    let known_node = |c: &mut Checker<'_>, path: &FieldPath, name: &str| -> bool {
        if ids.iter().any(|i| i == name) {
            true
        } else {
            c.value_error(
                path,
                format!("unknown node `{name}`"),
                expected_names(ids.iter().map(String::as_str).collect()),
            );
            false
        }
    };
    for (i, s) in g.start.iter().enumerate() {
        known_node(c, &base.key("start").index(i), s);
    }
    let mut edges: Vec<(usize, usize, bool, usize)> = Vec::new();
    for (i, t) in g.transitions.iter().enumerate() {
        let tp = base.key("transitions").index(i);
        let from = known_node(c, &tp.key("from"), &t.from);
        let to = known_node(c, &tp.key("to"), &t.to);
        if let Some(cond) = &t.when {
            check_condition(c, &tp.key("when"), cond, &ids, &all);
        }
        if t.max_iterations == Some(0) {
            c.value_error(
                &tp.key("max_iterations"),
                "must be at least 1",
                Some("1 or more".into()),
            );
        }
        if from && to {
            let f = ids.iter().position(|x| *x == t.from).unwrap_or(0);
            let to = ids.iter().position(|x| *x == t.to).unwrap_or(0);
            let always = t.when.as_ref().is_none_or(|c| c.0 == ConditionForm::Always);
            edges.push((f, to, always, i));
        }
    }
    // A node mixing unconditional and conditional transitions leaves open
    // whether the unconditional one is a default or a fan-out.
    for (node, name) in ids.iter().enumerate() {
        let out: Vec<&(usize, usize, bool, usize)> = edges.iter().filter(|e| e.0 == node).collect();
        if out.iter().any(|e| !e.2)
            && let Some(e) = out.iter().find(|e| e.2)
        {
            c.error(
                &base.key("transitions").index(e.3),
                format!("node `{name}` has both unconditional and conditional transitions"),
                Some(
                    "`when: otherwise` for a default branch, or a condition on every transition"
                        .into(),
                ),
            );
        }
    }
    if !has_stop(w) && g.max_supersteps.is_none() {
        for cycle in endless_cycles(ids.len(), &edges) {
            let first = edges
                .iter()
                .filter(|e| cycle.contains(&e.0) && cycle.contains(&e.1))
                .map(|e| e.3)
                .min()
                .unwrap_or(0);
            let members: Vec<&str> = cycle.iter().map(|&i| ids[i].as_str()).collect();
            c.error(
                &base.key("transitions").index(first),
                format!(
                    "a loop with no exit: {} only has unconditional transitions",
                    members.join(" -> ")
                ),
                Some(
                    "a `when:` condition on a transition of the loop, or a `stop:` condition"
                        .into(),
                ),
            );
        }
    }
    ids
}

/// Strongly connected components whose internal transitions are all
/// unconditional (as the runtime judges them). Iterative, so a huge graph
/// cannot exhaust the stack.
fn endless_cycles(n: usize, edges: &[(usize, usize, bool, usize)]) -> Vec<Vec<usize>> {
    let mut adj = vec![Vec::new(); n];
    let mut radj = vec![Vec::new(); n];
    for e in edges {
        adj[e.0].push(e.1);
        radj[e.1].push(e.0);
    }
    // Kosaraju: finishing order, then components on the reversed graph.
    let mut order = Vec::with_capacity(n);
    let mut seen = vec![false; n];
    for s in 0..n {
        if seen[s] {
            continue;
        }
        let mut stack = vec![(s, 0usize)];
        seen[s] = true;
        while let Some((v, i)) = stack.pop() {
            if i < adj[v].len() {
                stack.push((v, i + 1));
                let w = adj[v][i];
                if !seen[w] {
                    seen[w] = true;
                    stack.push((w, 0));
                }
            } else {
                order.push(v);
            }
        }
    }
    let mut comp = vec![usize::MAX; n];
    let mut comps: Vec<Vec<usize>> = Vec::new();
    for &s in order.iter().rev() {
        if comp[s] != usize::MAX {
            continue;
        }
        let id = comps.len();
        let mut members = Vec::new();
        let mut stack = vec![s];
        comp[s] = id;
        while let Some(v) = stack.pop() {
            members.push(v);
            for &w in &radj[v] {
                if comp[w] == usize::MAX {
                    comp[w] = id;
                    stack.push(w);
                }
            }
        }
        comps.push(members);
    }
    let mut out = Vec::new();
    for (id, members) in comps.into_iter().enumerate() {
        let internal: Vec<_> = edges
            .iter()
            .filter(|e| comp[e.0] == id && comp[e.1] == id)
            .collect();
        let is_cycle = members.len() > 1 || !internal.is_empty();
        if is_cycle && internal.iter().all(|e| e.2) {
            let mut m = members;
            m.sort_unstable();
            out.push(m);
        }
    }
    out
}

#[allow(clippy::too_many_arguments)]
fn check_steps(
    c: &mut Checker<'_>,
    names: &Names,
    spec: &ConfigFile,
    base: &FieldPath,
    steps: &[StepSpec],
    defined: &mut Vec<String>,
    in_parallel: bool,
    w: &WorkflowSpec,
) {
    let mut all_ids = BTreeSet::new();
    collect_step_ids(steps, &mut all_ids);
    for (i, s) in steps.iter().enumerate() {
        let sp = base.index(i);
        if c.was_removed(&sp) {
            continue;
        }
        let Some(kind) = step_kind(s) else {
            c.error(
                &sp,
                "a step needs something to do",
                Some("`agent:`, `workflow:`, `steps:` (parallel) or `condition:`".into()),
            );
            continue;
        };
        // Fields that belong to another kind of step.
        let misplaced: &[(&str, bool)] = &[
            ("agent", s.agent.is_some() && kind != StepKind::Agent),
            (
                "workflow",
                s.workflow.is_some() && kind != StepKind::Workflow,
            ),
            ("steps", s.steps.is_some() && kind != StepKind::Parallel),
            (
                "condition",
                s.condition.is_some() && kind != StepKind::Condition,
            ),
            ("true", s.when_true.is_some() && kind != StepKind::Condition),
            (
                "false",
                s.when_false.is_some() && kind != StepKind::Condition,
            ),
            ("retry", s.retry.is_some() && kind == StepKind::Condition),
        ];
        for (field, wrong) in misplaced {
            if *wrong {
                c.error(
                    &sp.key(*field),
                    format!("`{field}` does not belong on {} step", kind_name(kind)),
                    None,
                );
            }
        }
        let id = step_id(s);
        if kind == StepKind::Parallel && s.id.is_none() {
            c.error(
                &sp,
                "a parallel step needs an `id`",
                Some("`id:` (templates read the block's outputs through it)".into()),
            );
        }
        if let Some(id) = &id
            && defined.contains(id)
        {
            let at = if s.id.is_some() {
                sp.key("id")
            } else {
                sp.clone()
            };
            c.value_error(
                &at,
                format!("step id `{id}` is used twice"),
                Some("a unique `id:`".into()),
            );
        }
        if let Some(r) = &s.retry
            && r.on.as_ref().is_some_and(Vec::is_empty)
        {
            c.value_error(
                &sp.key("retry").key("on"),
                "an empty list retries nothing",
                Some("error kinds, or no `on:`".into()),
            );
        }
        match kind {
            StepKind::Agent => match step_target(s) {
                None => c.error(
                    &sp,
                    "an agent step needs `agent:`",
                    Some("`agent: <name>`".into()),
                ),
                Some(target) => {
                    let field = if s.agent.is_some() { "agent" } else { "name" };
                    if let Some(a) = plain_or_remote(c, spec, &sp.key(field), target)
                        && !names.agents.contains(a)
                        && !names.broken.contains(a)
                    {
                        let hint = if names.workflows.contains(a) {
                            Some(format!("`{a}` is a workflow: use `workflow: {a}`"))
                        } else {
                            expected_names(names.agents.iter().map(String::as_str).collect())
                        };
                        c.value_error(&sp.key(field), format!("unknown agent `{a}`"), hint);
                    }
                }
            },
            StepKind::Workflow => match &s.workflow {
                None => c.error(
                    &sp,
                    "a workflow step needs `workflow:`",
                    Some("the name of a workflow in `workflows:`".into()),
                ),
                Some(n) if !names.workflows.contains(n) && !names.broken.contains(n) => c
                    .value_error(
                        &sp.key("workflow"),
                        format!("unknown workflow `{n}`"),
                        expected_names(names.workflows.iter().map(String::as_str).collect()),
                    ),
                _ => {}
            },
            StepKind::Parallel => match &s.steps {
                None => c.error(&sp, "a parallel step needs `steps:`", None),
                Some(children) => {
                    if children.is_empty() {
                        c.value_error(
                            &sp.key("steps"),
                            "no steps to run in parallel",
                            Some("at least one step".into()),
                        );
                    }
                    check_steps(c, names, spec, &sp.key("steps"), children, defined, true, w);
                }
            },
            StepKind::Condition => {
                if in_parallel {
                    c.error(
                        &sp,
                        "a condition cannot run inside a parallel block",
                        Some("conditions between steps".into()),
                    );
                }
                if i == 0 && defined.is_empty() {
                    c.error(
                        &sp,
                        "a condition needs a step before it to judge",
                        Some("an agent step first".into()),
                    );
                }
                match &s.condition {
                    None => c.error(
                        &sp,
                        "a condition step needs `condition:`",
                        Some("`condition: \"{{ $steps.<id>.output… }}\"`".into()),
                    ),
                    Some(cond) => {
                        let known = defined.clone();
                        check_condition(c, &sp.key("condition"), cond, &known, &all_ids);
                    }
                }
                let mut loops = 0;
                for (field, branch) in [("true", &s.when_true), ("false", &s.when_false)] {
                    match branch {
                        Some(BranchSpec::Goto(target)) => {
                            loops += 1;
                            if !defined.contains(target) {
                                let msg = if all_ids.contains(target) {
                                    format!(
                                        "step `{target}` is referenced before it exists (a branch may only go back to an earlier step)"
                                    )
                                } else {
                                    format!("unknown step `{target}`")
                                };
                                c.value_error(
                                    &sp.key(field),
                                    msg,
                                    expected_names(defined.iter().map(String::as_str).collect()),
                                );
                            }
                        }
                        Some(BranchSpec::Steps(list)) => {
                            check_steps(c, names, spec, &sp.key(field), list, defined, false, w);
                        }
                        None => {}
                    }
                }
                if loops == 2 && !has_stop(w) {
                    c.error(
                        &sp,
                        "a loop with no exit: both branches go back to earlier steps",
                        Some("one branch that carries on, or a `stop:` condition".into()),
                    );
                }
            }
        }
        if let Some(id) = id
            && !defined.contains(&id)
        {
            defined.push(id);
        }
    }
}

fn kind_name(k: StepKind) -> &'static str {
    match k {
        StepKind::Agent => "an agent",
        StepKind::Workflow => "a workflow",
        StepKind::Parallel => "a parallel",
        StepKind::Condition => "a condition",
    }
}

/// Lists `name → children` for every parallel block of a step list.
pub(crate) fn parallel_blocks(steps: &[StepSpec], out: &mut BTreeMap<String, Vec<String>>) {
    for s in steps {
        if step_kind(s) == Some(StepKind::Parallel)
            && let (Some(id), Some(children)) = (step_id(s), &s.steps)
        {
            out.insert(id, children.iter().filter_map(step_id).collect());
        }
        if let Some(children) = &s.steps {
            parallel_blocks(children, out);
        }
        for b in [&s.when_true, &s.when_false].into_iter().flatten() {
            if let BranchSpec::Steps(list) = b {
                parallel_blocks(list, out);
            }
        }
    }
}
