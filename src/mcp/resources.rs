//! Resources: `resources/list`, `resources/templates/list`,
//! `resources/read` (a declared resource's text, base64 blob or file; a
//! template's text with the URI's parts filled in) and subscriptions: a
//! subscribed `file:` resource is watched, and each change to the file is
//! told to the client as `notifications/resources/updated` until it
//! unsubscribes or goes away.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use base64::Engine as _;
use rmcp::model::{
    ListResourceTemplatesResult, ListResourcesResult, ReadResourceResult,
    ResourceUpdatedNotificationParam, SubscriptionFilter,
};
use rmcp::service::{Peer, SubscriptionContext};
use rmcp::{ErrorData as McpError, RoleServer};
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use troupe::config::{McpResourceSpec, McpResourceTemplateSpec};

use super::surface::{Declared, Surface, fill, is_name};

/// How often a subscribed file is looked at.
const WATCH_EVERY: Duration = Duration::from_millis(500);

/// How long clients may keep a list or a read (SEP-2549): the declared
/// lists stay as long as the server runs; a `file:` resource may change.
const LIST_TTL_MS: u64 = 60_000;

/// A JSON value as an rmcp type (the shapes here are the spec's).
pub(super) fn typed<T: DeserializeOwned>(value: Value) -> Result<T, McpError> {
    serde_json::from_value(value).map_err(|e| McpError::internal_error(e.to_string(), None))
}

/// The caching hints every cacheable result carries (and its result
/// type, which rmcp leaves out for clients of older revisions).
pub(super) fn cached(mut value: Value, ttl_ms: u64) -> Value {
    if let Value::Object(map) = &mut value {
        map.insert("resultType".into(), "complete".into());
        map.insert("ttlMs".into(), ttl_ms.into());
        map.insert("cacheScope".into(), "private".into());
    }
    value
}

/// `resources/list`.
pub(super) fn list(surface: &Surface) -> Result<ListResourcesResult, McpError> {
    let resources: Vec<Value> = surface
        .resources
        .iter()
        .map(|d| {
            let r = &d.spec;
            json!({
                "uri": r.uri,
                "name": r.name.clone().unwrap_or_else(|| r.uri.clone()),
                "description": r.description.clone().unwrap_or_else(|| r.uri.clone()),
                "mimeType": mime(r),
            })
        })
        .collect();
    typed(cached(json!({"resources": resources}), LIST_TTL_MS))
}

/// `resources/templates/list`.
pub(super) fn templates(surface: &Surface) -> Result<ListResourceTemplatesResult, McpError> {
    let templates: Vec<Value> = surface
        .templates
        .iter()
        .map(|t| {
            json!({
                "uriTemplate": t.uri_template,
                "name": t.name.clone().unwrap_or_else(|| t.uri_template.clone()),
                "description": t.description.clone().unwrap_or_else(|| t.uri_template.clone()),
                "mimeType": t.mime_type.clone().unwrap_or_else(|| "text/plain".into()),
            })
        })
        .collect();
    typed(cached(json!({"resourceTemplates": templates}), LIST_TTL_MS))
}

/// `resources/read` of `uri`.
pub(super) async fn read(surface: &Surface, uri: &str) -> Result<ReadResourceResult, McpError> {
    if let Some(d) = surface.resources.iter().find(|d| d.spec.uri == uri) {
        let (content, ttl) = contents(d).await?;
        return typed(cached(json!({"contents": [content]}), ttl));
    }
    for t in &surface.templates {
        if let Some(values) = matches(&t.uri_template, uri) {
            let text = fill(&t.text, &|name| values.get(name).cloned());
            let mime = t.mime_type.clone().unwrap_or_else(|| "text/plain".into());
            let content = json!({"uri": uri, "mimeType": mime, "text": text});
            return typed(cached(json!({"contents": [content]}), 0));
        }
    }
    Err(not_found(uri))
}

