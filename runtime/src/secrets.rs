//! The one redaction layer: a process-wide registry of secrets (API keys,
//! credential header values, keys in URLs, values read from the
//! environment into headers) and the function every printed text goes
//! through to have them masked.
//!
//! Whoever learns a secret registers it — the model clients their API key,
//! credential headers and the keys in their base URL, MCP clients their
//! headers and URL, the config builder every `${VAR}` it expands into a
//! header, a URL or an MCP server's `env:` — and whatever prints redacts:
//! model and MCP errors as they are made, the JSON-lines and console event
//! outputs, and the `troupe` CLI's stdout and stderr. Registering is
//! idempotent, and a secret stays registered for the life of the process.
//!
//! ```
//! use troupe_runtime::secrets;
//!
//! secrets::register("sk-doc-example-9f2c");
//! assert_eq!(secrets::redact("401: bad key sk-doc-example-9f2c"), "401: bad key ***");
//! secrets::register_url("https://gw.example/v1?key=gw-doc-example-77&v=2");
//! assert_eq!(
//!     secrets::redact("GET https://gw.example/v1?key=gw-doc-example-77"),
//!     "GET https://gw.example/v1?key=***"
//! );
//! assert_eq!(
//!     secrets::mask_url("https://user:pw-doc-1@gw.example/v1?key=abc&v=2"),
//!     "https://user:***@gw.example/v1?key=***&v=***"
//! );
//! ```

use std::borrow::Cow;
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

/// What a secret is replaced with.
pub const MASK: &str = "***";

/// Secrets shorter than this are not registered: masking a short value
/// (`true`, a port, a user name) would garble every message that happens
/// to contain it, and keys and tokens are longer.
pub const MIN_SECRET_CHARS: usize = 8;

/// Every registered secret, and its JSON-escaped form where that differs
/// (so JSON output is masked too), longest first: a secret that contains
/// another is masked whole.
static SECRETS: RwLock<Vec<String>> = RwLock::new(Vec::new());

fn read() -> RwLockReadGuard<'static, Vec<String>> {
    // A list of strings stays meaningful even if a writer panicked.
    SECRETS.read().unwrap_or_else(|p| p.into_inner())
}

fn write() -> RwLockWriteGuard<'static, Vec<String>> {
    SECRETS.write().unwrap_or_else(|p| p.into_inner())
}

/// Registers `secret`: from now on [`redact`] masks it. Surrounding
/// whitespace is ignored; values shorter than [`MIN_SECRET_CHARS`]
/// characters are not registered.
pub fn register(secret: &str) {
    let secret = secret.trim();
    if secret.chars().count() < MIN_SECRET_CHARS {
        return;
    }
    let escaped = serde_json::to_string(secret).unwrap_or_default();
    let escaped = escaped
        .strip_prefix('"')
        .and_then(|e| e.strip_suffix('"'))
        .unwrap_or(secret);
    let mut all = write();
    for form in [secret, escaped] {
        if !all.iter().any(|s| s == form) {
            all.push(form.to_string());
        }
    }
    all.sort_by_key(|s| std::cmp::Reverse(s.len()));
}

/// Whether a header of this name carries a credential: `Authorization`,
/// `Proxy-Authorization`, `Cookie`, and any name holding `key`, `token`,
/// `secret`, `password` or `auth`.
pub fn is_credential_header(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    name == "cookie"
        || ["key", "token", "secret", "password", "auth"]
            .iter()
            .any(|word| name.contains(word))
}

/// Registers a header's value if the header carries a credential
/// ([`is_credential_header`]): the whole value, and the credential after
/// an auth scheme (`Bearer …`, `Basic …`) on its own.
pub fn register_header(name: &str, value: &str) {
    if !is_credential_header(name) {
        return;
    }
    register(value);
    if let Some((_scheme, credential)) = value.trim().split_once(' ') {
        register(credential);
    }
}

/// Registers the secret parts of a URL: the password of its user info and
/// the value of every query parameter (raw and percent-decoded).
pub fn register_url(url: &str) {
    let parts = UrlParts::of(url);
    if let Some(password) = parts.password() {
        register(password);
        register(&percent_decode(password));
    }
    for value in parts.query_values() {
        register(value);
        register(&percent_decode(value));
    }
}

/// `url` as it may be shown: the password and every query value replaced
/// by [`MASK`] (whether registered or not).
pub fn mask_url(url: &str) -> String {
    let parts = UrlParts::of(url);
    let mut out = String::with_capacity(url.len());
    match parts.password {
        Some((start, end)) => {
            out.push_str(&url[..start]);
            out.push_str(MASK);
            out.push_str(&url[end..parts.query_start]);
        }
        None => out.push_str(&url[..parts.query_start]),
    }
    if let Some(query) = parts.query {
        out.push('?');
        let masked: Vec<String> = query
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((key, _)) => format!("{key}={MASK}"),
                None => pair.to_string(),
            })
            .collect();
        out.push_str(&masked.join("&"));
    }
    out.push_str(parts.fragment);
    out
}

/// `text` with every registered secret replaced by [`MASK`]; borrowed
/// when there is nothing to mask.
pub fn redact(text: &str) -> Cow<'_, str> {
    if !contains_any(text) {
        return Cow::Borrowed(text);
    }
    let secrets = read();
    let mut out = text.to_string();
    for secret in secrets.iter() {
        if out.contains(secret.as_str()) {
            out = out.replace(secret.as_str(), MASK);
        }
    }
    Cow::Owned(out)
}

