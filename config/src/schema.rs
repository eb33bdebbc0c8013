//! The config file's types: what a YAML config may say.
//!
//! These types are the schema: the loader deserializes them, and
//! `troupe schema` prints the JSON Schema generated from them (committed as
//! `schema/troupe.schema.json`, so editors can validate and complete
//! configs). Their doc comments become the schema's descriptions.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

use super::duration::HumanDuration;

/// The config format's version; the only one so far.
pub const CONFIG_VERSION: u32 = 1;

/// A troupe config: models, agents and the workflow that runs them.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(title = "troupe config")]
pub struct ConfigFile {
    /// The config format's version: `1`.
    pub version: u32,
    /// The team's name (the workflow's name in events, unless the workflow
    /// names itself).
    #[serde(default)]
    pub name: Option<String>,
    /// What the team does.
    #[serde(default)]
    pub description: Option<String>,
    /// Named model configurations, referred to by agents.
    #[serde(default)]
    pub models: BTreeMap<String, ModelSpec>,
    /// Named agents.
    #[serde(default)]
    pub agents: BTreeMap<String, AgentSpec>,
    /// Named workflows usable wherever an agent is (nested workflows):
    /// inline, or the workflow of another config file (`file:`).
    #[serde(default)]
    pub workflows: BTreeMap<String, WorkflowSpec>,
    /// The workflow to run. Without one, a config with a single agent runs
    /// that agent alone.
    #[serde(default)]
    pub workflow: Option<WorkflowSpec>,
    /// Where checkpoints and chat sessions are kept.
    #[serde(default)]
    pub checkpoint: Option<CheckpointSpec>,
}

/// Which kind of model a model configuration makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Provider {
    /// An OpenAI-compatible chat-completions server (OpenAI, Ollama, vLLM,
    /// llama.cpp, LM Studio…).
    Openai,
    /// Replies listed in the config: offline and deterministic.
    Scripted,
    /// `openai` when `OPENAI_BASE_URL` or the key variable (`api_key_env`)
    /// is set, `scripted` otherwise (and always with `--offline`).
    #[default]
    Auto,
}

/// What a scripted model does once its replies are used up.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Exhausted {
    /// Fail the call (the default: a script that is too short is a bug).
    #[default]
    Fail,
    /// Repeat the last reply.
    RepeatLast,
    /// Start the list again.
    Cycle,
}

/// A model configuration.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ModelSpec {
    /// `openai`, `scripted` or `auto` (default).
    #[serde(default)]
    pub provider: Provider,
    /// The model's name on the server (`gpt-4o-mini`, `llama3.2`).
    /// `${VAR}` and `${VAR:-default}` are expanded from the environment.
    #[serde(default)]
    pub model: Option<String>,
    /// The server's base URL (requests go to `{base_url}/chat/completions`);
    /// default `$OPENAI_BASE_URL`, else `https://api.openai.com/v1`.
    #[serde(default)]
    pub base_url: Option<String>,
    /// The environment variable holding the API key (default
    /// `OPENAI_API_KEY`). The key itself never appears in a config.
    #[serde(default)]
    pub api_key_env: Option<String>,
    /// Extra HTTP headers (values expand `${VAR}`).
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// Sampling temperature, 0 to 2.
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Cap on completion tokens per call.
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Time allowed for one model call (default 120s).
    #[serde(default)]
    pub timeout: Option<HumanDuration>,
    /// Attempts per call, the first included (default 3).
    #[serde(default)]
    pub retries: Option<u32>,
    /// Scripted replies: each agent using this model gets its own copy of
    /// the list (an agent's own `script` replaces it).
    #[serde(default)]
    pub replies: Option<Vec<ReplySpec>>,
    /// What a scripted model does when its replies run out.
    #[serde(default)]
    pub when_exhausted: Option<Exhausted>,
    /// Scripted: how long each reply takes (to watch the spinner, or to
    /// interrupt a run mid-turn).
    #[serde(default)]
    pub delay: Option<HumanDuration>,
}

/// One tool call in a scripted reply.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCallSpec {
    /// The tool's name.
    pub name: String,
    /// Its arguments (a mapping).
    #[serde(default)]
    pub arguments: Option<serde_json::Value>,
}

