//! The server's limits and timeouts: a flag on the command line, else the
//! served configs' `serve:` block, else the default. Serving a directory,
//! the configs that set one must agree (the server has one of each).

use std::collections::BTreeMap;
use std::time::Duration;

use troupe::config::ServeSpec;

use super::ServeArgs;
use super::team::Team;

/// The default largest request body, in bytes.
pub(crate) const MAX_BODY: usize = 1 << 20;
/// The default number of runs under way at once.
pub(crate) const MAX_RUNS: usize = 64;
/// The default number of connections open at once.
pub(crate) const MAX_CONNECTIONS: usize = 512;
/// The default time a request's head may take.
pub(crate) const HEADER_TIMEOUT: Duration = Duration::from_secs(10);
/// The default time a request's body may take.
pub(crate) const BODY_TIMEOUT: Duration = Duration::from_secs(30);
/// The default time a connection may wait idle for its next request.
pub(crate) const IDLE_TIMEOUT: Duration = Duration::from_secs(60);

/// The limits and timeouts in force.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    /// The largest request body, in bytes.
    pub(crate) max_body: usize,
    /// Runs under way at once.
    pub(crate) max_runs: usize,
    /// Connections open at once.
    pub(crate) max_connections: usize,
    /// A request head's time.
    pub(crate) header_timeout: Duration,
    /// A request body's time.
    pub(crate) body_timeout: Duration,
    /// A connection's idle time.
    pub(crate) idle_timeout: Duration,
}

/// The settings `args` and `teams` say; why not, when they are wrong.
pub(crate) fn resolve(
    args: &ServeArgs,
    teams: &BTreeMap<String, Team>,
) -> Result<Settings, String> {
    let specs: Vec<(&str, &ServeSpec)> = teams
        .values()
        .filter_map(|t| t.config.spec().serve.as_ref().map(|s| (t.name.as_str(), s)))
        .collect();
    let count = |flag: Option<usize>, key: &str, get: fn(&ServeSpec) -> Option<u64>, default| {
        let v = match flag {
            Some(v) => v,
            None => match agreed(&specs, key, get)? {
                Some(v) => usize::try_from(v).unwrap_or(usize::MAX),
                None => default,
            },
        };
        if v == 0 {
            return Err(format!("--{} must be at least 1", key.replace('_', "-")));
        }
        Ok(v)
    };
    let time = |flag: Option<f64>,
                key: &str,
                get: fn(&ServeSpec) -> Option<Duration>,
                default: Duration| {
        let flag_name = key.replace('_', "-");
        let v = match flag {
            Some(secs) => Duration::try_from_secs_f64(secs).map_err(|_| {
                format!("--{flag_name} takes a number of seconds above 0 (got {secs})")
            })?,
            None => agreed(&specs, key, get)?.unwrap_or(default),
        };
        if v.is_zero() {
            return Err(format!("--{flag_name} must be above 0"));
        }
        Ok(v)
    };
    Ok(Settings {
        max_body: count(args.max_body, "max_body", |s| s.max_body, MAX_BODY)?,
        max_runs: count(args.max_runs, "max_runs", |s| s.max_runs, MAX_RUNS)?,
        max_connections: count(
            args.max_connections,
            "max_connections",
            |s| s.max_connections,
            MAX_CONNECTIONS,
        )?,
        header_timeout: time(
            args.header_timeout,
            "header_timeout",
            |s| s.header_timeout.as_ref().map(|d| d.duration),
            HEADER_TIMEOUT,
        )?,
        body_timeout: time(
            args.body_timeout,
            "body_timeout",
            |s| s.body_timeout.as_ref().map(|d| d.duration),
            BODY_TIMEOUT,
        )?,
        idle_timeout: time(
            args.idle_timeout,
            "idle_timeout",
            |s| s.idle_timeout.as_ref().map(|d| d.duration),
            IDLE_TIMEOUT,
        )?,
    })
}

/// The one value the configs that set `key` give it.
fn agreed<T: PartialEq + std::fmt::Debug + Copy>(
    specs: &[(&str, &ServeSpec)],
    key: &str,
    get: fn(&ServeSpec) -> Option<T>,
) -> Result<Option<T>, String> {
    let mut found: Option<(&str, T)> = None;
    for (team, spec) in specs {
        let Some(v) = get(spec) else { continue };
        match found {
            Some((first, w)) if w != v => {
                return Err(format!(
                    "teams `{first}` and `{team}` set `serve.{key}` differently ({w:?}, {v:?}); the server has one: set it alike, or with --{}",
                    key.replace('_', "-")
                ));
            }
            Some(_) => {}
            None => found = Some((team, v)),
        }
    }
    Ok(found.map(|(_, v)| v))
}
