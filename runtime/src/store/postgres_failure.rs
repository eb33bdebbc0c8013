//! [`PostgresFailure`]: which way a PostgreSQL store failed, so the CLI can
//! say whether to fix the URL, the server, the credentials or the grants.

use std::fmt;

/// Which way a PostgreSQL store failed (see
/// [`StoreError::Postgres`](super::StoreError::Postgres)).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum PostgresFailure {
    /// The URL cannot be parsed (or names no host).
    BadUrl,
    /// No server answered in time at the host and port (refused, no route,
    /// or the connect timeout passed).
    Unreachable,
    /// The server refused the user or password.
    Authentication,
    /// The database named in the URL does not exist.
    NoDatabase,
    /// The user lacks a privilege it needs (to create the tables, or to
    /// read or write them).
    Permission,
    /// The database holds tables of a newer troupe (a migration this build
    /// does not know).
    Schema,
    /// Any other error of a statement.
    Query,
}

impl fmt::Display for PostgresFailure {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            PostgresFailure::BadUrl => "bad URL",
            PostgresFailure::Unreachable => "server unreachable",
            PostgresFailure::Authentication => "authentication failed (wrong user or password)",
            PostgresFailure::NoDatabase => "no such database",
            PostgresFailure::Permission => "permission denied",
            PostgresFailure::Schema => "schema of a newer troupe",
            PostgresFailure::Query => "query failed",
        })
    }
}