/// A scripted handoff.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HandoffReplySpec {
    /// The agent to hand off to (or `user`).
    pub to: String,
    /// Why.
    #[serde(default)]
    pub reason: Option<String>,
}

/// The long form of a scripted reply.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "ReplyForm")]
pub enum ReplyForm {
    /// A text answer.
    Text(String),
    /// One tool call.
    ToolCall(ToolCallSpec),
    /// Several tool calls in one answer.
    ToolCalls(Vec<ToolCallSpec>),
    /// A handoff (a call of the `transfer_to_<agent>` tool).
    Handoff(HandoffReplySpec),
    /// Structured output: any value, sent as JSON text.
    Structured(serde_json::Value),
    /// A failed model call with this message.
    Error(String),
}

/// A scripted reply: a string (a text answer) or one of the long forms.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplySpec(pub ReplyForm);

impl<'de> Deserialize<'de> for ReplySpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ReplySpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(
                    "a text reply, or one of `text`, `tool_call`, `tool_calls`, `handoff`, `structured`, `error`",
                )
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<ReplySpec, E> {
                Ok(ReplySpec(ReplyForm::Text(s.to_string())))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ReplySpec, A::Error> {
                ReplyForm::deserialize(MapAccessDeserializer::new(map)).map(ReplySpec)
            }
        }
        deserializer.deserialize_any(V)
    }
}

impl JsonSchema for ReplySpec {
    fn schema_name() -> Cow<'static, str> {
        "Reply".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        any_of(vec![
            string_schema("A text answer."),
            generator.subschema_for::<ReplyForm>(),
        ])
    }
}

/// A tool an agent may call: a built-in one by name, or an MCP server's.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ToolSpec {
    /// `calculator`: evaluates arithmetic (`+ - * / % ^`, parentheses).
    Calculator,
    /// `current_time`: the current UTC date and time (RFC 3339).
    CurrentTime,
    /// `word_count`: counts the words, lines and characters of a text.
    WordCount,
    /// The tools of an MCP server.
    Mcp(Box<McpSpec>),
}

/// An MCP server: a child process over stdio (`command`) or a
/// streamable-HTTP endpoint (`url`). Strings expand `${VAR}` and
/// `${VAR:-default}`; `${TROUPE_EXE}` is the running `troupe` binary.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpSpec {
    /// A name for the server (in errors and events); default `mcp`.
    #[serde(default)]
    pub name: Option<String>,
    /// stdio: the program to run.
    #[serde(default)]
    pub command: Option<String>,
    /// stdio: its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// stdio: environment variables to add.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// stdio: its working directory (relative to the config file).
    #[serde(default)]
    pub cwd: Option<String>,
    /// HTTP: the endpoint, e.g. `http://127.0.0.1:8000/mcp`.
    #[serde(default)]
    pub url: Option<String>,
    /// HTTP: headers sent with every request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The only tools to expose (all when absent).
    #[serde(default)]
    pub tools: Option<Vec<String>>,
    /// Prefix for the tool names the model sees (`<prefix>_<tool>`).
    #[serde(default)]
    pub prefix: Option<String>,
    /// Time allowed for each request (default 30s).
    #[serde(default)]
    pub timeout: Option<HumanDuration>,
}

/// An agent: a model with instructions, tools and handoffs.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentSpec {
    /// What the agent does (selectors read it).
    #[serde(default)]
    pub description: Option<String>,
    /// System instructions; may use `{{ $steps.<id>.output }}` templates.
    #[serde(default)]
    pub instructions: Option<String>,
    /// The model: a name from `models`.
    pub model: String,
    /// Tools: built-in names and `mcp:` servers.
    #[serde(default)]
    pub tools: Vec<ToolSpec>,
    /// Agents (or `user`) this one may hand the conversation to.
    #[serde(default)]
    pub handoffs: Vec<String>,
    /// Rounds of tool calls allowed in one turn (default 10).
    #[serde(default)]
    pub max_tool_iterations: Option<usize>,
    /// A JSON Schema the final answer must match (structured output).
    #[serde(default)]
    pub structured_output: Option<serde_json::Value>,
    /// Sampling temperature for this agent (overrides the model's).
    #[serde(default)]
    pub temperature: Option<f32>,
    /// Completion-token cap for this agent (overrides the model's).
    #[serde(default)]
    pub max_tokens: Option<u32>,
    /// Time allowed for each tool call.
    #[serde(default)]
    pub tool_timeout: Option<HumanDuration>,
    /// Scripted replies of this agent (used when its model runs scripted).
    #[serde(default)]
    pub script: Option<Vec<ReplySpec>>,
    /// The cluster node that hosts this agent. `troupe node --name NODE`
    /// hosts the agents placed on it; a workflow run elsewhere (`troupe run
    /// --connect …`) sends this agent's turns to that node, under the same
    /// name. Absent: the agent runs in the process that runs the workflow.
    #[serde(default)]
    pub node: Option<String>,
}

