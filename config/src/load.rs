//! [`Config`]: a config file loaded and checked, with the files it nests.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::de;
use crate::error::{ConfigError, Diagnostic, MAX_DIAGNOSTICS, Position};
use crate::list_form;
use crate::schema::ConfigFile;
use crate::tree::{self, FieldPath};
use crate::validate;

/// Configs nest (`workflows: {x: {file: …}}`) at most this deep.
const MAX_NESTING: usize = 16;

/// A config file (or a file it nests) is at most this many bytes.
pub const MAX_CONFIG_BYTES: u64 = 8 * 1024 * 1024;

/// A loaded, checked config.
#[derive(Debug, Clone)]
pub struct Config {
    path: PathBuf,
    spec: ConfigFile,
    /// The configs of `workflows` entries with `file:`, by name.
    nested: BTreeMap<String, Config>,
    /// The document, for the positions of problems found after loading.
    tree: std::sync::Arc<tree::Node>,
    /// What checking found that a run goes ahead with (said before it).
    warnings: Vec<Diagnostic>,
}

impl Config {
    /// Loads and checks a config file (and the files it nests).
    pub fn load(path: impl AsRef<Path>) -> Result<Config, ConfigError> {
        let path = path.as_ref();
        let bytes = read_config_file(path).map_err(|source| ConfigError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        let text = decode(bytes, path).map_err(|d| ConfigError::Invalid(vec![d]))?;
        Self::parse(&text, path)
    }

    /// Loads and checks config text; `path` names it in errors and is where
    /// nested files and store paths are found relative to.
    pub fn parse(text: &str, path: impl AsRef<Path>) -> Result<Config, ConfigError> {
        let mut diagnostics = Vec::new();
        let mut stack = Vec::new();
        let config = load_text(text, path.as_ref(), &mut stack, &mut diagnostics);
        match config {
            Some(c) if diagnostics.is_empty() => Ok(c),
            _ => {
                sort(&mut diagnostics, path.as_ref());
                cap(&mut diagnostics);
                Err(ConfigError::Invalid(diagnostics))
            }
        }
    }

    /// The file it was loaded from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// What it says.
    pub fn spec(&self) -> &ConfigFile {
        &self.spec
    }

    /// The config of a `workflows` entry that has `file:`.
    pub fn nested(&self, name: &str) -> Option<&Config> {
        self.nested.get(name)
    }

    /// The workflow's name: the workflow's own, else the config's, else
    /// `workflow`.
    pub fn workflow_name(&self) -> String {
        self.spec
            .workflow
            .as_ref()
            .and_then(|w| w.name.clone())
            .or_else(|| self.spec.name.clone())
            .unwrap_or_else(|| "workflow".into())
    }

    /// A problem with `field` found after loading (building, checking),
    /// placed where the field is written.
    pub(crate) fn locate(&self, field: &FieldPath, message: impl Into<String>) -> Diagnostic {
        Diagnostic::new(
            &self.path,
            self.tree.position_of(field),
            field.to_string(),
            message,
        )
    }

    /// The warnings checking the file found (not those of nested files).
    pub(crate) fn check_warnings(&self) -> &[Diagnostic] {
        &self.warnings
    }

    /// The configs of every `workflows` entry with `file:`.
    pub(crate) fn nested_configs(&self) -> impl Iterator<Item = &Config> {
        self.nested.values()
    }

    /// Where a path written in the config points (relative to the file).
    pub fn resolve_path(&self, written: &str) -> PathBuf {
        let p = Path::new(written);
        if p.is_absolute() {
            p.to_path_buf()
        } else {
            self.path
                .parent()
                .map_or_else(|| p.to_path_buf(), |dir| dir.join(p))
        }
    }
}

fn sort(diagnostics: &mut [Diagnostic], main: &Path) {
    diagnostics.sort_by(|a, b| {
        (a.file != main, &a.file, a.position).cmp(&(b.file != main, &b.file, b.position))
    });
}

/// Keeps the first [`MAX_DIAGNOSTICS`] problems and says, at the first
/// one left out, how many more there are.
fn cap(diagnostics: &mut Vec<Diagnostic>) {
    if diagnostics.len() <= MAX_DIAGNOSTICS {
        return;
    }
    let left_out = diagnostics.split_off(MAX_DIAGNOSTICS);
    if let Some(first) = left_out.first() {
        diagnostics.push(Diagnostic::new(
            &first.file,
            first.position,
            "",
            format!(
                "{} more problem(s) from here on not listed (only the first {MAX_DIAGNOSTICS} are)",
                left_out.len()
            ),
        ));
    }
}

fn load_text(
    text: &str,
    path: &Path,
    stack: &mut Vec<PathBuf>,
    diagnostics: &mut Vec<Diagnostic>,
) -> Option<Config> {
    let mut tree = match tree::parse(text) {
        Ok(t) => t,
        Err(e) => {
            diagnostics.push(Diagnostic::new(path, e.at, "", e.message));
            return None;
        }
    };
    list_form::normalize(&mut tree);
    let (spec, errors, removed) = de::deserialize_all::<ConfigFile>(&tree);
    let before = diagnostics.len();
    for e in errors {
        let field = e.field();
        // Unknown fields and missing ones point at the key; wrong values
        // at the value.
        let at = match (&e.missing, &e.path) {
            // A missing field is reported where its mapping's key is.
            (Some(_), Some(p)) => tree.position_of(p),
            _ => e.at.unwrap_or(tree.at),
        };
        let mut d = Diagnostic::new(path, at, field.to_string(), e.message);
        d.expected = e.expected;
        diagnostics.push(d);
    }
    let spec = spec?;
    let checked = validate::check(&spec, &tree, path, text, &removed);
    diagnostics.extend(checked.errors);

    stack.push(path.to_path_buf());
    let mut nested = BTreeMap::new();
    for (name, w) in &spec.workflows {
        let Some(file) = &w.file else { continue };
        let field = FieldPath::root()
            .key("workflows")
            .key(name.clone())
            .key("file");
        let at = tree.value_position(&field);
        let target = match path.parent() {
            Some(dir) if !Path::new(file).is_absolute() => dir.join(file),
            _ => PathBuf::from(file),
        };
        if stack.iter().any(|p| same_file(p, &target)) {
            diagnostics.push(
                Diagnostic::new(
                    path,
                    at,
                    field.to_string(),
                    format!("`{file}` nests itself"),
                )
                .expected("a file that does not include this one"),
            );
            continue;
        }
        if stack.len() >= MAX_NESTING {
            diagnostics.push(
                Diagnostic::new(
                    path,
                    at,
                    field.to_string(),
                    format!(
                        "`{file}` would be file {} of a chain of nested configs, past the limit of {MAX_NESTING}",
                        stack.len() + 1
                    ),
                )
                .expected(format!("configs nested at most {MAX_NESTING} files deep")),
            );
            continue;
        }
        let text = match read_config_file(&target) {
            Ok(bytes) => match decode(bytes, &target) {
                Ok(t) => t,
                Err(d) => {
                    diagnostics.push(d);
                    continue;
                }
            },
            Err(e) => {
                diagnostics.push(
                    Diagnostic::new(
                        path,
                        at,
                        field.to_string(),
                        format!("cannot read `{}`: {e}", target.display()),
                    )
                    .expected("a config file path relative to this file"),
                );
                continue;
            }
        };
        if let Some(inner) = load_text(&text, &target, stack, diagnostics) {
            if inner.spec.workflow.is_none() && inner.spec.agents.len() != 1 {
                diagnostics.push(Diagnostic::new(
                    path,
                    at,
                    field.to_string(),
                    format!("`{file}` has no workflow to nest"),
                ));
            }
            nested.insert(name.clone(), inner);
        }
    }
    stack.pop();
    if diagnostics.len() > before {
        return None;
    }
    Some(Config {
        path: path.to_path_buf(),
        spec,
        nested,
        tree: std::sync::Arc::new(tree),
        warnings: checked.warnings,
    })
}

/// Config text from the bytes of `path`; text that is not UTF-8 is an
/// error placed at the first byte that is not.
fn decode(bytes: Vec<u8>, path: &Path) -> Result<String, Diagnostic> {
    String::from_utf8(bytes).map_err(|e| {
        let good = e.utf8_error().valid_up_to();
        let bytes = e.as_bytes();
        let before = String::from_utf8_lossy(&bytes[..good]);
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().map_or(0, |l| l.chars().count()) + 1;
        let byte = bytes.get(good).copied().unwrap_or_default();
        let at = Position::new(
            u32::try_from(line).unwrap_or(u32::MAX),
            u32::try_from(column).unwrap_or(u32::MAX),
        );
        Diagnostic::new(
            path,
            at,
            "",
            format!(
                "not UTF-8 text: byte 0x{byte:02X} (byte {} of the file) is not UTF-8",
                good + 1
            ),
        )
        .expected("a config file in UTF-8")
    })
}

/// Reads a config file: a regular file of at most [`MAX_CONFIG_BYTES`].
///
/// The type is checked before the file is opened, so a FIFO cannot block
/// the open and a device such as `/dev/zero` is never read; the read is
/// capped too, should the file grow or be swapped after the check.
fn read_config_file(path: &Path) -> std::io::Result<Vec<u8>> {
    use std::io::{Error, ErrorKind, Read};
    let not_regular = |kind: &str| {
        Error::new(
            ErrorKind::InvalidInput,
            format!("not a regular file ({kind}); a config must be a regular file"),
        )
    };
    let too_big = || {
        Error::new(
            ErrorKind::InvalidData,
            format!("larger than the {MAX_CONFIG_BYTES}-byte limit of a config file"),
        )
    };
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        return Err(not_regular(file_kind(&meta.file_type())));
    }
    if meta.len() > MAX_CONFIG_BYTES {
        return Err(too_big());
    }
    let file = std::fs::File::open(path)?;
    // The path may have been replaced between the check and the open.
    let opened = file.metadata()?;
    if !opened.is_file() {
        return Err(not_regular(file_kind(&opened.file_type())));
    }
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_BYTES + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > MAX_CONFIG_BYTES {
        return Err(too_big());
    }
    Ok(bytes)
}

/// What kind of non-regular file this is, in words.
pub(crate) fn file_kind(t: &std::fs::FileType) -> &'static str {
    #[cfg(unix)]
    {
        use std::os::unix::fs::FileTypeExt;
        if t.is_fifo() {
            return "a FIFO";
        }
        if t.is_char_device() {
            return "a character device";
        }
        if t.is_block_device() {
            return "a block device";
        }
        if t.is_socket() {
            return "a socket";
        }
    }
    if t.is_dir() {
        "a directory"
    } else {
        "not a file"
    }
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(x), Ok(y)) => x == y,
        _ => a == b,
    }
}