/// The error for a URI no resource has (SEP-2164: invalid params, the URI
/// in `data`).
pub(super) fn not_found(uri: &str) -> McpError {
    McpError::invalid_params(
        format!("no resource `{uri}` (resources/list and resources/templates/list say which are)"),
        Some(json!({"uri": uri})),
    )
}

fn mime(r: &McpResourceSpec) -> String {
    r.mime_type.clone().unwrap_or_else(|| {
        if r.text.is_some() {
            "text/plain".into()
        } else {
            "application/octet-stream".into()
        }
    })
}

/// A declared resource's content, and how long it may be kept.
async fn contents(d: &Declared<McpResourceSpec>) -> Result<(Value, u64), McpError> {
    let r = &d.spec;
    let mime = mime(r);
    if let Some(text) = &r.text {
        return Ok((
            json!({"uri": r.uri, "mimeType": mime, "text": text}),
            LIST_TTL_MS,
        ));
    }
    if let Some(blob) = &r.blob {
        return Ok((
            json!({"uri": r.uri, "mimeType": mime, "blob": blob}),
            LIST_TTL_MS,
        ));
    }
    let Some(file) = &r.file else {
        return Err(McpError::internal_error(
            format!("the resource `{}` has no content", r.uri),
            None,
        ));
    };
    let path = d.config.resolve_path(file);
    let bytes = tokio::fs::read(&path).await.map_err(|e| {
        McpError::internal_error(
            format!("the resource `{}` ({}): {e}", r.uri, path.display()),
            Some(json!({"uri": r.uri})),
        )
    })?;
    let content = match String::from_utf8(bytes) {
        Ok(text) if r.mime_type.is_none() || mime.starts_with("text/") => {
            let mime = r.mime_type.clone().unwrap_or_else(|| "text/plain".into());
            json!({"uri": r.uri, "mimeType": mime, "text": text})
        }
        Ok(text) => json!({"uri": r.uri, "mimeType": mime, "blob": base64_of(text.as_bytes())}),
        Err(e) => json!({"uri": r.uri, "mimeType": mime, "blob": base64_of(e.as_bytes())}),
    };
    Ok((content, 0))
}