/// Participants of a team preset.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TeamSpec {
    /// Agents or workflows, in order; `agent@node` runs an agent on another
    /// node of the cluster.
    pub participants: Vec<String>,
}

/// A selector group chat.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SelectorSpec {
    /// Agents or workflows the selector picks from (`agent@node`: on another
    /// node of the cluster).
    pub participants: Vec<String>,
    /// The model that picks the next speaker (a name from `models`).
    pub model: String,
    /// The selection prompt, with `{roles}`, `{participants}`, `{history}`.
    #[serde(default)]
    pub prompt: Option<String>,
    /// Whether one participant may speak twice in a row (default false).
    #[serde(default)]
    pub allow_repeated_speaker: Option<bool>,
    /// How often the model is asked before falling back (default 3).
    #[serde(default)]
    pub max_selector_attempts: Option<u32>,
}

/// What each step of a sequence receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum FlowSpec {
    /// The task and every earlier step's messages (default).
    AllPrior,
    /// Only the previous step's messages.
    Previous,
    /// One message listing every earlier step's last output.
    PriorOutputs,
}

/// A sequential pipeline.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SequentialSpec {
    /// Agents or workflows, in order (`agent@node`: on another node of the
    /// cluster).
    pub participants: Vec<String>,
    /// What each step receives.
    #[serde(default)]
    pub flow: Option<FlowSpec>,
}

/// How parallel branches start their threads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum IsolationSpec {
    /// Only what is delivered to them (default).
    Fresh,
    /// A copy of the parent's thread first.
    Inherit,
}

/// Where the workers of a map-reduce run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum PlacementSpec {
    /// Where the worker agent is (default): in this process, or on its
    /// `node:`.
    #[default]
    Local,
    /// On every cluster node hosting the worker, taking turns (round
    /// robin): the sub-tasks spread evenly over the nodes.
    Spread,
    /// On the node hosting the worker that has the fewest turns under way.
    LeastBusy,
}

/// A map-reduce team.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MapReduceSpec {
    /// The agent that splits the task (a JSON list of strings, or one
    /// sub-task per line).
    pub mapper: String,
    /// The agent that works each sub-task.
    pub worker: String,
    /// The agent that combines the results.
    pub reducer: String,
    /// How workers start their threads.
    #[serde(default)]
    pub isolation: Option<IsolationSpec>,
    /// At most this many workers at once.
    #[serde(default)]
    pub max_concurrency: Option<usize>,
    /// Where the workers run: `local` (default), or `spread` /
    /// `least_busy` over the cluster nodes that host the worker (every
    /// `troupe node` of this config hosts it).
    #[serde(default)]
    pub placement: Option<PlacementSpec>,
    /// With `placement: spread` or `least_busy`: how many more nodes a
    /// sub-task is tried on when the node running it is lost (default 0).
    #[serde(default)]
    pub failover: Option<u32>,
}

/// When activated graph nodes start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum SchedulerSpec {
    /// In supersteps, checkpointed between them (default).
    Supersteps,
    /// Each node as soon as its inputs are ready.
    Dataflow,
}

/// How a graph node with several incoming transitions waits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum JoinSpec {
    /// For every incoming transition.
    All,
    /// For the first.
    Any,
    /// For every one that can still fire (default).
    AllThatCanArrive,
}

