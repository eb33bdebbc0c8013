//! [`BuildOptions`]: how to build.

use std::path::PathBuf;

/// How to build.
#[derive(Debug, Clone, Default)]
pub struct BuildOptions {
    /// Run every `auto` model scripted, even when an endpoint is configured.
    pub offline: bool,
    /// What `${TROUPE_EXE}` expands to (default: `$TROUPE_EXE`, else the
    /// running executable).
    pub troupe_exe: Option<PathBuf>,
}
