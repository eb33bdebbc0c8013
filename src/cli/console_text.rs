//! Small pieces of the console's wording: counts with their plural, costs
//! with the digits that matter, text flattened to one line and shortened at
//! a word boundary, notes said once.

/// `1 turn`, `3 turns`.
pub(crate) fn count(n: u64, noun: &str) -> String {
    if n == 1 {
        format!("1 {noun}")
    } else {
        format!("{n} {noun}s")
    }
}

/// A cost in USD with its first two significant digits shown at least:
/// `$1.25`, `$0.0123`, `$0.000015` (never `$0.0000` for a cost that is
/// not zero).
pub(crate) fn usd(cost: f64) -> String {
    troupe::stats::format_usd(cost)
}

/// `text` on one line (runs of whitespace made one space), at most `max`
/// characters: a longer text is cut at the last word boundary that fits
/// and ends with `…`, so no word is cut in two (a single word longer than
/// `max` is cut where it must be).
pub(crate) fn one_line(text: &str, max: usize) -> String {
    let flat = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() <= max {
        return flat;
    }
    let cut: String = flat.chars().take(max).collect();
    // The cut falls between two words when the next character is a space.
    let between = flat.chars().nth(max) == Some(' ');
    let at_word = match cut.rfind(' ') {
        _ if between => cut.as_str(),
        Some(i) if i > max / 2 => &cut[..i],
        _ => cut.as_str(),
    };
    format!("{}…", at_word.trim_end_matches([',', ';', ':']))
}

/// The notes of a build, each said once and in order (a model shared by
/// five agents is resolved five times, to the same endpoint).
pub(crate) fn distinct(notes: &[String]) -> Vec<&str> {
    let mut seen = std::collections::BTreeSet::new();
    notes
        .iter()
        .filter(|n| seen.insert(n.as_str()))
        .map(String::as_str)
        .collect()
}

/// `text` in the colour of ANSI `code` when `color`.
pub(crate) fn paint(color: bool, code: &str, text: &str) -> String {
    if color {
        format!("\x1b[{code}m{text}\x1b[0m")
    } else {
        text.to_string()
    }
}

/// A duration for a person: `850ms`, `1.2s`.
pub(crate) fn elapsed(ms: f64) -> String {
    if ms >= 1000.0 {
        format!("{:.1}s", ms / 1000.0)
    } else {
        format!("{ms:.0}ms")
    }
}

/// `  ⇒ hands off to target: reason`
pub(crate) fn handoff_line(color: bool, target: &str, reason: &str) -> String {
    paint(
        color,
        "35",
        &format!(
            "  ⇒ hands off to {target}{}",
            if reason.is_empty() {
                String::new()
            } else {
                format!(": {}", one_line(reason, 160))
            }
        ),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_say_their_plural() {
        assert_eq!(count(1, "turn"), "1 turn");
        assert_eq!(count(0, "turn"), "0 turns");
        assert_eq!(count(6, "turn"), "6 turns");
    }

    #[test]
    fn a_long_text_is_cut_between_words() {
        let error = "HTTP error: connection refused (os error 111) while connecting to http://127.0.0.1:1/v1";
        let short = one_line(error, 40);
        assert_eq!(short, "HTTP error: connection refused (os error…");
        assert!(short.chars().count() <= 41);
        assert_eq!(one_line("a\n  b\tc", 10), "a b c");
        // One word longer than the room is cut where it must be.
        assert_eq!(one_line("abcdefghij", 4), "abcd…");
    }

    #[test]
    fn notes_are_said_once() {
        let notes = ["a".to_string(), "b".to_string(), "a".to_string()];
        assert_eq!(distinct(&notes), ["a", "b"]);
    }
}
