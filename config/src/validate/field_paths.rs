//! What a `$steps.<id>…` reference reads, checked against what the step
//! produces: a step has `.output` and `.agent`, a parallel block `.output`
//! (`.steps`, `.order`) and `.outputs`; a field of `.output` must be one
//! of the agent's `structured_output` schema (reading a field of an agent
//! with no schema is a warning: its output is JSON only by chance). At run
//! time, any other path renders as nothing and a condition on it is false.

use std::collections::BTreeMap;

use serde_json::Value;

use super::checker::Checker;
use super::producers::Producer;
use crate::error::{Position, one_of};
use crate::schema::{ConditionForm, ConditionSpec};
use crate::template::{Access, Reference};
use crate::tree::FieldPath;

/// One problem with a reference: the message, what was expected, and
/// whether it is only a warning.
struct Finding {
    message: String,
    expected: Option<String>,
    warning: bool,
}

/// Checks what reference `r`, written in the value at `path`, reads.
pub(super) fn check_field_path(c: &mut Checker<'_>, path: &FieldPath, r: &Reference) {
    let Some(f) = finding(r, &c.blocks, &c.producers) else {
        return;
    };
    let at = locate(c, path, &r.to_string());
    if f.warning {
        c.warn_at(at, path, f.message, f.expected);
    } else {
        c.error_at(at, path, f.message, f.expected);
    }
}

/// Where `written` is in the value at `path`: its own line and column when
/// found on the lines the value spans, else where the value starts.
fn locate(c: &Checker<'_>, path: &FieldPath, written: &str) -> Position {
    let start = c.value_start(path);
    for line in start.line..start.line.saturating_add(200) {
        let Some(text) = c.source_line(line) else {
            break;
        };
        let skip = if line == start.line {
            start.column.saturating_sub(1) as usize
        } else {
            0
        };
        let byte_skip = text.char_indices().nth(skip).map_or(text.len(), |(i, _)| i);
        if let Some(i) = text[byte_skip..].find(written) {
            let column = text[..byte_skip + i].chars().count() + 1;
            return Position::new(line, u32::try_from(column).unwrap_or(u32::MAX));
        }
    }
    start
}

fn finding(
    r: &Reference,
    blocks: &BTreeMap<String, Vec<String>>,
    producers: &BTreeMap<String, Producer>,
) -> Option<Finding> {
    // A step no workflow defines is reported where names are checked.
    if !blocks.contains_key(&r.step) && !producers.contains_key(&r.step) {
        return None;
    }
    let mut step = r.step.as_str();
    let mut rest = r.path.as_slice();
    // Into parallel blocks (`.outputs.<id>`, `.outputs[n]`); a wrong
    // index or id is reported elsewhere.
    while let [Access::Field(f), next, after @ ..] = rest
        && f == "outputs"
        && let Some(children) = blocks.get(step)
    {
        step = match next {
            Access::Field(id) if children.contains(id) => id,
            Access::Field(id) => {
                let ids: Vec<&str> = children.iter().map(String::as_str).collect();
                return Some(Finding {
                    message: format!(
                        "`{r}`: `{id}` is not a step of parallel block `{step}`: at run time it names nothing (renders empty; a condition on it is false)"
                    ),
                    expected: Some(one_of(&ids)),
                    warning: false,
                });
            }
            // An index past the end is reported with the block's indexes.
            Access::Index(i) => children.get(*i)?,
        };
        rest = after;
    }
    let error = |message: String, expected: String| {
        Some(Finding {
            message,
            expected: Some(expected),
            warning: false,
        })
    };
    if blocks.contains_key(step) {
        const BLOCK: &str = "`.output` (the block as JSON), `.output.order`, `.output.steps.<id>.output`, `.outputs.<id>.output` or `.outputs[n].output`";
        return match rest {
            [] => None,
            [Access::Field(f), ..] if f == "outputs" => error(
                format!("`{r}`: `.outputs` of parallel block `{step}` needs a step id or index"),
                BLOCK.into(),
            ),
            [Access::Field(f)] if f == "output" => None,
            [Access::Field(f), Access::Field(g), ..] if f == "output" && g == "order" => None,
            [Access::Field(f), Access::Field(g), ..] if f == "output" && g == "steps" => None,
            [Access::Field(f), next, ..] if f == "output" => error(
                format!(
                    "`{r}`: the output of parallel block `{step}` has no {}; it is `{{\"steps\": …, \"order\": […]}}`",
                    describe(next)
                ),
                BLOCK.into(),
            ),
            [first, ..] => error(
                format!(
                    "`{r}`: parallel block `{step}` has no {}: at run time it names nothing (renders empty; a condition on it is false)",
                    describe(first)
                ),
                BLOCK.into(),
            ),
        };
    }
    const STEP: &str = "`.output`, `.output.<field>` or `.agent`";
    let fields = match rest {
        [] => return None,
        [Access::Field(f)] if f == "agent" => return None,
        [Access::Field(f), rest @ ..] if f == "output" => rest,
        [first, ..] => {
            return error(
                format!(
                    "`{r}`: step `{step}` has no {}: at run time it names nothing (renders empty; a condition on it is false)",
                    describe(first)
                ),
                STEP.into(),
            );
        }
    };
    if fields.is_empty() {
        return None;
    }
    let Some(Producer::Agent { name, schema }) = producers.get(step) else {
        return None;
    };
    let Some(schema) = schema else {
        return Some(Finding {
            message: format!(
                "`{r}` reads a field of what agent `{name}` says, but `{name}` has no `structured_output`: unless it happens to answer in JSON, this renders as nothing (a condition on it is false)"
            ),
            expected: Some(format!("a `structured_output:` schema on agent `{name}`")),
            warning: true,
        });
    };
    schema_finding(r, name, schema, fields)
}