/// What a graph node receives of its predecessors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum InputSpec {
    /// Their messages (default).
    Messages,
    /// One message listing each predecessor's last output.
    PriorOutputs,
    /// Their last outputs as attachments.
    Attachments,
}

/// The long form of a graph node.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeForm {
    /// The node's id (default: the agent's or workflow's name).
    #[serde(default)]
    pub id: Option<String>,
    /// The agent or named workflow the node runs (`agent@node`: on
    /// another node of the cluster).
    pub agent: String,
    /// How it waits for several incoming transitions.
    #[serde(default)]
    pub join: Option<JoinSpec>,
    /// What it receives of its predecessors.
    #[serde(default)]
    pub input: Option<InputSpec>,
    /// How the branches it fans out to start their threads.
    #[serde(default)]
    pub fan_out: Option<IsolationSpec>,
    /// Retries of its failed turns.
    #[serde(default)]
    pub retry: Option<RetrySpec>,
}

/// A graph node: an agent or workflow name, or the long form.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeSpec(pub NodeForm);

impl NodeSpec {
    /// The node's id: given, else its agent's name (without an `@node`
    /// part).
    pub fn id(&self) -> &str {
        self.0
            .id
            .as_deref()
            .unwrap_or_else(|| super::remote::ref_id(&self.0.agent))
    }
}

impl<'de> Deserialize<'de> for NodeSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = NodeSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an agent name, or a mapping with `agent`")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<NodeSpec, E> {
                Ok(NodeSpec(NodeForm {
                    id: None,
                    agent: s.to_string(),
                    join: None,
                    input: None,
                    fan_out: None,
                    retry: None,
                }))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<NodeSpec, A::Error> {
                NodeForm::deserialize(MapAccessDeserializer::new(map)).map(NodeSpec)
            }
        }
        deserializer.deserialize_any(V)
    }
}

impl JsonSchema for NodeSpec {
    fn schema_name() -> Cow<'static, str> {
        "Node".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        any_of(vec![
            string_schema("An agent's or named workflow's name."),
            generator.subschema_for::<NodeForm>(),
        ])
    }
}

/// A field of a JSON answer compared with a value.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FieldSpec {
    /// The field: a dotted path (`verdict.ok`) or a JSON pointer
    /// (`/verdict/ok`).
    pub path: String,
    /// The value it must equal.
    pub equals: serde_json::Value,
}

/// The long form of a condition.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "ConditionForm")]
pub enum ConditionForm {
    /// Always holds.
    Always,
    /// Holds when no other conditional transition of the node fired.
    Otherwise,
    /// A template expression: `{{ $steps.qa.output.approved }}` (true
    /// when the value is truthy) or `{{ … }} == value` / `!= value`.
    Expr(String),
    /// The response contains this text.
    Contains(String),
    /// The response matches this regular expression.
    Regex(String),
    /// The response hands off to this agent (or `user`).
    HandoffTo(String),
    /// The response comes from this node.
    Source(String),
    /// A field of the response (read as JSON) equals a value.
    Field(FieldSpec),
    /// The turn called this tool.
    ToolCalled(String),
    /// Any of these holds.
    Any(Vec<ConditionSpec>),
    /// All of these hold.
    All(Vec<ConditionSpec>),
    /// This does not hold.
    Not(Box<ConditionSpec>),
}

/// A condition: `always`, `otherwise`, a template expression string, or one
/// of the long forms.
#[derive(Debug, Clone, PartialEq)]
pub struct ConditionSpec(pub ConditionForm);

impl<'de> Deserialize<'de> for ConditionSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = ConditionSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a condition: `always`, `otherwise`, a `{{ … }}` expression, or one of `contains`, `regex`, `handoff_to`, `source`, `field`, `tool_called`, `expr`, `any`, `all`, `not`")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<ConditionSpec, E> {
                Ok(ConditionSpec(match s.trim() {
                    "always" => ConditionForm::Always,
                    "otherwise" => ConditionForm::Otherwise,
                    _ => ConditionForm::Expr(s.to_string()),
                }))
            }
            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ConditionSpec, A::Error> {
                ConditionForm::deserialize(MapAccessDeserializer::new(map)).map(ConditionSpec)
            }
        }
        deserializer.deserialize_any(V)
    }
}

