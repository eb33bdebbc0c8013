//! [`FunctionTool`]: a Rust async function with a typed, JSON-schema'd
//! argument, as a tool.

use std::any::Any;
use std::fmt;
use std::future::Future;

use async_trait::async_trait;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use schemars::generate::SchemaSettings;
use serde::de::DeserializeOwned;

use super::{Tool, ToolContext, ToolOutput, invalid_arguments, parse_arguments};
use crate::error::ToolError;
use crate::model::ToolDefinition;

type Handler = dyn Fn(serde_json::Value, ToolContext) -> BoxFuture<'static, Result<ToolOutput, ToolError>>
    + Send
    + Sync;

/// A tool made of an async function of a typed argument.
///
/// The argument type derives `Deserialize` and
/// [`JsonSchema`](schemars::JsonSchema); its schema is what the model sees
/// (doc comments become descriptions). schemars is re-exported as
/// [`troupe_agents::schemars`](crate::schemars): without a schemars
/// dependency of your own, add `#[schemars(crate = "troupe_agents::schemars")]`
/// next to the derive. Arguments the model gets
/// wrong — not JSON, a missing field, a wrong type — never reach the
/// function: the model gets a clear error back instead. The function may
/// fail with any `Display` error (its text goes back to the model) or with
/// a [`ToolError`] (kept as it is, so [`ToolError::Fatal`] ends the turn).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// use serde::Deserialize;
/// use troupe_agents::{schemars::JsonSchema, FunctionTool, Tool, ToolContext};
///
/// #[derive(Deserialize, JsonSchema)]
/// struct Add {
///     /// The first number.
///     a: i64,
///     /// The second number.
///     b: i64,
/// }
///
/// let add = FunctionTool::new("add", "Adds two integers.", |args: Add| async move {
///     Ok::<_, String>(args.a + args.b)
/// });
/// assert_eq!(add.definition().parameters["required"], serde_json::json!(["a", "b"]));
/// let sum = add.call(r#"{"a": 2, "b": 3}"#, ToolContext::detached("c1")).await.unwrap();
/// assert_eq!(sum.content, "5");
/// let bad = add.call(r#"{"a": "two"}"#, ToolContext::detached("c2")).await.unwrap_err();
/// assert!(bad.to_string().contains("invalid arguments for tool 'add'"));
/// # }
/// ```
pub struct FunctionTool {
    definition: ToolDefinition,
    handler: Box<Handler>,
}

impl fmt::Debug for FunctionTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("FunctionTool")
            .field("name", &self.definition.name)
            .finish()
    }
}

impl FunctionTool {
    /// A tool named `name` running `function` on the model's arguments.
    pub fn new<A, F, Fut, R, E>(
        name: impl Into<String>,
        description: impl Into<String>,
        function: F,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: Into<ToolOutput>,
        E: fmt::Display + Send + 'static,
    {
        Self::with_context(name, description, move |args: A, _ctx| function(args))
    }

    /// Like [`FunctionTool::new`], the function also getting the call's
    /// [`ToolContext`] (the caller's thread and run context).
    pub fn with_context<A, F, Fut, R, E>(
        name: impl Into<String>,
        description: impl Into<String>,
        function: F,
    ) -> Self
    where
        A: DeserializeOwned + JsonSchema + Send + 'static,
        F: Fn(A, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: Into<ToolOutput>,
        E: fmt::Display + Send + 'static,
    {
        let name = name.into();
        let tool_name = name.clone();
        let handler = move |value: serde_json::Value,
                            ctx: ToolContext|
              -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
            match serde_json::from_value::<A>(value) {
                Ok(args) => {
                    let fut = function(args, ctx);
                    Box::pin(async move { fut.await.map(Into::into).map_err(into_tool_error) })
                }
                Err(e) => {
                    let error = invalid_arguments(&tool_name, &e);
                    Box::pin(async move { Err(error) })
                }
            }
        };
        FunctionTool {
            definition: ToolDefinition {
                name,
                description: description.into(),
                parameters: schema_for::<A>(),
            },
            handler: Box::new(handler),
        }
    }

    /// A tool with a hand-written argument schema, the function getting the
    /// arguments as a JSON value (checked to be JSON, not against the schema).
    pub fn with_schema<F, Fut, R, E>(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: serde_json::Value,
        function: F,
    ) -> Self
    where
        F: Fn(serde_json::Value, ToolContext) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = Result<R, E>> + Send + 'static,
        R: Into<ToolOutput>,
        E: fmt::Display + Send + 'static,
    {
        let handler = move |value: serde_json::Value,
                            ctx: ToolContext|
              -> BoxFuture<'static, Result<ToolOutput, ToolError>> {
            let fut = function(value, ctx);
            Box::pin(async move { fut.await.map(Into::into).map_err(into_tool_error) })
        };
        FunctionTool {
            definition: ToolDefinition {
                name: name.into(),
                description: description.into(),
                parameters,
            },
            handler: Box::new(handler),
        }
    }
}

/// A [`ToolError`] stays what it is; any other error becomes its text.
fn into_tool_error<E: fmt::Display + Send + 'static>(e: E) -> ToolError {
    let text = e.to_string();
    match (Box::new(e) as Box<dyn Any + Send>).downcast::<ToolError>() {
        Ok(tool_error) => *tool_error,
        Err(_) => ToolError::Failed(text),
    }
}

/// The JSON schema of `A` as providers want tool parameters: no `$schema`
/// or `title`, sub-schemas inlined (several providers reject `$ref`).
pub(crate) fn schema_for<A: JsonSchema>() -> serde_json::Value {
    let settings = SchemaSettings::draft2020_12().with(|s| {
        s.inline_subschemas = true;
        s.meta_schema = None;
    });
    let mut schema = settings
        .into_generator()
        .into_root_schema_for::<A>()
        .to_value();
    if let Some(object) = schema.as_object_mut() {
        object.remove("title");
        object.remove("$schema");
    }
    schema
}

#[async_trait]
impl Tool for FunctionTool {
    fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    async fn call(&self, arguments: &str, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let value = parse_arguments(&self.definition.name, arguments)?;
        (self.handler)(value, ctx).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde::Deserialize;

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Nested {
        inner: Inner,
        tags: Vec<String>,
    }

    #[derive(Deserialize, JsonSchema)]
    #[allow(dead_code)]
    struct Inner {
        x: f64,
    }

    #[test]
    fn schemas_are_inlined_and_bare() {
        let s = schema_for::<Nested>();
        assert!(s.get("$schema").is_none() && s.get("title").is_none());
        assert!(!s.to_string().contains("$ref"), "{s}");
        assert_eq!(
            s["properties"]["inner"]["properties"]["x"]["type"],
            "number"
        );
    }

    #[tokio::test]
    async fn errors_keep_their_kind() {
        let fatal = FunctionTool::new("f", "", |_: Inner| async {
            Err::<String, _>(ToolError::Fatal("stop".into()))
        });
        let e = fatal
            .call("{\"x\":1}", ToolContext::detached("c"))
            .await
            .unwrap_err();
        assert!(matches!(e, ToolError::Fatal(_)));
        let plain = FunctionTool::new("p", "", |_: Inner| async { Err::<String, _>("nope") });
        let e = plain
            .call("{\"x\":1}", ToolContext::detached("c"))
            .await
            .unwrap_err();
        assert!(matches!(e, ToolError::Failed(ref t) if t == "nope"));
        let e = plain
            .call("not json", ToolContext::detached("c"))
            .await
            .unwrap_err();
        assert!(matches!(e, ToolError::InvalidArguments { .. }), "{e}");
    }
}