/// A field or index, as a message names it.
fn describe(a: &Access) -> String {
    match a {
        Access::Field(f) => format!("field `{f}`"),
        Access::Index(i) => format!("index [{i}]"),
    }
}

/// Follows `fields` down `schema` (agent `agent`'s); an unknown field is
/// an error listing those the schema has. Stops where the schema does not
/// say (`$ref`, `anyOf`, open objects).
fn schema_finding(
    r: &Reference,
    agent: &str,
    schema: &Value,
    fields: &[Access],
) -> Option<Finding> {
    let mut at = schema;
    let mut read = String::new();
    for a in fields {
        let kind = at.get("type").and_then(Value::as_str);
        match a {
            Access::Field(f) => {
                let props = at.get("properties").and_then(Value::as_object);
                let open = at
                    .get("additionalProperties")
                    .is_some_and(|v| v != &Value::Bool(false));
                match props {
                    Some(p) => match p.get(f) {
                        Some(next) => at = next,
                        None if open => return None,
                        None => {
                            let names: Vec<&str> = p.keys().map(String::as_str).collect();
                            let whose = if read.is_empty() {
                                format!("the structured output of agent `{agent}`")
                            } else {
                                format!("`{read}` in the structured output of agent `{agent}`")
                            };
                            return Some(Finding {
                                message: format!(
                                    "`{r}`: {whose} has no field `{f}`: at run time it names nothing (renders empty; a condition on it is false)"
                                ),
                                expected: Some(one_of(&names)),
                                warning: false,
                            });
                        }
                    },
                    None if kind.is_some_and(|k| k != "object") => {
                        return Some(Finding {
                            message: format!(
                                "`{r}`: {} of agent `{agent}`'s structured output is a {}, which has no field `{f}`",
                                if read.is_empty() {
                                    "the whole".to_string()
                                } else {
                                    format!("`{read}`")
                                },
                                kind.unwrap_or("value")
                            ),
                            expected: Some(format!(
                                "`$steps.{}.output{}`",
                                r.step,
                                if read.is_empty() {
                                    String::new()
                                } else {
                                    format!(".{read}")
                                }
                            )),
                            warning: false,
                        });
                    }
                    None => return None,
                }
                if !read.is_empty() {
                    read.push('.');
                }
                read.push_str(f);
            }
            Access::Index(i) => {
                match at.get("items") {
                    Some(items) if items.is_object() => at = items,
                    _ => return None,
                }
                read.push_str(&format!("[{i}]"));
            }
        }
    }
    None
}

/// The `field:` conditions in `cond` (at `path`), on a transition from
/// node `from`: their paths, checked against `from`'s schema as
/// `$steps.<from>.output.<path>` is.
pub(super) fn check_field_conditions(
    c: &mut Checker<'_>,
    path: &FieldPath,
    cond: &ConditionSpec,
    from: &str,
) {
    match &cond.0 {
        ConditionForm::Field(f) => {
            let at = path.key("field").key("path");
            let mut accesses = vec![Access::Field("output".into())];
            for seg in f.path.trim().split(['/', '.']).filter(|s| !s.is_empty()) {
                accesses.push(match seg.parse::<usize>() {
                    Ok(i) => Access::Index(i),
                    Err(_) => Access::Field(seg.to_string()),
                });
            }
            let r = Reference {
                step: from.to_string(),
                path: accesses,
            };
            if let Some(f) = finding(&r, &c.blocks, &c.producers) {
                if f.warning {
                    let start = c.value_start(&at);
                    c.warn_at(start, &at, f.message, f.expected);
                } else {
                    c.value_error(&at, f.message, f.expected);
                }
            }
        }
        ConditionForm::Any(list) | ConditionForm::All(list) => {
            let key = if matches!(cond.0, ConditionForm::Any(_)) {
                "any"
            } else {
                "all"
            };
            for (i, sub) in list.iter().enumerate() {
                check_field_conditions(c, &path.key(key).index(i), sub, from);
            }
        }
        ConditionForm::Not(sub) => check_field_conditions(c, &path.key("not"), sub, from),
        _ => {}
    }
}
