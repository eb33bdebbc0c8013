//! A tool's action memory from YAML (`memory:` on a built-in tool or an
//! agent as tool): a text kept beside each result, `{result}` the result
//! and `{result.FIELD}` a field of a JSON result.

use std::sync::Arc;

use troupe_agents::{Tool, ToolContext, ToolDefinition, ToolError, ToolOutput, async_trait};

/// `tool`, each result carrying the memory `template` makes of it.
pub(crate) fn remembered(tool: Arc<dyn Tool>, template: Option<&String>) -> Arc<dyn Tool> {
    match template {
        Some(t) => Arc::new(Remembered {
            inner: tool,
            template: t.clone(),
        }),
        None => tool,
    }
}

struct Remembered {
    inner: Arc<dyn Tool>,
    template: String,
}

/// The memory `template` makes of `result`.
pub(crate) fn memory_of(template: &str, result: &str) -> String {
    let json: Option<serde_json::Value> = serde_json::from_str(result).ok();
    let mut out = String::new();
    let mut rest = template;
    while let Some(start) = rest.find("{result") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let Some(end) = after.find('}') else {
            out.push_str(&rest[start..]);
            return out;
        };
        let name = &after[..end];
        let value = match name.strip_prefix("result") {
            Some("") => Some(result.to_string()),
            Some(path) if path.starts_with('.') => json.as_ref().map(|j| {
                let field = path[1..]
                    .split('.')
                    .try_fold(j, |v, k| v.get(k))
                    .cloned()
                    .unwrap_or_default();
                match field {
                    serde_json::Value::String(s) => s,
                    serde_json::Value::Null => String::new(),
                    other => other.to_string(),
                }
            }),
            _ => None,
        };
        match value {
            Some(v) => out.push_str(&v),
            None => out.push_str(&rest[start..start + 2 + end]),
        }
        rest = &after[end + 1..];
    }
    out.push_str(rest);
    out
}

#[async_trait]
impl Tool for Remembered {
    fn definition(&self) -> &ToolDefinition {
        self.inner.definition()
    }

    fn needs_approval(&self) -> bool {
        self.inner.needs_approval()
    }

    async fn call(&self, arguments: &str, ctx: ToolContext) -> Result<ToolOutput, ToolError> {
        let out = self.inner.call(arguments, ctx).await?;
        let memory = memory_of(&self.template, &out.content);
        Ok(out.with_memory(memory))
    }
}

#[cfg(test)]
mod tests {
    use super::memory_of;

    #[test]
    fn a_memory_template_takes_the_result_and_its_fields() {
        assert_eq!(memory_of("got {result}", "42"), "got 42");
        assert_eq!(
            memory_of(
                "{result.words} words, {result.a.b}; {other}",
                r#"{"words": 3, "a": {"b": "x"}}"#
            ),
            "3 words, x; {other}"
        );
        assert_eq!(memory_of("{result.words}", "not json"), "{result.words}");
    }
}
