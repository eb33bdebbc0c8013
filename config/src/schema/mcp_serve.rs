//! `serve: {mcp: …}`: what `troupe mcp` and `/mcp` offer beside the team
//! as a tool — how the tool takes its input and gives its answer, and the
//! resources, resource templates and prompts a client may read.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::Deserialize;

/// The team's MCP face: its tool, and resources and prompts served beside
/// it (every served file's are offered together).
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpServeSpec {
    /// How the team is called as a tool.
    #[serde(default)]
    pub tool: Option<McpToolSpec>,
    /// Resources with fixed content (`resources/list`, `resources/read`).
    #[serde(default)]
    pub resources: Vec<McpResourceSpec>,
    /// Resources read through a URI template (`resources/templates/list`).
    #[serde(default)]
    pub resource_templates: Vec<McpResourceTemplateSpec>,
    /// Prompts (`prompts/list`, `prompts/get`).
    #[serde(default)]
    pub prompts: Vec<McpPromptSpec>,
}

/// The team as a tool.
#[derive(Debug, Clone, Default, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpToolSpec {
    /// The tool's input as a JSON Schema (an object). The call's arguments
    /// are checked against it and given to the team as JSON text (or, when
    /// the schema's one property is a string, as that string).
    /// Default: `{message: string}`, required.
    #[serde(default)]
    pub input_schema: Option<serde_json::Value>,
    /// What the tool's result holds: `text` (the team's answer as one text
    /// block, the default) or `content` (the answer is JSON: a list of MCP
    /// content blocks — text, image, audio, resource — or an object with
    /// `content` and optionally `isError`).
    #[serde(default)]
    pub result: Option<McpToolResult>,
}

/// What a team-as-tool's result holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum McpToolResult {
    /// The team's answer as one text block.
    Text,
    /// The team's answer read as MCP content blocks.
    Content,
}

/// A resource with fixed content: exactly one of `text`, `blob`, `file`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpResourceSpec {
    /// Its URI (unique among the served resources).
    pub uri: String,
    /// Its name (default: the URI).
    #[serde(default)]
    pub name: Option<String>,
    /// What it is.
    #[serde(default)]
    pub description: Option<String>,
    /// Its MIME type (default `text/plain` for `text`,
    /// `application/octet-stream` otherwise).
    #[serde(default)]
    pub mime_type: Option<String>,
    /// Its content as text.
    #[serde(default)]
    pub text: Option<String>,
    /// Its content as base64.
    #[serde(default)]
    pub blob: Option<String>,
    /// A file holding its content (relative to the config file), read when
    /// the server starts: text when it is UTF-8, a blob otherwise.
    #[serde(default)]
    pub file: Option<String>,
}

/// Resources read through a URI template (RFC 6570 level 1: `{name}`).
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpResourceTemplateSpec {
    /// The template, e.g. `notes://{id}/text`.
    pub uri_template: String,
    /// Its name (default: the template).
    #[serde(default)]
    pub name: Option<String>,
    /// What it reads.
    #[serde(default)]
    pub description: Option<String>,
    /// The MIME type of what it reads (default `text/plain`).
    #[serde(default)]
    pub mime_type: Option<String>,
    /// The content read, with `{name}` replaced by the URI's part.
    pub text: String,
    /// Values `completion/complete` offers for each variable.
    #[serde(default)]
    pub complete: BTreeMap<String, Vec<String>>,
}

/// A prompt a client may get.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpPromptSpec {
    /// Its name (unique among the served prompts).
    pub name: String,
    /// What it is for.
    #[serde(default)]
    pub description: Option<String>,
    /// Its arguments; `{name}` in a message's text or resource is replaced
    /// by the argument's value.
    #[serde(default)]
    pub arguments: Vec<McpPromptArgumentSpec>,
    /// Its messages, in order.
    pub messages: Vec<McpPromptMessageSpec>,
}

/// One argument of a prompt.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpPromptArgumentSpec {
    /// Its name.
    pub name: String,
    /// What it is.
    #[serde(default)]
    pub description: Option<String>,
    /// Whether a `prompts/get` must give it.
    #[serde(default)]
    pub required: bool,
    /// Values `completion/complete` offers for it.
    #[serde(default)]
    pub complete: Vec<String>,
}

/// One message of a prompt: its role and exactly one of `text`, `image`,
/// `audio`, `resource`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpPromptMessageSpec {
    /// `user` (default) or `assistant`.
    #[serde(default)]
    pub role: Option<McpRole>,
    /// Text.
    #[serde(default)]
    pub text: Option<String>,
    /// An image.
    #[serde(default)]
    pub image: Option<McpMediaSpec>,
    /// A sound.
    #[serde(default)]
    pub audio: Option<McpMediaSpec>,
    /// An embedded resource.
    #[serde(default)]
    pub resource: Option<McpEmbeddedSpec>,
}

/// Who says a prompt's message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum McpRole {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// An image or a sound: base64 data and its MIME type.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpMediaSpec {
    /// The bytes, base64.
    pub data: String,
    /// Its MIME type, e.g. `image/png`.
    pub mime_type: String,
}

/// A resource embedded in a prompt's message: its URI and exactly one of
/// `text`, `blob`.
#[derive(Debug, Clone, PartialEq, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct McpEmbeddedSpec {
    /// Its URI.
    pub uri: String,
    /// Its MIME type (default `text/plain`).
    #[serde(default)]
    pub mime_type: Option<String>,
    /// Its content as text.
    #[serde(default)]
    pub text: Option<String>,
    /// Its content as base64.
    #[serde(default)]
    pub blob: Option<String>,
}
