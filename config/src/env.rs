//! `${VAR}` and `${VAR:-default}` in config strings.

/// Expands `${VAR}` (an error if unset) and `${VAR:-default}`; `$$` is a
/// literal `$`. `lookup` reads a variable.
pub(crate) fn expand(
    text: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let after = &rest[i + 1..];
        if let Some(more) = after.strip_prefix('$') {
            out.push('$');
            rest = more;
        } else if let Some(body) = after.strip_prefix('{') {
            let Some(close) = body.find('}') else {
                return Err(format!("`${{` without `}}` in {text:?}"));
            };
            let inner = &body[..close];
            let (name, default) = match inner.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (inner, None),
            };
            let valid =
                !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
            if !valid {
                return Err(format!("`${{{inner}}}` is not a variable reference"));
            }
            match (lookup(name).filter(|v| !v.is_empty()), default) {
                (Some(v), _) => out.push_str(&v),
                (None, Some(d)) => out.push_str(d),
                (None, None) => {
                    return Err(format!(
                        "environment variable {name} is not set (write `${{{name}:-default}}` for a default)"
                    ));
                }
            }
            rest = &body[close + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::expand;

    #[test]
    fn expands_with_defaults() {
        let env = |k: &str| (k == "A").then(|| "x".to_string());
        assert_eq!(expand("${A}/${B:-y}/$$/$z", &env).unwrap(), "x/y/$/$z");
        assert!(expand("${B}", &env).unwrap_err().contains("B is not set"));
        assert!(expand("${A", &env).is_err());
        assert!(expand("${a b}", &env).is_err());
    }
}
