//! `completion/complete`: the values a prompt argument or a resource
//! template variable declares (`complete:`), those starting with what the
//! client typed first, then those containing it.

use rmcp::ErrorData as McpError;
use rmcp::model::{CompleteRequestParams, CompleteResult, CompletionInfo, Reference};

use super::surface::Surface;

/// `completion/complete`.
pub(super) fn complete(
    surface: &Surface,
    request: &CompleteRequestParams,
) -> Result<CompleteResult, McpError> {
    let declared: &[String] = match &request.r#ref {
        Reference::Prompt(p) => {
            let Some(prompt) = surface.prompts.iter().find(|x| x.name == p.name) else {
                return Err(McpError::invalid_params(
                    format!("no prompt `{}`", p.name),
                    None,
                ));
            };
            prompt
                .arguments
                .iter()
                .find(|a| a.name == request.argument.name)
                .map_or(&[], |a| a.complete.as_slice())
        }
        Reference::Resource(r) => {
            let Some(t) = surface.templates.iter().find(|t| t.uri_template == r.uri) else {
                return Err(McpError::invalid_params(
                    format!("no resource template `{}`", r.uri),
                    None,
                ));
            };
            t.complete
                .get(&request.argument.name)
                .map_or(&[], Vec::as_slice)
        }
        _ => &[],
    };
    let typed = request.argument.value.to_lowercase();
    let mut values: Vec<String> = declared
        .iter()
        .filter(|v| v.to_lowercase().starts_with(&typed))
        .cloned()
        .collect();
    values.extend(
        declared
            .iter()
            .filter(|v| {
                let v = v.to_lowercase();
                !v.starts_with(&typed) && v.contains(&typed)
            })
            .cloned(),
    );
    let total = values.len();
    values.truncate(CompletionInfo::MAX_VALUES);
    let mut info = CompletionInfo::default();
    info.has_more = Some(total > values.len());
    info.total = u32::try_from(total).ok();
    info.values = values;
    Ok(CompleteResult::new(info))
}