impl JsonSchema for ConditionSpec {
    fn schema_name() -> Cow<'static, str> {
        "Condition".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        any_of(vec![
            string_schema(
                "`always`, `otherwise`, or a template expression such as `{{ $steps.qa.output.approved }}`.",
            ),
            generator.subschema_for::<ConditionForm>(),
        ])
    }
}

/// A graph transition.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TransitionSpec {
    /// The node it leaves.
    pub from: String,
    /// The node it goes to.
    pub to: String,
    /// When it fires (always, when absent).
    #[serde(default)]
    pub when: Option<ConditionSpec>,
    /// Declares a loop (a transition back to an earlier node); loops are
    /// also found by themselves.
    #[serde(default, rename = "loop")]
    pub is_loop: Option<bool>,
    /// How often this loop may be taken in one run (default
    /// `max_loop_iterations`).
    #[serde(default)]
    pub max_iterations: Option<u32>,
}

/// A control-flow graph.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GraphSpec {
    /// The nodes.
    pub nodes: Vec<NodeSpec>,
    /// The start nodes (default: those with no incoming transition).
    #[serde(default)]
    pub start: Vec<String>,
    /// The transitions.
    #[serde(default)]
    pub transitions: Vec<TransitionSpec>,
    /// When activated nodes start.
    #[serde(default)]
    pub scheduler: Option<SchedulerSpec>,
    /// Fail a run that takes more supersteps than this.
    #[serde(default)]
    pub max_supersteps: Option<u64>,
}

/// The kind of a step (inferred when absent: `agent`, `parallel` with
/// `steps`, `condition` with `condition`, `workflow` with `workflow`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StepKind {
    /// Runs an agent.
    Agent,
    /// Runs a named workflow.
    Workflow,
    /// Runs its `steps` concurrently and waits for all of them.
    Parallel,
    /// Chooses the `true` or `false` branch.
    Condition,
}

/// A branch of a condition step: the id of an earlier step to go back to
/// (a loop), or steps to run.
#[derive(Debug, Clone, PartialEq)]
pub enum BranchSpec {
    /// Go to this earlier step.
    Goto(String),
    /// Run these steps, then carry on after the condition.
    Steps(Vec<StepSpec>),
}

impl<'de> Deserialize<'de> for BranchSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = BranchSpec;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("the id of an earlier step, or a list of steps")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<BranchSpec, E> {
                Ok(BranchSpec::Goto(s.to_string()))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<BranchSpec, A::Error> {
                Vec::<StepSpec>::deserialize(SeqAccessDeserializer::new(seq)).map(BranchSpec::Steps)
            }
        }
        deserializer.deserialize_any(V)
    }
}

impl JsonSchema for BranchSpec {
    fn schema_name() -> Cow<'static, str> {
        "Branch".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        any_of(vec![
            string_schema("The id of an earlier step to go back to (a loop)."),
            generator.subschema_for::<Vec<StepSpec>>(),
        ])
    }
}

/// A step of a cagent-style workflow.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StepSpec {
    /// The step's id (default: its agent's or workflow's name). Unique
    /// across the workflow; templates and `goto` refer to it.
    #[serde(default)]
    pub id: Option<String>,
    /// The kind of step (inferred when absent).
    #[serde(default, rename = "type")]
    pub kind: Option<StepKind>,
    /// The agent to run (`agent@node`: on another node of the cluster).
    #[serde(default)]
    pub agent: Option<String>,
    /// With `type: agent`, the agent to run (as cagent writes it);
    /// otherwise a label.
    #[serde(default)]
    pub name: Option<String>,
    /// The named workflow to run.
    #[serde(default)]
    pub workflow: Option<String>,
    /// Parallel: the steps to run concurrently (they may nest).
    #[serde(default)]
    pub steps: Option<Vec<StepSpec>>,
    /// Condition: what to evaluate.
    #[serde(default)]
    pub condition: Option<ConditionSpec>,
    /// Condition: the branch taken when it holds.
    #[serde(default, rename = "true")]
    pub when_true: Option<BranchSpec>,
    /// Condition: the branch taken when it does not.
    #[serde(default, rename = "false")]
    pub when_false: Option<BranchSpec>,
    /// Retries of the step's failed turns.
    #[serde(default)]
    pub retry: Option<RetrySpec>,
}

