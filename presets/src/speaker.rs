//! Reading a speaker's name out of a model's answer, as small models write
//! it, and what a team does when it cannot: the one algorithm
//! [`SelectorGroupChat`](crate::SelectorGroupChat) and
//! [`Magentic`](crate::Magentic) both use.

/// What an answer names, among the candidates it was asked to pick from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SpeakerMatch {
    /// Exactly this candidate.
    One(String),
    /// No candidate.
    None,
    /// Several candidates, with nothing to tell them apart (in candidate
    /// order).
    Several(Vec<String>),
}

/// What a team does when its model has named no valid speaker after every
/// attempt (AutoGen #6944, #7471: small models that answer in sentences
/// must not make a team loop).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[cfg_attr(
    feature = "schema",
    derive(serde::Deserialize, schemars::JsonSchema),
    serde(rename_all = "snake_case")
)]
pub enum SpeakerFallback {
    /// The candidate after the previous speaker, in participant order
    /// (the first candidate when nobody spoke yet); a warning says so.
    #[default]
    RoundRobin,
    /// Fail the turn with an error that quotes the answer and the valid
    /// names.
    Fail,
}

/// Reads which of `candidates` an answer names. Accepted forms: the name
/// as it is; in any case; in quotes, backticks or Markdown emphasis; after
/// a label (`Agent: coder`, `Next speaker - coder`); inside JSON
/// (`{"next": "coder"}`); a name with underscores written with spaces or
/// hyphens; a sentence that mentions exactly one candidate as a whole
/// word; any of these after a `<think>…</think>` block, which is left out.
/// A name found only inside a longer candidate's name (`code` in
/// `code-reviewer`) does not count.
///
/// ```
/// use troupe_presets::{parse_speaker, SpeakerMatch};
///
/// let names = ["planner".to_string(), "code_reviewer".to_string()];
/// assert_eq!(parse_speaker("**Planner**", &names), SpeakerMatch::One("planner".into()));
/// assert_eq!(parse_speaker("Next: code reviewer.", &names), SpeakerMatch::One("code_reviewer".into()));
/// assert_eq!(parse_speaker("nobody", &names), SpeakerMatch::None);
/// ```
pub fn parse_speaker(answer: &str, candidates: &[String]) -> SpeakerMatch {
    let answer = without_thinking(answer);
    let trimmed = answer.trim();
    if let Some(exact) = candidates.iter().find(|c| c.as_str() == trimmed) {
        return SpeakerMatch::One(exact.clone());
    }
    let cleaned = clean(answer);
    let bare = cleaned
        .trim()
        .trim_matches(|c: char| !c.is_alphanumeric() && c != '_');
    if let Some(one) = find_equal(bare, candidates) {
        return SpeakerMatch::One(one);
    }
    // `Agent: coder`, `Next speaker - coder`: the part after the label.
    if let Some(line) = cleaned.lines().find(|l| !l.trim().is_empty())
        && let Some((_, after)) = line.rsplit_once([':', '-', '='])
        && let Some(one) = find_equal(
            after
                .trim()
                .trim_matches(|c: char| !c.is_alphanumeric() && c != '_'),
            candidates,
        )
    {
        return SpeakerMatch::One(one);
    }
    let text = cleaned.to_lowercase();
    let spans: Vec<(usize, Vec<(usize, usize)>)> = candidates
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let mut found = Vec::new();
            for form in forms(c) {
                found.extend(word_spans(&text, &form));
            }
            (i, found)
        })
        .filter(|(_, found)| !found.is_empty())
        .collect();
    // A mention inside a longer candidate's mention is that candidate's.
    let named: Vec<String> = spans
        .iter()
        .filter(|(i, found)| {
            found.iter().any(|&(start, end)| {
                !spans.iter().any(|(j, other)| {
                    j != i
                        && other
                            .iter()
                            .any(|&(s, e)| s <= start && end <= e && e - s > end - start)
                })
            })
        })
        .map(|(i, _)| candidates[*i].clone())
        .collect();
    match named.len() {
        0 => SpeakerMatch::None,
        1 => SpeakerMatch::One(named[0].clone()),
        _ => SpeakerMatch::Several(named),
    }
}

/// Who speaks when the model could not tell, under `fallback`: with
/// [`SpeakerFallback::RoundRobin`], the first of `candidates` after
/// `previous` in `order` (wrapping), or the first candidate; `None` with
/// [`SpeakerFallback::Fail`] or no candidates.
pub(crate) fn fallback_speaker(
    fallback: SpeakerFallback,
    previous: Option<&str>,
    order: &[String],
    candidates: &[String],
) -> Option<String> {
    if fallback == SpeakerFallback::Fail {
        return None;
    }
    let start = previous
        .and_then(|p| order.iter().position(|n| n == p))
        .map_or(0, |i| i + 1);
    (0..order.len())
        .map(|k| &order[(start + k) % order.len()])
        .find(|n| candidates.contains(n))
        .or_else(|| candidates.first())
        .cloned()
}

