//! Malformed configs: each one must fail to load with a diagnostic naming
//! the file, the line and column, the field, and what is wrong — and none
//! may panic.

use troupe_config::{Config, ConfigError};

/// A valid preamble the cases build on.
const BASE: &str = "version: 1
models:
  m: {provider: scripted, replies: [hi]}
agents:
  a: {model: m}
  b: {model: m}
";

struct Case {
    name: &'static str,
    yaml: String,
    /// `t.yaml:LINE:COL: field `FIELD``, then a piece of the message.
    at: &'static str,
    field: &'static str,
    says: &'static str,
}

fn case(
    name: &'static str,
    yaml: &str,
    at: &'static str,
    field: &'static str,
    says: &'static str,
) -> Case {
    Case {
        name,
        yaml: yaml.to_string(),
        at,
        field,
        says,
    }
}

fn with_base(
    name: &'static str,
    rest: &str,
    at: &'static str,
    field: &'static str,
    says: &'static str,
) -> Case {
    Case {
        name,
        yaml: format!("{BASE}{rest}"),
        at,
        field,
        says,
    }
}

fn cases() -> Vec<Case> {
    vec![
        case(
            "yaml syntax",
            "version: 1\nagents: [a, b\n",
            "t.yaml:2:9",
            "",
            "invalid YAML",
        ),
        case(
            "not a mapping",
            "- 1\n- 2\n",
            "t.yaml:1:1",
            "",
            "expected a mapping",
        ),
        case(
            "missing version",
            "agents:\n  a: {model: m}\n",
            "t.yaml:1:1",
            "version",
            "missing field `version`",
        ),
        case(
            "bad version",
            "version: 2\nagents:\n  a: {model: m}\n",
            "t.yaml:1:10",
            "version",
            "unsupported config version 2",
        ),
        case(
            "version not a number",
            "version: one\n",
            "t.yaml:1:10",
            "version",
            "wrong type",
        ),
        case(
            "unknown top-level field",
            "version: 1\nagentz: {}\n",
            "t.yaml:2:1",
            "agentz",
            "unknown field `agentz`",
        ),
        with_base(
            "unknown agent field",
            "workflow: {sequential: {participants: [a]}}\nagents2: 1\n",
            "t.yaml:8:1",
            "agents2",
            "unknown field",
        ),
        case(
            "unknown field in agent",
            "version: 1\nmodels:\n  m: {provider: scripted, replies: [x]}\nagents:\n  a:\n    model: m\n    colour: red\n",
            "t.yaml:7:5",
            "agents.a.colour",
            "unknown field `colour`",
        ),
        case(
            "missing model field",
            "version: 1\nagents:\n  a:\n    instructions: hi\n",
            "t.yaml:3:3",
            "agents.a.model",
            "missing field `model`",
        ),
        case(
            "unknown model",
            "version: 1\nmodels:\n  m: {provider: scripted, replies: [x]}\nagents:\n  a:\n    model: gpt\n",
            "t.yaml:6:12",
            "agents.a.model",
            "unknown model `gpt`",
        ),
        case(
            "unknown provider",
            "version: 1\nmodels:\n  m: {provider: gemini}\n",
            "t.yaml:3:17",
            "models.m.provider",
            "unknown value `gemini`",
        ),
        case(
            "openai model without name",
            "version: 1\nmodels:\n  m: {provider: openai}\nagents:\n  a: {model: m}\n",
            "t.yaml:3:3",
            "models.m",
            "no `model` name",
        ),
        case(
            "temperature out of range",
            "version: 1\nmodels:\n  m: {provider: scripted, replies: [x], temperature: 7}\nagents:\n  a: {model: m}\n",
            "t.yaml:3:54",
            "models.m.temperature",
            "out of range",
        ),
        case(
            "bad model timeout",
            "version: 1\nmodels:\n  m:\n    provider: openai\n    model: x\n    timeout: soon\n",
            "t.yaml:6:14",
            "models.m.timeout",
            "invalid value duration \"soon\"",
        ),
        case(
            "no scripted replies",
            "version: 1\nmodels:\n  m: {provider: scripted}\nagents:\n  a: {model: m}\n",
            "t.yaml:5:3",
            "agents.a",
            "no scripted replies",
        ),
        with_base(
            "unknown built-in tool",
            "workflow: {sequential: {participants: [a]}}\n",
            "",
            "",
            "",
        )
        .replace_agent_b(
            "  b:\n    model: m\n    tools: [hammer]\n",
            "t.yaml:8:13",
            "agents.b.tools[0]",
            "unknown value `hammer`",
        ),
        case(
            "mcp without command or url",
            "version: 1\nmodels:\n  m: {provider: scripted, replies: [x]}\nagents:\n  a:\n    model: m\n    tools:\n      - mcp: {name: files}\n",
            "t.yaml:8:9",
            "agents.a.tools[0].mcp",
            "needs `command`",
        ),
        case(
            "unknown handoff target",
            "version: 1\nmodels:\n  m: {provider: scripted, replies: [x]}\nagents:\n  a:\n    model: m\n    handoffs: [billing]\n",
            "t.yaml:7:16",
            "agents.a.handoffs[0]",
            "unknown handoff target `billing`",
        ),
        with_base(
            "max_tool_iterations wrong type",
            "workflow: {sequential: {participants: [a]}}\n",
            "",
            "",
            "",
        )
        .replace_agent_b(
            "  b:\n    model: m\n    max_tool_iterations: lots\n",
            "t.yaml:8:26",
            "agents.b.max_tool_iterations",
            "wrong type",
        ),
        with_base(
            "no workflow kind",
            "workflow: {name: x}\n",
            "t.yaml:7:1",
            "workflow",
            "needs a kind",
        ),
        with_base(
            "two workflow kinds",
            "workflow:\n  sequential: {participants: [a]}\n  swarm: {participants: [a]}\n",
            "t.yaml:8:3",
            "workflow.sequential",
            "one kind",
        ),
        with_base(
            "unknown participant",
            "workflow:\n  sequential: {participants: [a, zed]}\n",
            "t.yaml:8:34",
            "workflow.sequential.participants[1]",
            "unknown agent `zed`",
        ),
        with_base(
            "round robin without exit",
            "workflow:\n  round_robin: {participants: [a, b]}\n",
            "t.yaml:8:3",
            "workflow.round_robin",
            "a loop with no exit",
        ),
        with_base(
            "bad stop duration",
            "workflow:\n  sequential: {participants: [a]}\n  stop: {timeout: 5 parsecs}\n",
            "t.yaml:9:19",
            "workflow.stop.timeout",
            "invalid value duration",
        ),
        with_base(
            "empty stop",
            "workflow:\n  sequential: {participants: [a]}\n  stop: {}\n",
            "t.yaml:9:3",
            "workflow.stop",
            "never holds",
        ),
        with_base(
            "stop after no messages",
            "workflow:\n  sequential: {participants: [a]}\n  stop: {max_messages: 0}\n",
            "t.yaml:9:24",
            "workflow.stop.max_messages",
            "`max_messages: 0` stops the run before it starts",
        ),
        with_base(
            "nested stop after no turns",
            "workflow:\n  sequential: {participants: [a]}\n  stop: {any: [{timeout: 1h}, {max_turns: 0}]}\n",
            "t.yaml:9:43",
            "workflow.stop.any[1].max_turns",
            "`max_turns: 0` stops the run before it starts",
        ),
        with_base(
            "no turns",
            "workflow:\n  sequential: {participants: [a]}\n  max_turns: 0\n",
            "t.yaml:9:14",
            "workflow.max_turns",
            "must be at least 1",
        ),
        with_base(
            "huge max_turns",
            "workflow:\n  sequential: {participants: [a]}\n  max_turns: 99999999999999999999999999\n",
            "t.yaml:9:14",
            "workflow.max_turns",
            "the number 99999999999999999999999999 is out of range",
        ),
        with_base(
            "retry that never retries",
            "workflow:\n  steps:\n    - {agent: a, retry: {max_attempts: 0}}\n",
            "t.yaml:9:40",
            "workflow.steps[0].retry.max_attempts",
            "`max_attempts: 0` never retries",
        ),
        with_base(
            "graph retry that never retries",
            "workflow:\n  graph:\n    nodes: [{agent: a, retry: {max_attempts: 0}}]\n",
            "t.yaml:9:46",
            "workflow.graph.nodes[0].retry.max_attempts",
            "`max_attempts: 0` never retries",
        ),
        case(
            "structured output not a JSON Schema",
            "version: 1\nmodels:\n  m: {provider: scripted, replies: [hi]}\nagents:\n  a:\n    model: m\n    structured_output: {type: 42}\n",
            "t.yaml:7:24",
            "agents.a.structured_output",
            "not a valid JSON Schema: 42 is not valid under any of the schemas listed in the 'anyOf' keyword",
        ),
        with_base(
            "unknown agent in a route",
            "workflow:\n  router:\n    routes:\n      - {from: user, to: a}\n      - {from: a, to: ghost}\n",
            "t.yaml:11:23",
            "workflow.router.routes[1].to",
            "unknown agent `ghost` in a route",
        ),
        with_base(
            "unknown sender in a route",
            "workflow:\n  router:\n    routes:\n      - {from: [user, nobody], to: a}\n",
            "t.yaml:10:23",
            "workflow.router.routes[0].from[1]",
            "unknown agent `nobody` in a route",
        ),
        with_base(
            "bad ttl",
            "workflow:\n  router:\n    routes:\n      - {from: user, to: a, ttl: forever}\n",
            "t.yaml:10:34",
            "workflow.router.routes[0].ttl",
            "invalid value duration",
        ),
        with_base(
            "zero batch size",
            "workflow:\n  router:\n    routes:\n      - {from: user, to: a, batch_size: 0}\n",
            "t.yaml:10:41",
            "workflow.router.routes[0].batch_size",
            "at least 1",
        ),
        with_base(
            "capacity below batch",
            "workflow:\n  router:\n    routes:\n      - {from: user, to: a, batch_size: 4, capacity: 2}\n",
            "t.yaml:10:54",
            "workflow.router.routes[0].capacity",
            "below the batch size",
        ),
        with_base(
            "graph unknown node",
            "workflow:\n  graph:\n    nodes: [a, b]\n    transitions:\n      - {from: a, to: c}\n",
            "t.yaml:11:23",
            "workflow.graph.transitions[0].to",
            "unknown node `c`",
        ),
        with_base(
            "graph loop with no exit",
            "workflow:\n  graph:\n    nodes: [a, b]\n    start: [a]\n    transitions:\n      - {from: a, to: b}\n      - {from: b, to: a}\n",
            "t.yaml:12:9",
            "workflow.graph.transitions[0]",
            "a loop with no exit",
        ),
        with_base(
            "graph bad regex",
            "workflow:\n  graph:\n    nodes: [a, b]\n    transitions:\n      - {from: a, to: b, when: {regex: \"(\"}}\n",
            "t.yaml:11:40",
            "workflow.graph.transitions[0].when.regex",
            "invalid regular expression",
        ),
        with_base(
            "graph unknown condition",
            "workflow:\n  graph:\n    nodes: [a, b]\n    transitions:\n      - {from: a, to: b, when: {smells_like: x}}\n",
            "t.yaml:11:33",
            "workflow.graph.transitions[0].when.smells_like",
            "unknown value `smells_like`",
        ),
        with_base(
            "graph mixed transitions",
            "workflow:\n  graph:\n    nodes: [a, b]\n    transitions:\n      - {from: a, to: b}\n      - {from: a, to: a, when: {contains: x}}\n",
            "t.yaml:11:9",
            "workflow.graph.transitions[0]",
            "both unconditional and conditional",
        ),
        with_base(
            "step referenced before it exists",
            "workflow:\n  steps:\n    - agent: a\n    - condition: \"{{ $steps.late.output.ok }}\"\n      true: a\n    - {id: late, agent: b}\n",
            "t.yaml:10:18",
            "workflow.steps[1].condition",
            "step `late` is referenced before it exists",
        ),
        with_base(
            "retry on a cancelled turn",
            "workflow:\n  steps:\n    - {agent: a, retry: {max_attempts: 1, on: [timeout, cancelled]}}\n",
            "t.yaml:9:57",
            "workflow.steps[0].retry.on[1]",
            "a cancelled turn is never retried",
        ),
        with_base(
            "retry on a cancelled graph node",
            "workflow:\n  graph:\n    nodes: [{agent: a, retry: {max_attempts: 1, on: [cancelled]}}]\n",
            "t.yaml:9:54",
            "workflow.graph.nodes[0].retry.on[0]",
            "a cancelled turn is never retried",
        ),
        with_base(
            "goto a later step",
            "workflow:\n  steps:\n    - agent: a\n    - condition: \"{{ $steps.a.output }}\"\n      false: later\n    - {id: later, agent: b}\n",
            "t.yaml:11:14",
            "workflow.steps[1].false",
            "referenced before it exists",
        ),
        with_base(
            "duplicate step id",
            "workflow:\n  steps:\n    - agent: a\n    - agent: a\n",
            "t.yaml:10:7",
            "workflow.steps[1]",
            "step id `a` is used twice",
        ),
        with_base(
            "step with nothing to do",
            "workflow:\n  steps:\n    - agent: a\n    - {id: x}\n",
            "t.yaml:10:7",
            "workflow.steps[1]",
            "needs something to do",
        ),
        with_base(
            "unknown step agent",
            "workflow:\n  steps:\n    - agent: nobody\n",
            "t.yaml:9:14",
            "workflow.steps[0].agent",
            "unknown agent `nobody`",
        ),
        with_base(
            "bad template",
            "workflow:\n  steps:\n    - agent: a\n    - condition: \"{{ $step.a.output }}\"\n      true: a\n",
            "t.yaml:10:18",
            "workflow.steps[1].condition",
            "not a step reference",
        ),
        with_base(
            "condition first",
            "workflow:\n  steps:\n    - condition: \"{{ $steps.a.output }}\"\n      true: [{agent: a}]\n",
            "t.yaml:9:7",
            "workflow.steps[0]",
            "needs a step before it",
        ),
        with_base(
            "both branches loop",
            "workflow:\n  steps:\n    - agent: a\n    - agent: b\n    - condition: \"{{ $steps.b.output }}\"\n      true: a\n      false: b\n",
            "t.yaml:11:7",
            "workflow.steps[2]",
            "both branches go back",
        ),
        with_base(
            "parallel without id",
            "workflow:\n  steps:\n    - steps: [{agent: a}, {agent: b}]\n",
            "t.yaml:9:7",
            "workflow.steps[0]",
            "needs an `id`",
        ),
        with_base(
            "bad retry",
            "workflow:\n  steps:\n    - agent: a\n      retry: {max_attempts: two}\n",
            "t.yaml:10:29",
            "workflow.steps[0].retry.max_attempts",
            "wrong type",
        ),
        with_base(
            "bad instructions template",
            "workflow: {sequential: {participants: [a]}}\n",
            "",
            "",
            "",
        )
        .replace_agent_b(
            "  b:\n    model: m\n    instructions: \"Use {{ $steps.nowhere.output }}\"\n",
            "t.yaml:8:19",
            "agents.b.instructions",
            "names no step",
        ),
        with_base(
            "checkpoint without path",
            "workflow: {sequential: {participants: [a]}}\ncheckpoint: {store: sqlite}\n",
            "t.yaml:8:1",
            "checkpoint",
            "needs a `path`",
        ),
        with_base(
            "fsync on a memory store",
            "workflow: {sequential: {participants: [a]}}\ncheckpoint: {store: memory, durability: fsync}\n",
            "t.yaml:8:29",
            "checkpoint.durability",
            "cannot flush checkpoints to a disk",
        ),
        with_base(
            "unknown durability",
            "workflow: {sequential: {participants: [a]}}\ncheckpoint: {store: memory, durability: sometimes}\n",
            "t.yaml:8:41",
            "checkpoint.durability",
            "unknown value `sometimes` (expected one of `process`, `fsync`, `exit`)",
        ),
        with_base(
            "unknown store",
            "workflow: {sequential: {participants: [a]}}\ncheckpoint: {store: s3}\n",
            "t.yaml:8:21",
            "checkpoint.store",
            "unknown value `s3`",
        ),
        with_base(
            "selector unknown model",
            "workflow:\n  selector: {participants: [a, b], model: judge}\n  max_turns: 4\n",
            "t.yaml:8:43",
            "workflow.selector.model",
            "unknown model `judge`",
        ),
        with_base(
            "shared thread stranger",
            "workflow:\n  sequential: {participants: [a, b]}\n  shared_threads: {team: [a, zed]}\n",
            "t.yaml:9:30",
            "workflow.shared_threads.team[1]",
            "is not a participant",
        ),
        with_base(
            "nested file missing",
            "workflows:\n  sub: {file: no_such_file.yaml}\nworkflow:\n  steps: [{workflow: sub}]\n",
            "t.yaml:8:15",
            "workflows.sub.file",
            "cannot read",
        ),
        with_base(
            "nested file a device",
            "workflows:\n  sub: {file: /dev/zero}\nworkflow:\n  steps: [{workflow: sub}]\n",
            "t.yaml:8:15",
            "workflows.sub.file",
            "cannot read `/dev/zero`: not a regular file (a character device)",
        ),
        with_base(
            "nested file a directory",
            "workflows:\n  sub: {file: /}\nworkflow:\n  steps: [{workflow: sub}]\n",
            "t.yaml:8:15",
            "workflows.sub.file",
            "cannot read `/`: not a regular file (a directory)",
        ),
        with_base(
            "unknown nested workflow",
            "workflow:\n  steps: [{workflow: sub}]\n",
            "t.yaml:8:22",
            "workflow.steps[0].workflow",
            "unknown workflow `sub`",
        ),
        // Cluster placement: `node:`, `agent@node`, `placement:`.
        with_base(
            "bad node name",
            "workflow: {sequential: {participants: [a, b]}}\n",
            "t.yaml:6:23",
            "agents.b.node",
            "`b c` is not a valid node name",
        )
        .replace_agent_b(
            "  b: {model: m, node: b c}\n",
            "t.yaml:6:23",
            "agents.b.node",
            "`b c` is not a valid node name",
        ),
        with_base(
            "node name not a string",
            "workflow: {sequential: {participants: [a, b]}}\n",
            "",
            "",
            "",
        )
        .replace_agent_b(
            "  b: {model: m, node: [b, c]}\n",
            "t.yaml:6:23",
            "agents.b.node",
            "wrong type: found a list",
        ),
        with_base(
            "malformed remote reference",
            "workflow: {sequential: {participants: [a, b@]}}\n",
            "t.yaml:7:43",
            "workflow.sequential.participants[1]",
            "`b@` is not a valid remote reference",
        ),
        with_base(
            "remote reference with two nodes",
            "workflow:\n  graph:\n    nodes: [a, {agent: b@c@d}]\n",
            "t.yaml:9:24",
            "workflow.graph.nodes[1].agent",
            "`b@c@d` is not a valid remote reference",
        ),
        with_base(
            "remote step to user",
            "workflow:\n  steps: [{agent: user@b}]\n",
            "t.yaml:8:19",
            "workflow.steps[0].agent",
            "`user@b` is not a valid remote reference",
        ),
        with_base(
            "same participant local and remote",
            "workflow: {round_robin: {participants: [a, a@b]}, max_turns: 2}\n",
            "t.yaml:7:44",
            "workflow.round_robin.participants[1]",
            "`a` takes part twice",
        ),
        with_base(
            "remote reference in a route",
            "workflow:\n  router:\n    participants: [a, b@c]\n    routes:\n      - {from: user, to: b@c}\n",
            "t.yaml:11:26",
            "workflow.router.routes[0].to",
            "unknown agent `b@c` in a route (expected the participant's name alone, `b`",
        ),
        with_base(
            "unknown placement",
            "workflow:\n  map_reduce: {mapper: a, worker: b, reducer: a, placement: everywhere}\n",
            "t.yaml:8:61",
            "workflow.map_reduce.placement",
            "unknown value `everywhere`",
        ),
        with_base(
            "spread worker pinned by node",
            "workflow:\n  map_reduce: {mapper: a, worker: b, reducer: a, placement: spread}\n",
            "",
            "",
            "",
        )
        .replace_agent_b(
            "  b: {model: m, node: c}\n",
            "t.yaml:8:61",
            "workflow.map_reduce.placement",
            "but its `node: c` pins it to one",
        ),
        with_base(
            "spread worker pinned by reference",
            "workflow:\n  map_reduce: {mapper: a, worker: b@c, reducer: a, placement: least_busy}\n",
            "t.yaml:8:35",
            "workflow.map_reduce.worker",
            "`placement: least_busy` runs the worker on every node that hosts it, but `b@c` pins it to one",
        ),
        with_base(
            "failover of local workers",
            "workflow:\n  map_reduce: {mapper: a, worker: b, reducer: a, failover: 1}\n",
            "t.yaml:8:50",
            "workflow.map_reduce.failover",
            "`failover` applies to workers spread over cluster nodes",
        ),
        case(
            "remote agent reading the workflow's steps",
            "version: 1\nmodels:\n  m: {provider: scripted, replies: [hi]}\nagents:\n  a: {model: m}\n  b:\n    model: m\n    node: c\n    instructions: \"Improve {{ $steps.a.output }}\"\nworkflow: {sequential: {participants: [a, b]}}\n",
            "t.yaml:8:11",
            "agents.b.node",
            "cannot see this workflow's steps",
        ),
        with_base(
            "plan text: empty step, inside a block scalar",
            "workflow:\n  plan:\n    text: |\n      a -> b\n      b -> -> a\n",
            "t.yaml:11:9",
            "workflow.plan.text",
            "line 2: position 2 of the path has an empty step id",
        ),
        with_base(
            "plan text: cycle, inside a block scalar",
            "workflow:\n  plan:\n    text: |\n      a -> b\n      b -> a\n",
            "t.yaml:11:7",
            "workflow.plan.text",
            "line 2: b -> a -> b is a cycle",
        ),
        with_base(
            "plan text: id with a space, block scalar kept as written",
            "workflow:\n  plan:\n    text: |-\n      a\n\n      a -> b c\n",
            "t.yaml:12:12",
            "workflow.plan.text",
            "line 3: 'b c' is not a valid step id",
        ),
        with_base(
            "plan text: unknown agent, quoted on one line",
            "workflow:\n  plan: {text: \"a -> ghost\"}\n",
            "t.yaml:8:22",
            "workflow.plan.text",
            "`ghost` is neither a step of `steps` nor an agent",
        ),
        with_base(
            "plan text: unknown agent, plain on one line",
            "workflow:\n  plan:\n    text: a -> b, ghost\n",
            "t.yaml:9:19",
            "workflow.plan.text",
            "line 1: `ghost` is neither a step of `steps` nor an agent",
        ),
        with_base(
            "plan with two forms",
            "workflow:\n  plan:\n    text: a -> b\n    groups: [[a], [b]]\n",
            "t.yaml:10:5",
            "workflow.plan.groups",
            "a plan has one form; `text` and `groups` are both given",
        ),
        with_base(
            "plan groups: unknown agent",
            "workflow:\n  plan:\n    groups: [[a], [b, ghost]]\n",
            "t.yaml:9:23",
            "workflow.plan.groups[1][1]",
            "`ghost` is neither a step of `steps` nor an agent",
        ),
        with_base(
            "plan step: unknown agent",
            "workflow:\n  plan:\n    text: S\n    steps:\n      S: {agent: ghost, request: go}\n",
            "t.yaml:11:18",
            "workflow.plan.steps.S.agent",
            "unknown agent `ghost`",
        ),
        with_base(
            "plan summarizer without groups",
            "workflow:\n  plan: {text: a -> b, summarizer: a}\n",
            "t.yaml:8:24",
            "workflow.plan.summarizer",
            "`summarizer` merges action groups; this plan has none",
        ),
        with_base(
            "planner: unknown model",
            "workflow:\n  plan:\n    planner: {model: brain, agents: [a, b]}\n",
            "t.yaml:9:22",
            "workflow.plan.planner.model",
            "unknown model `brain`",
        ),
        with_base(
            "agent tool: unknown agent",
            "workflow: {sequential: {participants: [a, b]}}\n",
            "",
            "",
            "",
        )
        .replace_agent_b(
            "  b: {model: m, tools: [{agent: ghost}]}\n",
            "t.yaml:6:33",
            "agents.b.tools[0].agent",
            "unknown agent `ghost`",
        ),
        with_base(
            "agent tool: itself",
            "workflow: {sequential: {participants: [a, b]}}\n",
            "",
            "",
            "",
        )
        .replace_agent_b(
            "  b: {model: m, tools: [{agent: b}]}\n",
            "t.yaml:6:33",
            "agents.b.tools[0].agent",
            "agent `b` cannot be a tool of itself",
        ),
        with_base(
            "agent tool: a cycle",
            "workflow: {sequential: {participants: [a, b]}}\n",
            "",
            "",
            "",
        )
        .replace_agent_b(
            "  b: {model: m, tools: [{agent: c}]}\n  c: {model: m, tools: [{agent: b, name: ask_b}]}\n",
            "t.yaml:6:33",
            "agents.b.tools[0].agent",
            "agent `b` calls itself through its tools (b -> c -> b)",
        ),
        with_base(
            "agent tool: unknown workflow",
            "workflow: {sequential: {participants: [a, b]}}\n",
            "",
            "",
            "",
        )
        .replace_agent_b(
            "  b: {model: m, tools: [{workflow: review}]}\n",
            "t.yaml:6:36",
            "agents.b.tools[0].workflow",
            "unknown workflow `review`",
        ),
        with_base(
            "agent tool: unknown key",
            "workflow: {sequential: {participants: [a, b]}}\n",
            "",
            "",
            "",
        )
        .replace_agent_b(
            "  b: {model: m, tools: [{agent: a, colour: red}]}\n",
            "t.yaml:6:36",
            "agents.b.tools[0].colour",
            "unknown field `colour`",
        ),
        with_base(
            "context: last 0",
            "workflow: {sequential: {participants: [a, b]}}\n",
            "",
            "",
            "",
        )
        .replace_agent_b(
            "  b: {model: m, context: {last: 0}}\n",
            "t.yaml:6:33",
            "agents.b.context.last",
            "must be at least 1",
        ),
        with_base(
            "context: two policies",
            "workflow: {sequential: {participants: [a, b]}}\n",
            "",
            "",
            "",
        )
        .replace_agent_b(
            "  b: {model: m, context: {last: 3, max_tokens: 100}}\n",
            "t.yaml:6:36",
            "agents.b.context.max_tokens",
            "a context policy is `last` or `max_tokens`, not both",
        ),
        with_base(
            "context: unknown policy",
            "workflow: {sequential: {participants: [a, b]}}\n",
            "",
            "",
            "",
        )
        .replace_agent_b(
            "  b: {model: m, context: {first: 3}}\n",
            "t.yaml:6:27",
            "agents.b.context.first",
            "unknown field `first`",
        ),
    ]
}