/// How retries wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BackoffSpec {
    /// The same wait every time.
    Fixed,
    /// Doubling waits.
    Exponential,
}

/// A kind of failure worth retrying.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ErrorKindSpec {
    /// A failure retrying will not fix.
    Failed,
    /// A failure that may pass (`rate_limit` means the same).
    #[serde(alias = "rate_limit")]
    Transient,
    /// The turn took too long.
    Timeout,
    /// The model call failed.
    Model,
    /// A tool failed.
    Tool,
    /// A nested workflow failed.
    Workflow,
    /// The cluster node running the turn was lost (a retry runs it on
    /// another node hosting the agent, if there is one).
    Node,
}

/// Retries of a failed step (cagent's `retry`).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RetrySpec {
    /// Retries after the first failure (0 = none), as in cagent.
    pub max_attempts: u32,
    /// `fixed` (default) or `exponential`.
    #[serde(default)]
    pub backoff: Option<BackoffSpec>,
    /// The (first) wait (default 1s).
    #[serde(default)]
    pub delay: Option<HumanDuration>,
    /// Exponential: the longest wait (default 30s).
    #[serde(default)]
    pub max_delay: Option<HumanDuration>,
    /// Only these kinds of failure (all when absent).
    #[serde(default)]
    pub on: Option<Vec<ErrorKindSpec>>,
}

/// One name or several.
#[derive(Debug, Clone, PartialEq)]
pub struct Names(pub Vec<String>);

impl<'de> Deserialize<'de> for Names {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> Visitor<'de> for V {
            type Value = Names;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a name or a list of names")
            }
            fn visit_str<E: de::Error>(self, s: &str) -> Result<Names, E> {
                Ok(Names(vec![s.to_string()]))
            }
            fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<Names, A::Error> {
                Vec::<String>::deserialize(SeqAccessDeserializer::new(seq)).map(Names)
            }
        }
        deserializer.deserialize_any(V)
    }
}

impl JsonSchema for Names {
    fn schema_name() -> Cow<'static, str> {
        "Names".into()
    }
    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        any_of(vec![
            string_schema("A name; `*` for every sender."),
            generator.subschema_for::<Vec<String>>(),
        ])
    }
}

/// What a full inbox does with one more message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum OverflowSpec {
    /// Evict the oldest message (default).
    DropOldest,
    /// Drop the incoming message.
    DropNewest,
    /// Refuse it.
    Reject,
}

/// A route: `to`'s inbox accepts messages `from` these senders.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouteSpec {
    /// The senders: participants, `user`, or `*` for anyone.
    pub from: Names,
    /// The receiving participant.
    pub to: String,
    /// Messages one turn takes (default 1).
    #[serde(default)]
    pub batch_size: Option<usize>,
    /// How long a message may wait unread (`30s`, `1h`).
    #[serde(default)]
    pub ttl: Option<HumanDuration>,
    /// The most messages the inbox holds.
    #[serde(default)]
    pub capacity: Option<usize>,
    /// What a full inbox does.
    #[serde(default)]
    pub overflow: Option<OverflowSpec>,
    /// How long a partial batch waits before it runs anyway.
    #[serde(default)]
    pub max_wait: Option<HumanDuration>,
}

/// Routes between participants; alone, every participant runs whenever
/// its inbox holds a full batch.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RouterSpec {
    /// The participants (default: every agent named by a route);
    /// `agent@node` runs one on another node of the cluster, and routes
    /// name it `agent`.
    #[serde(default)]
    pub participants: Option<Vec<String>>,
    /// The routes.
    #[serde(default)]
    pub routes: Vec<RouteSpec>,
    /// Participants whose messages are results of the workflow.
    #[serde(default)]
    pub output: Vec<String>,
}

