//! `tools:` of an agent: built-in tools by name (with options, such as
//! `approval`, as `name: {…}`), the `ask_user` tool, MCP servers, and
//! agents or workflows as tools.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::Deserialize;
use serde::de::value::{MapAccessDeserializer, SeqAccessDeserializer, StrDeserializer};
use serde::de::{self, Deserializer, MapAccess, SeqAccess, Visitor};

use crate::duration::HumanDuration;

/// A built-in tool, by the name a config writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum BuiltinTool {
    /// `calculator`: evaluates arithmetic (`+ - * / % ^`, parentheses).
    Calculator,
    /// `current_time`: the current UTC date and time (RFC 3339).
    CurrentTime,
    /// `word_count`: counts the words, lines and characters of a text.
    WordCount,
    /// `ask_user`: the model asks the user a question (`{"question":
    /// string}`); the run waits for the answer, which becomes the call's
    /// result.
    AskUser,
    /// `emit_event`: the model emits a custom event (`{"name": string,
    /// "data": any}`) to the run's event stream.
    EmitEvent,
    /// `yield_output`: the model yields a message (`{"text": string}`) as
    /// an output of its turn, before its final response.
    YieldOutput,
}

impl BuiltinTool {
    /// The name the config writes (and the model sees).
    pub fn name(self) -> &'static str {
        match self {
            BuiltinTool::Calculator => "calculator",
            BuiltinTool::CurrentTime => "current_time",
            BuiltinTool::WordCount => "word_count",
            BuiltinTool::AskUser => "ask_user",
            BuiltinTool::EmitEvent => "emit_event",
            BuiltinTool::YieldOutput => "yield_output",
        }
    }
}

/// Options of a built-in tool (`calculator: {approval: true}`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolOptions {
    /// Each call waits for the user's yes or no before it runs: the run
    /// asks `approve <tool>(<arguments>)? yes/no`; `yes`, `y`, `ok`,
    /// `approve(d)` run it, anything else tells the model it was denied.
    #[serde(default)]
    pub approval: Option<bool>,
    /// The action's memory kept beside each result (seed 003): a text
    /// where `{result}` is the result and `{result.FIELD}` a field of a
    /// JSON result; shown by `{action_memory}` and kept when old results
    /// are trimmed.
    #[serde(default)]
    pub memory: Option<String>,
}

/// The long form of a tool entry: a mapping with one key, the kind.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
#[schemars(rename = "ToolForm")]
enum ToolForm {
    /// `calculator` with options.
    Calculator(ToolOptions),
    /// `current_time` with options.
    CurrentTime(ToolOptions),
    /// `word_count` with options.
    WordCount(ToolOptions),
    /// `ask_user` with options.
    AskUser(ToolOptions),
    /// `emit_event` with options.
    EmitEvent(ToolOptions),
    /// `yield_output` with options.
    YieldOutput(ToolOptions),
    /// The tools of an MCP server.
    Mcp(Box<McpSpec>),
}

/// An agent or a named workflow as a tool (`{agent: researcher}`,
/// `{workflow: review}`): the model writes a request, the callee takes a
/// turn on it, and its final message is the tool's result.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct AgentToolSpec {
    /// The agent called.
    #[serde(default)]
    pub agent: Option<String>,
    /// The named workflow called.
    #[serde(default)]
    pub workflow: Option<String>,
    /// The tool's name the model sees (default: the callee's name).
    #[serde(default)]
    pub name: Option<String>,
    /// The tool's description the model sees (default: the callee's).
    #[serde(default)]
    pub description: Option<String>,
    /// The callee sees the caller's thread before the request (default:
    /// the request alone).
    #[serde(default)]
    pub shared_thread: Option<bool>,
    /// The action's memory kept beside each result, as for built-in
    /// tools: `{result}`, `{result.FIELD}` (the callee's answer).
    #[serde(default)]
    pub memory: Option<String>,
}

impl AgentToolSpec {
    /// The agent or workflow called.
    pub fn target(&self) -> &str {
        self.agent
            .as_deref()
            .or(self.workflow.as_deref())
            .unwrap_or_default()
    }
}

