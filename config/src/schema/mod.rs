//! The config file's types: what a YAML config may say.
//!
//! These types are the schema: the loader deserializes them, and
//! `troupe schema` prints the JSON Schema generated from them (committed as
//! `schema/troupe.schema.json`, so editors can validate and complete
//! configs). Their doc comments become the schema's descriptions. Where a
//! config names a runtime setting (a node's `join`, a route's `overflow`,
//! retry error kinds…), the runtime's own type is used.
//!
//! One file per topic; `file` is the whole document.

mod a2a;
mod agents;
mod ceiling;
mod checkpoint;
mod conditions;
mod context;
mod file;
mod graph;
mod magentic;
mod mcp_serve;
mod merge;
mod model_limits;
mod models;
mod plan;
mod reasoner;
mod replies;
mod retention;
mod retry;
mod router;
mod schedules;
mod serve;
mod steps;
mod stop;
mod teams;
mod tools;
mod workflow;

pub use a2a::A2aSpec;
pub use agents::{AgentSpec, UserAnswerer, UserSpec};
pub use ceiling::{TurnLimit, UnboundedWord, default_turn_ceiling};
pub use checkpoint::{CheckpointSpec, DurabilitySpec, SaveErrorsSpec, StoreKind};
pub use conditions::{ConditionForm, ConditionSpec, FieldSpec};
pub use context::ContextSpec;
pub use file::{CONFIG_VERSION, ConfigFile, json_schema};
pub use graph::{GraphSpec, NodeForm, NodeSpec, TransitionSpec};
pub use magentic::MagenticSpec;
pub use mcp_serve::{
    McpEmbeddedSpec, McpMediaSpec, McpPromptArgumentSpec, McpPromptMessageSpec, McpPromptSpec,
    McpResourceSpec, McpResourceTemplateSpec, McpRole, McpServeSpec, McpToolResult, McpToolSpec,
};
pub use merge::{CacheSpec, MergeSpec};
pub use model_limits::{ModelRetrySpec, OnLengthSpec, RateLimitSpec, RetryKindSpec};
pub use models::{ModelSpec, PricingSpec, Provider};
pub use plan::{
    PassingMode, PlanFlagsSpec, PlanFormatSpec, PlanSectionSpec, PlanStepSpec, PlannerSpec,
    ScopeMode,
};
pub use reasoner::ReasonerSpec;
pub use replies::{HandoffReplySpec, ReplyForm, ReplySpec, ToolCallSpec};
pub use retention::RetentionSpec;
pub use retry::{BackoffSpec, PatternSpec, RetryOnSpec, RetrySpec};
pub use router::{Names, RouteSpec, RouterSpec};
pub use schedules::ScheduleSpec;
pub(crate) use schedules::parse_cron;
pub use serve::{DoubleTexting, ServeSpec};
pub use steps::{Branch, BranchSpec, StepKind, StepSpec};
pub(crate) use steps::{collect_step_ids, parallel_blocks};
pub use stop::{StopFields, StopForm, StopSpec};
pub use teams::{MapReduceSpec, PlacementSpec, SelectorSpec, SequentialSpec, TeamSpec};
pub use tools::{AgentToolSpec, BuiltinTool, McpApproval, McpSpec, ToolOptions, ToolSpec};
pub use workflow::WorkflowSpec;
