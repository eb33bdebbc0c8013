//! The environment a stdio MCP server starts with: a minimal set of
//! harmless variables (as the official MCP SDKs pass), the ones its
//! configuration names in `inherit_env`, and the ones it sets in `env` —
//! never anything else of troupe's environment, API keys least of all.

use std::collections::BTreeMap;
use std::ffi::OsString;

/// The variables every stdio MCP server gets from troupe's environment
/// when they are set (the official MCP SDKs' list, with the locale and
/// the temporary directory); besides these, `LC_*` variables pass too.
#[cfg(unix)]
pub const MINIMAL_ENV: &[&str] = &[
    "HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "TMPDIR", "TZ",
];

/// The variables every stdio MCP server gets from troupe's environment
/// when they are set (the official MCP SDKs' list for Windows).
#[cfg(not(unix))]
pub const MINIMAL_ENV: &[&str] = &[
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATH",
    "PATHEXT",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "TMP",
    "USERNAME",
    "USERPROFILE",
    "PROGRAMFILES",
    "COMSPEC",
];

/// Whether `name` passes to every server: one of [`MINIMAL_ENV`] or a
/// locale variable (`LC_*`). Names compare case-insensitively on Windows.
fn is_minimal(name: &str) -> bool {
    let same = |a: &str, b: &str| {
        if cfg!(windows) {
            a.eq_ignore_ascii_case(b)
        } else {
            a == b
        }
    };
    MINIMAL_ENV.iter().any(|m| same(m, name)) || name.starts_with("LC_")
}

/// The child's whole environment: from `parent` (troupe's, as pairs) the
/// minimal variables and those `inherit` names, then `set` over them. A
/// minimal variable whose value starts with `()` (an exported shell
/// function) is left out, as the MCP SDKs do.
pub(super) fn child_env(
    parent: impl IntoIterator<Item = (OsString, OsString)>,
    inherit: &[String],
    set: &[(String, String)],
) -> BTreeMap<OsString, OsString> {
    let mut env = BTreeMap::new();
    for (name, value) in parent {
        let Some(text) = name.to_str() else { continue };
        let asked = inherit.iter().any(|n| n == text);
        let minimal = is_minimal(text) && !value.to_string_lossy().starts_with("()");
        if asked || minimal {
            env.insert(name, value);
        }
    }
    for (name, value) in set {
        env.insert(OsString::from(name), OsString::from(value));
    }
    env
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pairs(list: &[(&str, &str)]) -> Vec<(OsString, OsString)> {
        list.iter()
            .map(|(k, v)| (OsString::from(k), OsString::from(v)))
            .collect()
    }

    #[test]
    fn only_the_minimal_set_the_inherited_and_the_set_pass() {
        let parent = pairs(&[
            ("PATH", "/bin"),
            ("HOME", "/home/me"),
            ("LC_ALL", "C.UTF-8"),
            ("OPENAI_API_KEY", "sk-secret"),
            ("GITHUB_TOKEN", "ghp-x"),
            ("SHELL", "() { evil; }"),
        ]);
        let env = child_env(
            parent,
            &["GITHUB_TOKEN".to_string(), "NOT_SET".to_string()],
            &[("PATH".to_string(), "/opt/bin".to_string())],
        );
        let names: Vec<&str> = env.keys().filter_map(|k| k.to_str()).collect();
        if cfg!(unix) {
            assert_eq!(names, ["GITHUB_TOKEN", "HOME", "LC_ALL", "PATH"]);
        }
        assert!(!names.contains(&"OPENAI_API_KEY"));
        assert_eq!(env[&OsString::from("PATH")], "/opt/bin");
    }
}