/// A tool an agent may call: a built-in one by name (`calculator`,
/// `ask_user`), a built-in one with options (`calculator: {approval:
/// true}`), or an MCP server's tools (`mcp: {…}`).
#[derive(Debug, Clone, PartialEq)]
pub enum ToolSpec {
    /// A built-in tool and its options.
    Builtin(BuiltinTool, ToolOptions),
    /// The tools of an MCP server.
    Mcp(Box<McpSpec>),
    /// An agent or a named workflow as a tool.
    Agent(AgentToolSpec),
}

impl ToolSpec {
    /// Whether every call of this entry's tool(s) waits for approval (for
    /// MCP: `approval: true` on the server).
    pub fn approval(&self) -> bool {
        match self {
            ToolSpec::Builtin(_, o) => o.approval == Some(true),
            ToolSpec::Mcp(m) => m.approval == Some(McpApproval::All(true)),
            ToolSpec::Agent(_) => false,
        }
    }
}

impl From<ToolForm> for ToolSpec {
    fn from(form: ToolForm) -> Self {
        match form {
            ToolForm::Calculator(o) => ToolSpec::Builtin(BuiltinTool::Calculator, o),
            ToolForm::CurrentTime(o) => ToolSpec::Builtin(BuiltinTool::CurrentTime, o),
            ToolForm::WordCount(o) => ToolSpec::Builtin(BuiltinTool::WordCount, o),
            ToolForm::AskUser(o) => ToolSpec::Builtin(BuiltinTool::AskUser, o),
            ToolForm::EmitEvent(o) => ToolSpec::Builtin(BuiltinTool::EmitEvent, o),
            ToolForm::YieldOutput(o) => ToolSpec::Builtin(BuiltinTool::YieldOutput, o),
            ToolForm::Mcp(m) => ToolSpec::Mcp(m),
        }
    }
}

const TOOL_EXPECTING: &str =
    "a tool name, `name: {approval: …}`, `mcp: {…}`, `agent: NAME` or `workflow: NAME`";

impl<'de> Deserialize<'de> for ToolSpec {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ToolVisitor)
    }
}

struct ToolVisitor;

impl<'de> Visitor<'de> for ToolVisitor {
    type Value = ToolSpec;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(TOOL_EXPECTING)
    }

    fn visit_str<E: de::Error>(self, name: &str) -> Result<ToolSpec, E> {
        if name == "mcp" {
            return Err(E::custom(
                "`mcp` needs its server: `mcp: {command: …}` or `mcp: {url: …}`",
            ));
        }
        BuiltinTool::deserialize(StrDeserializer::<E>::new(name))
            .map(|t| ToolSpec::Builtin(t, ToolOptions::default()))
    }

    fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<ToolSpec, A::Error> {
        // `agent:` / `workflow:` entries have several keys; the other
        // long forms are a mapping with one key, the kind. The first key
        // tells which: it is read here and given back to the form.
        let mut map = map;
        let Some(first) = map.next_key::<String>()? else {
            return Err(de::Error::custom(format!("expected {TOOL_EXPECTING}")));
        };
        let rest = FirstKey {
            first: Some(first.clone()),
            map,
        };
        if first == "agent" || first == "workflow" {
            AgentToolSpec::deserialize(MapAccessDeserializer::new(rest)).map(ToolSpec::Agent)
        } else {
            ToolForm::deserialize(MapAccessDeserializer::new(rest)).map(ToolSpec::from)
        }
    }
}

/// A mapping whose first key was already read: it gives that key back
/// first, then the rest of the mapping.
struct FirstKey<A> {
    first: Option<String>,
    map: A,
}

impl<'de, A: MapAccess<'de>> MapAccess<'de> for FirstKey<A> {
    type Error = A::Error;

    fn next_key_seed<K: de::DeserializeSeed<'de>>(
        &mut self,
        seed: K,
    ) -> Result<Option<K::Value>, A::Error> {
        match self.first.take() {
            Some(key) => seed
                .deserialize(de::value::StringDeserializer::<A::Error>::new(key))
                .map(Some),
            None => self.map.next_key_seed(seed),
        }
    }

    fn next_value_seed<V: de::DeserializeSeed<'de>>(
        &mut self,
        seed: V,
    ) -> Result<V::Value, A::Error> {
        self.map.next_value_seed(seed)
    }
}