/// When a run stops. Every condition given counts (any of them stops the
/// run); `all` lists conditions that must all have held.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct StopSpec {
    /// After this many messages (inputs included).
    #[serde(default)]
    pub max_messages: Option<u64>,
    /// After this many agent turns.
    #[serde(default)]
    pub max_turns: Option<u64>,
    /// When a produced message contains this text.
    #[serde(default)]
    pub text_mention: Option<String>,
    /// When one of these produces a message.
    #[serde(default)]
    pub source_match: Option<Vec<String>>,
    /// When a message hands off to this target (e.g. `user`).
    #[serde(default)]
    pub handoff: Option<String>,
    /// When the run has spent this many tokens.
    #[serde(default)]
    pub token_budget: Option<u64>,
    /// When the run has lasted this long (`30s`, `5m`).
    #[serde(default)]
    pub timeout: Option<HumanDuration>,
    /// Conditions that must all have held.
    #[serde(default)]
    pub all: Option<Vec<StopSpec>>,
    /// Conditions any of which stops the run.
    #[serde(default)]
    pub any: Option<Vec<StopSpec>>,
}

/// A workflow: one kind (a preset, a graph, steps, or a router alone; a
/// graph may have a router too), plus threads and a stop condition. In
/// `workflows:`, `file:` takes the workflow of another config file.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct WorkflowSpec {
    /// The workflow's name (its path in events).
    #[serde(default)]
    pub name: Option<String>,
    /// What it does.
    #[serde(default)]
    pub description: Option<String>,
    /// Another config file whose workflow this is (relative to this file).
    #[serde(default)]
    pub file: Option<String>,
    /// Participants take turns in order, seeing every message.
    #[serde(default)]
    pub round_robin: Option<TeamSpec>,
    /// A model picks the next speaker each turn.
    #[serde(default)]
    pub selector: Option<SelectorSpec>,
    /// Agents hand off to each other; a handoff to `user` ends the run.
    #[serde(default)]
    pub swarm: Option<TeamSpec>,
    /// Agents one after another.
    #[serde(default)]
    pub sequential: Option<SequentialSpec>,
    /// Split, work in parallel, combine.
    #[serde(default)]
    pub map_reduce: Option<MapReduceSpec>,
    /// A control-flow graph.
    #[serde(default)]
    pub graph: Option<GraphSpec>,
    /// cagent-style steps: sequential, `parallel`, `condition`.
    #[serde(default)]
    pub steps: Option<Vec<StepSpec>>,
    /// Routes between participants (alone, or with a graph).
    #[serde(default)]
    pub router: Option<RouterSpec>,
    /// The iteration limit of every loop (default 100).
    #[serde(default)]
    pub max_loop_iterations: Option<u32>,
    /// Threads shared by several participants: group name → members.
    #[serde(default)]
    pub shared_threads: BTreeMap<String, Vec<String>>,
    /// When the run stops.
    #[serde(default)]
    pub stop: Option<StopSpec>,
    /// Stop after this many agent turns (shorthand for `stop.max_turns`).
    #[serde(default)]
    pub max_turns: Option<u64>,
    /// At most this many turns at once (router and dataflow runs).
    #[serde(default)]
    pub max_concurrency: Option<usize>,
}

/// Where checkpoints and chat sessions are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum StoreKind {
    /// In the process (lost when it ends).
    Memory,
    /// One file per checkpoint and conversation under a directory.
    Dir,
    /// One SQLite database file.
    Sqlite,
}

/// The checkpoint store.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CheckpointSpec {
    /// `memory`, `dir` or `sqlite`.
    pub store: StoreKind,
    /// The directory (`dir`) or database file (`sqlite`), relative to the
    /// config file.
    #[serde(default)]
    pub path: Option<String>,
    /// Also checkpoint every this many delivered messages (router runs).
    #[serde(default)]
    pub every: Option<u64>,
}

fn string_schema(description: &str) -> Schema {
    let mut map = serde_json::Map::new();
    map.insert("type".into(), "string".into());
    map.insert("description".into(), description.into());
    Schema::from(map)
}

fn any_of(schemas: Vec<Schema>) -> Schema {
    let mut map = serde_json::Map::new();
    map.insert(
        "anyOf".into(),
        serde_json::Value::Array(schemas.into_iter().map(Schema::to_value).collect()),
    );
    Schema::from(map)
}

/// The JSON Schema of a config file, as `troupe schema` prints it.
pub fn json_schema() -> serde_json::Value {
    schemars::schema_for!(ConfigFile).to_value()
}