trait ReplaceB {
    fn replace_agent_b(
        self,
        agent: &str,
        at: &'static str,
        field: &'static str,
        says: &'static str,
    ) -> Case;
}

impl ReplaceB for Case {
    fn replace_agent_b(
        mut self,
        agent: &str,
        at: &'static str,
        field: &'static str,
        says: &'static str,
    ) -> Case {
        self.yaml = self.yaml.replace("  b: {model: m}\n", agent);
        self.at = at;
        self.field = field;
        self.says = says;
        self
    }
}

#[test]
fn every_malformed_config_names_line_and_field() {
    let cases = cases();
    assert!(cases.len() >= 30, "only {} cases", cases.len());
    let mut failures = Vec::new();
    for c in &cases {
        let result = std::panic::catch_unwind(|| Config::parse(&c.yaml, "t.yaml"));
        let text = match result {
            Err(_) => {
                failures.push(format!("{}: panicked", c.name));
                continue;
            }
            Ok(Ok(_)) => {
                failures.push(format!("{}: loaded without error", c.name));
                continue;
            }
            Ok(Err(e)) => e.to_string(),
        };
        let head = if c.field.is_empty() {
            format!("{}: ", c.at)
        } else {
            format!("{}: field `{}`: ", c.at, c.field)
        };
        let found = text
            .lines()
            .any(|l| l.starts_with(&head) && l.contains(c.says));
        if !found {
            failures.push(format!(
                "{}: expected a line starting `{head}` saying `{}`, got:\n{text}",
                c.name, c.says
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

#[test]
fn all_errors_are_reported_at_once_in_order() {
    let yaml = "version: 1
models:
  m: {provider: scripted, replies: [x]}
agents:
  a:
    model: nope
    colour: red
  b:
    model: m
    max_tool_iterations: many
workflow:
  router:
    routes:
      - {from: user, to: a, ttl: 3 fortnights}
      - {from: a, to: ghost}
  stop: {timeout: 1h}
";
    let err = Config::parse(yaml, "t.yaml").unwrap_err();
    let d = err.diagnostics();
    let fields: Vec<&str> = d.iter().map(|d| d.field.as_str()).collect();
    assert_eq!(
        fields,
        [
            "agents.a.model",
            "agents.a.colour",
            "agents.b.max_tool_iterations",
            "workflow.router.routes[0].ttl",
            "workflow.router.routes[1].to",
        ],
        "{err}"
    );
    let lines: Vec<u32> = d.iter().map(|d| d.position.line).collect();
    assert_eq!(lines, [6, 7, 10, 14, 15]);
    assert!(matches!(err, ConfigError::Invalid(_)));
}

#[test]
fn garbage_never_panics() {
    let samples = [
        "",
        "~",
        "[]",
        "{}",
        "version",
        "version: [1]",
        ":",
        "- - - -",
        "&a [*a]",
        "a: &x {b: *x}",
        "version: 1\nworkflow: [1, 2]",
        "version: 1\nagents: {a: []}",
        "\t\tversion: 1",
        "version: 1\nworkflow:\n  steps:\n    - steps:\n        - steps: [{}]\n",
        "version: 1\nmodels: {m: {replies: [{tool_call: 3}, {handoff: {}}, {x: 1, y: 2}]}}",
        "version: 1\nworkflow: {graph: {nodes: [{agent: 1}], transitions: [{from: [], to: {}}]}}",
    ];
    for s in samples {
        let r = std::panic::catch_unwind(|| Config::parse(s, "g.yaml"));
        assert!(r.is_ok(), "panicked on {s:?}");
    }
    let deep = format!("version: 1\nx: {}{}", "[".repeat(5000), "]".repeat(5000));
    assert!(Config::parse(&deep, "deep.yaml").is_err());
}