/// What the model is told when its answer names no single candidate.
pub(crate) fn correction(found: &SpeakerMatch, candidates: &[String]) -> String {
    let problem = match found {
        SpeakerMatch::Several(names) => format!("names several candidates ({})", names.join(", ")),
        _ => "names no valid candidate".to_string(),
    };
    format!(
        "Your answer {problem}. Reply with exactly one name from [{}] and nothing else.",
        candidates.join(", ")
    )
}

/// The answer without `<think>…</think>` blocks (an unclosed one runs to
/// the end).
fn without_thinking(answer: &str) -> String {
    let mut out = String::with_capacity(answer.len());
    let mut rest = answer;
    while let Some(start) = rest.find("<think>") {
        out.push_str(&rest[..start]);
        match rest[start..].find("</think>") {
            Some(end) => rest = &rest[start + end + "</think>".len()..],
            None => rest = "",
        }
    }
    out.push_str(rest);
    out
}

/// The answer with quotes, backticks, Markdown marks and brackets turned
/// into spaces.
fn clean(answer: String) -> String {
    answer
        .chars()
        .map(|c| {
            if matches!(
                c,
                '*' | '`'
                    | '"'
                    | '\''
                    | '“'
                    | '”'
                    | '‘'
                    | '’'
                    | '«'
                    | '»'
                    | '#'
                    | '>'
                    | '<'
                    | '['
                    | ']'
                    | '('
                    | ')'
                    | '{'
                    | '}'
                    | '|'
                    | ','
            ) {
                ' '
            } else {
                c
            }
        })
        .collect()
}

/// The candidate `text` is, in any case and with underscores written as
/// spaces or hyphens.
fn find_equal(text: &str, candidates: &[String]) -> Option<String> {
    if text.is_empty() {
        return None;
    }
    let text = text.to_lowercase();
    let hits: Vec<&String> = candidates
        .iter()
        .filter(|c| forms(c).contains(&text))
        .collect();
    match hits.as_slice() {
        [one] => Some((*one).clone()),
        _ => None,
    }
}

/// The lowercase ways a name may be written.
fn forms(name: &str) -> Vec<String> {
    let lower = name.to_lowercase();
    let mut forms = vec![lower.clone()];
    for sep in [" ", "-"] {
        if lower.contains('_') {
            forms.push(lower.replace('_', sep));
        }
    }
    forms.retain(|f| !f.is_empty());
    forms
}

/// Where `name` occurs in `text` as a whole word (not inside a longer
/// word), as byte spans.
fn word_spans(text: &str, name: &str) -> Vec<(usize, usize)> {
    let is_word = |c: char| c.is_alphanumeric() || c == '_';
    text.match_indices(name)
        .filter(|(at, _)| {
            let before = text[..*at].chars().next_back();
            let after = text[at + name.len()..].chars().next();
            !before.is_some_and(is_word) && !after.is_some_and(is_word)
        })
        .map(|(at, _)| (at, at + name.len()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    fn one(s: &str) -> SpeakerMatch {
        SpeakerMatch::One(s.into())
    }

    #[test]
    fn reads_names_in_the_forms_models_write_them() {
        let c = names(&["planner", "coder", "code_reviewer", "code-review"]);
        for (answer, expected) in [
            ("coder", one("coder")),
            ("  'coder'.", one("coder")),
            ("CODER", one("coder")),
            ("**Coder**", one("coder")),
            ("`coder`", one("coder")),
            ("Agent: coder", one("coder")),
            ("Next speaker - Coder", one("coder")),
            ("{\"speaker\": \"coder\"}", one("coder")),
            ("the code reviewer, please", one("code_reviewer")),
            ("code-reviewer", one("code_reviewer")),
            ("code-review", one("code-review")),
            ("<think>planner or coder?</think>coder", one("coder")),
            (
                "I think the coder should go next, since the plan is done",
                one("coder"),
            ),
            ("decoder", SpeakerMatch::None),
            ("nobody", SpeakerMatch::None),
            (
                "planner or coder",
                SpeakerMatch::Several(names(&["planner", "coder"])),
            ),
        ] {
            assert_eq!(parse_speaker(answer, &c), expected, "{answer:?}");
        }
    }

    #[test]
    fn the_fallback_takes_turns_or_refuses() {
        let order = names(&["a", "b", "c"]);
        let rr = SpeakerFallback::RoundRobin;
        assert_eq!(
            fallback_speaker(rr, None, &order, &order).as_deref(),
            Some("a")
        );
        assert_eq!(
            fallback_speaker(rr, Some("c"), &order, &order).as_deref(),
            Some("a")
        );
        assert_eq!(
            fallback_speaker(rr, Some("a"), &order, &names(&["a", "c"])).as_deref(),
            Some("c")
        );
        assert_eq!(
            fallback_speaker(SpeakerFallback::Fail, None, &order, &order),
            None
        );
    }
}
