//! [`Reference`]: `$steps.<id>` and a path into what the step produced,
//! as written between `{{` and `}}`.

use std::fmt;

/// One step of a path after `$steps.<id>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Access {
    /// `.name`
    Field(String),
    /// `[n]`
    Index(usize),
}

/// A reference: `$steps.<step>` and a path.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    /// The step (or node, or participant) it names.
    pub step: String,
    /// What of it.
    pub path: Vec<Access>,
}

impl Reference {
    /// Every step id the reference names: the step, and a step inside a
    /// parallel block named with `.outputs.<id>`.
    pub fn steps(&self) -> Vec<&str> {
        let mut out = vec![self.step.as_str()];
        let mut i = 0;
        while i + 1 < self.path.len() {
            if self.path[i] == Access::Field("outputs".into())
                && let Access::Field(child) = &self.path[i + 1]
            {
                out.push(child);
            }
            i += 1;
        }
        out
    }
}

impl fmt::Display for Reference {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "$steps.{}", self.step)?;
        for a in &self.path {
            match a {
                Access::Field(name) => write!(f, ".{name}")?,
                Access::Index(i) => write!(f, "[{i}]")?,
            }
        }
        Ok(())
    }
}

/// A template that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct TemplateError {
    /// What is wrong.
    pub message: String,
}

pub(super) fn err<T>(message: impl Into<String>) -> Result<T, TemplateError> {
    Err(TemplateError {
        message: message.into(),
    })
}

/// Parses what is between `{{` and `}}`.
pub(super) fn parse_reference(inner: &str) -> Result<Reference, TemplateError> {
    let text = inner.trim();
    let Some(rest) = text.strip_prefix("$steps.") else {
        return err(format!(
            "`{{{{ {text} }}}}` is not a step reference (expected `$steps.<id>.output…`)"
        ));
    };
    let ident = |s: &str| -> bool {
        !s.is_empty()
            && s.chars()
                .all(|c| c.is_alphanumeric() || c == '_' || c == '-' || c == '#')
    };
    // The step id runs to the first `.` or `[`.
    let end = rest.find(['.', '[']).unwrap_or(rest.len());
    let step = &rest[..end];
    if !ident(step) {
        return err(format!("`$steps.{rest}` has no valid step id"));
    }
    let mut path = Vec::new();
    let tail = &rest[end..];
    let bytes = tail;
    let mut pos = 0;
    while pos < bytes.len() {
        let c = bytes[pos..].chars().next().unwrap_or(' ');
        if c == '.' {
            let start = pos + 1;
            let stop = bytes[start..]
                .find(['.', '['])
                .map_or(bytes.len(), |i| start + i);
            let name = &bytes[start..stop];
            if !ident(name) {
                return err(format!(
                    "`$steps.{rest}`: a `.` must be followed by a field name"
                ));
            }
            path.push(Access::Field(name.to_string()));
            pos = stop;
        } else if c == '[' {
            let Some(close) = bytes[pos..].find(']') else {
                return err(format!("`$steps.{rest}`: `[` without `]`"));
            };
            let inside = bytes[pos + 1..pos + close].trim();
            let Ok(n) = inside.parse::<usize>() else {
                return err(format!(
                    "`$steps.{rest}`: `[{inside}]` is not an index (expected a number such as [0])"
                ));
            };
            path.push(Access::Index(n));
            pos += close + 1;
        } else {
            return err(format!("`$steps.{rest}`: unexpected `{c}`"));
        }
    }
    Ok(Reference {
        step: step.to_string(),
        path,
    })
}