fn base64_of(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// The values of `template`'s variables in `uri`, if it matches (each
/// variable matches one or more characters up to the next literal part,
/// never a `/`).
pub(super) fn matches(template: &str, uri: &str) -> Option<BTreeMap<String, String>> {
    let mut values = BTreeMap::new();
    let mut t = template;
    let mut u = uri;
    loop {
        let Some(open) = t.find('{') else {
            return (t == u).then_some(values);
        };
        let literal = &t[..open];
        u = u.strip_prefix(literal)?;
        let close = t[open..].find('}')? + open;
        let name = &t[open + 1..close];
        if !is_name(name) {
            return None;
        }
        t = &t[close + 1..];
        let next = t.find('{').map_or(t, |n| &t[..n]);
        let end = if next.is_empty() {
            u.find('/').unwrap_or(u.len())
        } else {
            u.find(next)?
        };
        let value = &u[..end];
        if value.is_empty() || value.contains('/') {
            return None;
        }
        values.insert(name.to_string(), value.to_string());
        u = &u[end..];
    }
}

/// What one session subscribed to.
#[derive(Clone, Default)]
pub(super) struct Subscriptions {
    uris: Arc<Mutex<BTreeSet<String>>>,
}

impl Subscriptions {
    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeSet<String>> {
        self.uris.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn holds(&self, uri: &str) -> bool {
        self.lock().contains(uri)
    }

    /// `resources/subscribe`: a declared resource's URI (or one a
    /// template reads); a `file:` resource is then watched.
    pub(super) fn subscribe(
        &self,
        surface: &Surface,
        uri: &str,
        peer: Peer<RoleServer>,
    ) -> Result<(), McpError> {
        let declared = surface.resources.iter().find(|d| d.spec.uri == uri);
        let templated = || {
            surface
                .templates
                .iter()
                .any(|t: &McpResourceTemplateSpec| matches(&t.uri_template, uri).is_some())
        };
        if declared.is_none() && !templated() {
            return Err(not_found(uri));
        }
        if !self.lock().insert(uri.to_string()) {
            return Ok(());
        }
        if let Some(file) = declared.and_then(|d| d.spec.file.as_ref().map(|f| (d, f))) {
            let path = file.0.config.resolve_path(file.1);
            let subs = self.clone();
            let uri = uri.to_string();
            tokio::spawn(async move {
                let mut last: Option<(SystemTime, u64)> = stamp(&path);
                while subs.holds(&uri) && !peer.is_transport_closed() {
                    tokio::time::sleep(WATCH_EVERY).await;
                    let now = stamp(&path);
                    if now != last {
                        last = now;
                        let param = ResourceUpdatedNotificationParam::new(uri.clone());
                        if peer.notify_resource_updated(param).await.is_err() {
                            break;
                        }
                    }
                }
            });
        }
        Ok(())
    }

    /// `resources/unsubscribe`: no more updates for `uri`.
    pub(super) fn unsubscribe(&self, uri: &str) {
        self.lock().remove(uri);
    }
}

/// `subscriptions/listen` (2026-07-28): of what the client asks, the
/// updates of declared resources (no list ever changes while the server
/// runs, so no list-changed category is taken).
pub(super) fn accepted(surface: &Surface, requested: &SubscriptionFilter) -> SubscriptionFilter {
    let uris: Vec<String> = requested
        .resource_subscriptions
        .iter()
        .flatten()
        .filter(|uri| surface.resources.iter().any(|d| &d.spec.uri == *uri))
        .cloned()
        .collect();
    let mut filter = SubscriptionFilter::default();
    if !uris.is_empty() {
        filter.resource_subscriptions = Some(uris);
    }
    filter
}

/// One `subscriptions/listen` stream: each accepted `file:` resource is
/// watched and its changes sent, until the client cancels.
pub(super) async fn listen(surface: &Surface, context: SubscriptionContext) {
    let files: Vec<(String, PathBuf)> = context
        .accepted()
        .resource_subscriptions
        .iter()
        .flatten()
        .filter_map(|uri| {
            let d = surface.resources.iter().find(|d| &d.spec.uri == uri)?;
            let file = d.spec.file.as_ref()?;
            Some((uri.clone(), d.config.resolve_path(file)))
        })
        .collect();
    let mut last: Vec<Option<(SystemTime, u64)>> = files.iter().map(|(_, p)| stamp(p)).collect();
    loop {
        tokio::select! {
            _ = context.cancelled() => return,
            _ = tokio::time::sleep(WATCH_EVERY) => {}
        }
        for ((uri, path), seen) in files.iter().zip(last.iter_mut()) {
            let now = stamp(path);
            if now != *seen {
                *seen = now;
                if context
                    .sink()
                    .notify_resource_updated(uri.clone())
                    .await
                    .is_err()
                {
                    return;
                }
            }
        }
    }
}

/// When a file was last changed, and its length (`None`: not there).
fn stamp(path: &Path) -> Option<(SystemTime, u64)> {
    let meta = std::fs::metadata(path).ok()?;
    Some((meta.modified().ok()?, meta.len()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_template_matches_a_uri_and_gives_its_parts() {
        let m = matches("test://template/{id}/data", "test://template/123/data").unwrap();
        assert_eq!(m["id"], "123");
        assert!(matches("test://template/{id}/data", "test://template//data").is_none());
        assert!(matches("test://template/{id}/data", "test://template/1/2/data").is_none());
        assert!(matches("test://template/{id}/data", "test://other/1/data").is_none());
        let two = matches("notes://{user}/{id}", "notes://ann/7").unwrap();
        assert_eq!((two["user"].as_str(), two["id"].as_str()), ("ann", "7"));
    }
}
