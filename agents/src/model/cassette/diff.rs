//! A line diff of two JSON values (pretty-printed), for a request that
//! differs from the one recorded: the lines around the change that differ,
//! `-` recorded, `+` made now.

/// The lines of `recorded` and `now` that differ, with the common lines
/// before and after left out (a few kept for context).
pub(super) fn lines(recorded: &serde_json::Value, now: &serde_json::Value) -> String {
    let a = pretty(recorded);
    let b = pretty(now);
    let a: Vec<&str> = a.lines().collect();
    let b: Vec<&str> = b.lines().collect();
    let prefix = a.iter().zip(&b).take_while(|(x, y)| x == y).count();
    let suffix = a[prefix..]
        .iter()
        .rev()
        .zip(b[prefix..].iter().rev())
        .take_while(|(x, y)| x == y)
        .count();
    const CONTEXT: usize = 2;
    let mut out = Vec::new();
    for l in &a[prefix.saturating_sub(CONTEXT)..prefix] {
        out.push(format!("  {l}"));
    }
    for l in &a[prefix..a.len() - suffix] {
        out.push(format!("- {l}"));
    }
    for l in &b[prefix..b.len() - suffix] {
        out.push(format!("+ {l}"));
    }
    let tail = b.len() - suffix;
    for l in &b[tail..(tail + CONTEXT).min(b.len())] {
        out.push(format!("  {l}"));
    }
    out.join("\n")
}

/// `v` pretty-printed.
pub(super) fn pretty(v: &serde_json::Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_diff_shows_the_changed_lines_with_context() {
        let a = serde_json::json!({"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "hi"}]});
        let b = serde_json::json!({"messages": [{"role": "system", "content": "Be long."}, {"role": "user", "content": "hi"}]});
        let d = lines(&a, &b);
        assert!(d.contains("-       \"content\": \"Be brief.\""), "{d}");
        assert!(d.contains("+       \"content\": \"Be long.\""), "{d}");
        assert!(!d.contains("\"hi\""), "{d}");
    }
}
