//! [`Checker`], which collects problems at the position of the field at
//! fault, and [`Defined`], the names a config defines.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::producers::Producer;
use crate::error::{Diagnostic, Position, one_of};
use crate::schema::ConfigFile;
use crate::tree::{FieldPath, Node, Seg, Value};

/// The field path of these keys from the document's root.
pub(super) fn p(segments: &[&str]) -> FieldPath {
    segments
        .iter()
        .fold(FieldPath::root(), |path, s| path.key(*s))
}

/// Collects problems with positions.
pub(super) struct Checker<'a> {
    file: &'a Path,
    /// The file's text, for positions inside a string value.
    source: &'a str,
    tree: &'a Node,
    removed: &'a [FieldPath],
    pub(super) diagnostics: Vec<Diagnostic>,
    /// The parallel blocks of every workflow, by id, with their steps'
    /// ids (for templates that index into them).
    pub(super) blocks: BTreeMap<String, Vec<String>>,
    /// What produces each id a template may name (for field paths).
    pub(super) producers: BTreeMap<String, Producer>,
    /// Problems that do not stop a run, said before it starts.
    pub(super) warnings: Vec<Diagnostic>,
}

impl<'a> Checker<'a> {
    pub(super) fn new(
        file: &'a Path,
        source: &'a str,
        tree: &'a Node,
        removed: &'a [FieldPath],
    ) -> Self {
        Checker {
            file,
            source,
            tree,
            removed,
            diagnostics: Vec::new(),
            blocks: BTreeMap::new(),
            producers: BTreeMap::new(),
            warnings: Vec::new(),
        }
    }

    /// A problem with the field at `path` (its key's position).
    pub(super) fn error(
        &mut self,
        path: &FieldPath,
        message: impl Into<String>,
        expected: Option<String>,
    ) {
        let path = &self.written(path);
        let at = self.tree.position_of(path);
        self.push(at, path, message.into(), expected);
    }

    /// A problem with the value at `path` (where the value starts).
    pub(super) fn value_error(
        &mut self,
        path: &FieldPath,
        message: impl Into<String>,
        expected: Option<String>,
    ) {
        let path = &self.written(path);
        let at = self.tree.value_position(path);
        self.push(at, path, message.into(), expected);
    }

    /// A problem inside the value at `path`, located at `at` (a position
    /// found in the text of that value).
    pub(super) fn error_at(
        &mut self,
        at: Position,
        path: &FieldPath,
        message: impl Into<String>,
        expected: Option<String>,
    ) {
        let path = &self.written(path);
        self.push(at, path, message.into(), expected);
    }

    /// A warning about the value at `path`, located at `at`.
    pub(super) fn warn_at(
        &mut self,
        at: Position,
        path: &FieldPath,
        message: impl Into<String>,
        expected: Option<String>,
    ) {
        let path = self.written(path);
        let mut d = Diagnostic::new(self.file, at, path.to_string(), message.into());
        d.expected = expected;
        if !self.warnings.contains(&d) {
            self.warnings.push(d);
        }
    }

    /// A warning about the field at `path` (its key's position).
    pub(super) fn warn(&mut self, path: &FieldPath, message: impl Into<String>) {
        let at = self.tree.position_of(&self.written(path));
        self.warn_at(at, path, message, None);
    }

    /// Where the value at `path` starts.
    pub(super) fn value_start(&self, path: &FieldPath) -> Position {
        self.tree.value_position(&self.written(path))
    }

    /// `path` (indexes counted in the deserialized lists, which skip the
    /// items removed for errors already reported) as written in the file.
    fn written(&self, path: &FieldPath) -> FieldPath {
        let mut out = FieldPath::root();
        for seg in &path.0 {
            out = match seg {
                Seg::Key(k) => out.key(k.clone()),
                Seg::Index(i) => {
                    let mut k = 0;
                    let mut left = *i;
                    loop {
                        if self.removed.contains(&out.index(k)) {
                            k += 1;
                        } else if left == 0 {
                            break;
                        } else {
                            left -= 1;
                            k += 1;
                        }
                    }
                    out.index(k)
                }
            };
        }
        out
    }

    /// Line `line` (from 1) of the file, without its line break.
    pub(super) fn source_line(&self, line: u32) -> Option<&'a str> {
        let index = usize::try_from(line).ok()?.checked_sub(1)?;
        self.source.lines().nth(index)
    }

    /// Records a problem of the field at `path`, located at `at`.
    fn push(&mut self, at: Position, path: &FieldPath, message: String, expected: Option<String>) {
        let mut d = Diagnostic::new(self.file, at, path.to_string(), message);
        d.expected = expected;
        self.diagnostics.push(d);
    }

    /// Whether `path` was dropped for an error already reported.
    pub(super) fn was_removed(&self, path: &FieldPath) -> bool {
        let path = self.written(path);
        self.removed.iter().any(|r| path.starts_with(r))
    }

    /// Whether something inside `path` was dropped.
    pub(super) fn lost_part(&self, path: &FieldPath) -> bool {
        let path = self.written(path);
        self.removed.iter().any(|r| r.starts_with(&path))
    }

    /// Whether the value at `path` is written as a mapping (the long form
    /// of a value that has a short one).
    pub(super) fn is_mapping(&self, path: &FieldPath) -> bool {
        matches!(
            self.tree.get(&self.written(path)).map(|n| &n.value),
            Some(Value::Map(_))
        )
    }
}

/// The names a config defines, for checking references.
pub(super) struct Defined {
    pub(super) models: BTreeSet<String>,
    pub(super) agents: BTreeSet<String>,
    pub(super) workflows: BTreeSet<String>,
    /// Entries removed for structural errors: references to them are not
    /// reported again.
    pub(super) broken: BTreeSet<String>,
}

impl Defined {
    pub(super) fn of(spec: &ConfigFile, removed: &[FieldPath]) -> Self {
        let mut broken = BTreeSet::new();
        for r in removed {
            if let [Seg::Key(section), Seg::Key(name), ..] = r.0.as_slice()
                && matches!(section.as_str(), "models" | "agents" | "workflows")
            {
                broken.insert(name.clone());
            }
        }
        Defined {
            models: spec.models.keys().cloned().collect(),
            agents: spec.agents.keys().cloned().collect(),
            workflows: spec.workflows.keys().cloned().collect(),
            broken,
        }
    }

    /// Whether `name` is an agent or a named workflow (or a broken entry).
    pub(super) fn participant(&self, name: &str) -> bool {
        self.agents.contains(name) || self.workflows.contains(name) || self.broken.contains(name)
    }

    /// Every agent and named workflow.
    pub(super) fn participants(&self) -> Vec<&str> {
        self.agents
            .iter()
            .chain(self.workflows.iter())
            .map(String::as_str)
            .collect()
    }

    /// Whether `name` is a model (or a broken entry).
    pub(super) fn model(&self, name: &str) -> bool {
        self.models.contains(name) || self.broken.contains(name)
    }

    /// The models, as the "expected" text of an unknown one.
    pub(super) fn expected_models(&self) -> Option<String> {
        expected_names(self.models.iter().map(String::as_str).collect())
    }
}

/// What to write instead of an unknown name.
pub(super) fn expected_names(names: Vec<&str>) -> Option<String> {
    if names.is_empty() {
        Some("a name defined in the config (none are)".into())
    } else {
        Some(one_of(&names))
    }
}

/// "must be at least 1", at the value of `path`.
pub(super) fn at_least_one(c: &mut Checker<'_>, path: &FieldPath) {
    c.value_error(path, "must be at least 1", Some("1 or more".into()));
}
