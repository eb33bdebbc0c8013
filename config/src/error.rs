//! [`Diagnostic`] and [`ConfigError`]: what is wrong with a config, and where.

use std::fmt;
use std::path::PathBuf;

/// At most this many problems are listed; one more line says how many
/// were left out.
pub const MAX_DIAGNOSTICS: usize = 512;

/// A place in a config file: 1-based line and column.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Position {
    /// The line, from 1 (0 when unknown).
    pub line: u32,
    /// The column, from 1 (0 when unknown).
    pub column: u32,
}

impl Position {
    /// A position at `line`, `column`.
    pub const fn new(line: u32, column: u32) -> Self {
        Position { line, column }
    }
}

/// One thing wrong with a config: the file, the place, the field (as a
/// dotted path such as `agents.writer.model`), what is wrong, and what
/// was expected.
///
/// Displayed as `FILE:LINE:COL: field `a.b.c`: message (expected …)`.
///
/// ```
/// use troupe_config::{Diagnostic, Position};
///
/// let d = Diagnostic::new("team.yaml", Position::new(3, 5), "agents.writer.model", "unknown model `fast`")
///     .expected("one of `main`");
/// assert_eq!(
///     d.to_string(),
///     "team.yaml:3:5: field `agents.writer.model`: unknown model `fast` (expected one of `main`)"
/// );
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// The file the problem is in.
    pub file: PathBuf,
    /// Where in it.
    pub position: Position,
    /// The field, as a dotted path (`workflow.steps[2].retry.delay`); empty
    /// for the whole document.
    pub field: String,
    /// What is wrong.
    pub message: String,
    /// What was expected, if that helps.
    pub expected: Option<String>,
}

impl Diagnostic {
    /// A problem with `field` at `position` of `file`.
    pub fn new(
        file: impl Into<PathBuf>,
        position: Position,
        field: impl Into<String>,
        message: impl Into<String>,
    ) -> Self {
        Diagnostic {
            file: file.into(),
            position,
            field: field.into(),
            message: message.into(),
            expected: None,
        }
    }

    /// Says what was expected.
    pub fn expected(mut self, expected: impl Into<String>) -> Self {
        self.expected = Some(expected.into());
        self
    }

    /// The problem as a warning line: `FILE:LINE:COL: warning: field `x`: message`
    /// (as `troupe validate`, `run` and `serve` print warnings).
    pub fn warning_line(&self) -> String {
        let mut line = format!(
            "{}:{}:{}: warning: ",
            self.file.display(),
            self.position.line,
            self.position.column
        );
        if !self.field.is_empty() {
            line.push_str(&format!("field `{}`: ", self.field));
        }
        line.push_str(&self.message);
        line
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}:{}:{}: ",
            self.file.display(),
            self.position.line,
            self.position.column
        )?;
        if !self.field.is_empty() {
            write!(f, "field `{}`: ", self.field)?;
        }
        f.write_str(&self.message)?;
        if let Some(expected) = &self.expected {
            write!(f, " (expected {expected})")?;
        }
        Ok(())
    }
}

/// Why a config could not be loaded or built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file could not be read.
    #[error("{}: cannot read: {source}", path.display())]
    Read {
        /// The config file that could not be read.
        path: PathBuf,
        /// What the system said.
        #[source]
        source: std::io::Error,
    },
    /// The config is invalid; every problem found, sorted by position.
    #[error("{}", render(.0))]
    Invalid(Vec<Diagnostic>),
    /// The config is valid but building the workflow failed (an MCP server
    /// that would not start, a model client that could not be made).
    #[error("{0}")]
    Build(String),
}

impl ConfigError {
    /// The problems, if the config is invalid.
    pub fn diagnostics(&self) -> &[Diagnostic] {
        match self {
            ConfigError::Invalid(d) => d,
            _ => &[],
        }
    }

    /// Whether the config itself is at fault (as opposed to the machine:
    /// a file that cannot be read, a server that does not start).
    pub fn is_invalid(&self) -> bool {
        matches!(self, ConfigError::Invalid(_))
    }
}

/// Names as an "expected" text: `` `a` ``, or `` one of `a`, `b` ``.
pub(crate) fn one_of(names: &[&str]) -> String {
    match names {
        [] => "nothing here".to_string(),
        [one] => format!("`{one}`"),
        _ => format!(
            "one of {}",
            names
                .iter()
                .map(|n| format!("`{n}`"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

fn render(diagnostics: &[Diagnostic]) -> String {
    let mut out = String::new();
    for (i, d) in diagnostics.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&d.to_string());
    }
    out
}