/// Masks registered secrets inside the string literals of a JSON text
/// (a secret is registered in its JSON-escaped form too); numbers, `true`
/// and the structure are left alone, so the text stays valid JSON of the
/// same shape.
pub fn redact_json_text(json: &str) -> Cow<'_, str> {
    if !contains_any(json) {
        return Cow::Borrowed(json);
    }
    let bytes = json.as_bytes();
    let mut out = String::with_capacity(json.len());
    let (mut i, mut copied) = (0, 0);
    while i < bytes.len() {
        if bytes[i] != b'"' {
            i += 1;
            continue;
        }
        // A literal runs to the next quote not escaped; an escape is a
        // backslash and one ASCII character, so indices stay on char
        // boundaries.
        let start = i + 1;
        let mut end = start;
        while end < bytes.len() && bytes[end] != b'"' {
            end += if bytes[end] == b'\\' { 2 } else { 1 };
        }
        let end = end.min(bytes.len());
        out.push_str(&json[copied..start]);
        out.push_str(&redact(&json[start..end]));
        copied = end;
        i = end + 1;
    }
    out.push_str(&json[copied..]);
    Cow::Owned(out)
}

/// Whether `text` holds a registered secret.
fn contains_any(text: &str) -> bool {
    read().iter().any(|s| text.contains(s.as_str()))
}

/// Whether any secret is registered (a printer may skip the work of
/// redacting when none is).
pub fn any() -> bool {
    !read().is_empty()
}

/// The parts of a URL the masking cares about, found without a URL parser
/// (the runtime has no networking dependency).
struct UrlParts<'a> {
    /// Where the password of the user info starts and ends.
    password: Option<(usize, usize)>,
    url: &'a str,
    /// Where `?` is (or the end of what precedes the fragment).
    query_start: usize,
    query: Option<&'a str>,
    /// `#…`, or empty.
    fragment: &'a str,
}

impl<'a> UrlParts<'a> {
    fn of(url: &'a str) -> Self {
        let fragment_start = url.find('#').unwrap_or(url.len());
        let fragment = &url[fragment_start..];
        let before_fragment = &url[..fragment_start];
        let (query_start, query) = match before_fragment.find('?') {
            Some(i) => (i, Some(&before_fragment[i + 1..])),
            None => (fragment_start, None),
        };
        let authority_start = url.find("://").map_or(0, |i| i + 3).min(query_start);
        let rest = &url[authority_start..query_start];
        let authority = rest.split('/').next().unwrap_or_default();
        let password = authority.rfind('@').and_then(|at| {
            let colon = authority[..at].find(':')?;
            let (start, end) = (authority_start + colon + 1, authority_start + at);
            (start < end).then_some((start, end))
        });
        UrlParts {
            password,
            url,
            query_start,
            query,
            fragment,
        }
    }

    fn password(&self) -> Option<&'a str> {
        self.password.map(|(start, end)| &self.url[start..end])
    }

    fn query_values(&self) -> impl Iterator<Item = &'a str> {
        self.query
            .into_iter()
            .flat_map(|q| q.split('&'))
            .filter_map(|pair| pair.split_once('=').map(|(_, v)| v))
            .filter(|v| !v.is_empty())
    }
}

/// `%XX` escapes decoded (and `+` as a space); invalid escapes are kept.
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let hex = |i: usize| bytes.get(i).and_then(|b| (*b as char).to_digit(16));
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match (bytes[i], hex(i + 1), hex(i + 2)) {
            (b'%', Some(high), Some(low)) => {
                // Two hex digits make at most 255.
                out.push(u8::try_from(high * 16 + low).unwrap_or(b'?'));
                i += 3;
                continue;
            }
            (b'+', _, _) => out.push(b' '),
            (b, _, _) => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn registered_secrets_are_masked_longest_first() {
        register("abcd-secret-unit-1");
        register("abcd-secret-unit-1-longer");
        assert_eq!(
            redact("x abcd-secret-unit-1-longer y abcd-secret-unit-1"),
            "x *** y ***"
        );
        assert!(matches!(redact("nothing here"), Cow::Borrowed(_)));
        register("true");
        assert_eq!(redact("true"), "true");
        let json = r#"{"type":"x","n":12345678,"text":["a \"q\" abcd-secret-unit-1",true]}"#;
        assert_eq!(
            redact_json_text(json),
            r#"{"type":"x","n":12345678,"text":["a \"q\" ***",true]}"#
        );
    }

    #[test]
    fn json_escaped_forms_are_masked_too() {
        register("quote\"in-unit-2");
        let json = serde_json::to_string("quote\"in-unit-2").unwrap();
        assert_eq!(redact(&json), "\"***\"");
    }

    #[test]
    fn credential_headers_register_value_and_token() {
        register_header("Authorization", "Bearer tok-unit-3-xyz");
        assert_eq!(redact("got tok-unit-3-xyz"), "got ***");
        register_header("x-team", "blue-unit-3-team");
        assert_eq!(redact("blue-unit-3-team"), "blue-unit-3-team");
        assert!(is_credential_header("X-Api-Key") && is_credential_header("cookie"));
    }

    #[test]
    fn urls_register_and_mask_passwords_and_query_values() {
        register_url("http://me:pw%2Dunit-4@h:1/v1?key=k%3Dunit-4&x=#frag");
        assert_eq!(redact("pw-unit-4 k=unit-4 k%3Dunit-4"), "*** *** ***");
        assert_eq!(
            mask_url("http://me:pw@h:1/v1?key=k&flag&x=#frag"),
            "http://me:***@h:1/v1?key=***&flag&x=***#frag"
        );
        assert_eq!(mask_url("http://h/v1"), "http://h/v1");
        assert_eq!(mask_url("http://u@h/p?a=1"), "http://u@h/p?a=***");
    }
}