impl JsonSchema for ToolSpec {
    fn schema_name() -> Cow<'static, str> {
        "Tool".into()
    }

    fn schema_id() -> Cow<'static, str> {
        "troupe_config::ToolSpec".into()
    }

    fn json_schema(generator: &mut SchemaGenerator) -> Schema {
        let short = generator.subschema_for::<BuiltinTool>();
        let long = generator.subschema_for::<ToolForm>();
        let agent = generator.subschema_for::<AgentToolSpec>();
        schemars::json_schema!({
            "description": "A tool an agent may call: a built-in one by name (`calculator`, `ask_user`), a built-in one with options (`calculator: {approval: true}`), an MCP server's tools (`mcp: {…}`), or an agent or named workflow (`agent: researcher`, `workflow: review`).",
            "anyOf": [short.to_value(), long.to_value(), agent.to_value()]
        })
    }
}

/// Which of an MCP server's tools wait for approval: `true` (all of
/// them), `false` (none), or a list of the server's tool names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum McpApproval {
    /// Every tool of the server, or none.
    All(bool),
    /// These tools (the server's names, before any `prefix`).
    Tools(Vec<String>),
}

impl McpApproval {
    /// Whether the server's tool `name` (its own name) waits for approval.
    pub fn covers(&self, name: &str) -> bool {
        match self {
            McpApproval::All(all) => *all,
            McpApproval::Tools(tools) => tools.iter().any(|t| t == name),
        }
    }
}

impl<'de> Deserialize<'de> for McpApproval {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(ApprovalVisitor)
    }
}

struct ApprovalVisitor;

impl<'de> Visitor<'de> for ApprovalVisitor {
    type Value = McpApproval;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("`true`, `false`, or a list of the server's tool names")
    }

    fn visit_bool<E: de::Error>(self, all: bool) -> Result<McpApproval, E> {
        Ok(McpApproval::All(all))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, seq: A) -> Result<McpApproval, A::Error> {
        Vec::<String>::deserialize(SeqAccessDeserializer::new(seq)).map(McpApproval::Tools)
    }
}

impl JsonSchema for McpApproval {
    fn schema_name() -> Cow<'static, str> {
        "McpApproval".into()
    }

    fn schema_id() -> Cow<'static, str> {
        "troupe_config::McpApproval".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        schemars::json_schema!({
            "description": "`true`: every tool of the server waits for approval; a list: these tools (the server's names).",
            "anyOf": [
                {"type": "boolean"},
                {"type": "array", "items": {"type": "string"}}
            ]
        })
    }
}

/// An MCP server: a child process over stdio (`command`) or a
/// streamable-HTTP endpoint (`url`). Strings expand `${VAR}` and
/// `${VAR:-default}`; `${TROUPE_EXE}` is the running `troupe` binary.
/// Values read from the environment into `env`, `headers` and `url` are
/// masked in every message and event troupe prints.
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
    /// stdio: environment variables to set. The server sees only these,
    /// the ones `inherit_env` names, and a minimal set (`PATH`, `HOME`,
    /// `USER`, `LOGNAME`, `SHELL`, `TERM`, `LANG`, `LC_*`, `TMPDIR`,
    /// `TZ`) — never troupe's API keys.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// stdio: variables of troupe's environment passed on to the server
    /// as they are (when set), beside the minimal set.
    #[serde(default)]
    pub inherit_env: Vec<String>,
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
    /// Time allowed for each request, and for startup unless
    /// `startup_timeout` is set (default 30s).
    #[serde(default)]
    pub timeout: Option<HumanDuration>,
    /// Time allowed to start the server and initialize the session
    /// (default: `timeout`). A server that does not answer in time is
    /// killed with every process it started.
    #[serde(default)]
    pub startup_timeout: Option<HumanDuration>,
    /// stdio: how many times a server that exits or crashes is started
    /// again before its tools fail (default 1; 0: never).
    #[serde(default)]
    pub restarts: Option<u32>,
    /// Tools whose calls wait for the user's yes or no: `true` (all),
    /// or a list of the server's tool names.
    #[serde(default)]
    pub approval: Option<McpApproval>,
    /// Whether the server's sampling requests (it asks for a completion)
    /// are answered by the calling agent's own model, counted in its usage
    /// and budgets like its other model calls (default false: refused).
    #[serde(default)]
    pub sampling: bool,
}
