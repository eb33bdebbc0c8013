//! Connecting: the URL parsed, TLS with rustls, a pool with a bounded
//! connect timeout, and the driver's errors sorted into
//! [`PostgresFailure`]s naming the database without its password.

use std::sync::Arc;
use std::time::Duration;

use deadpool_postgres::{Manager, ManagerConfig, Pool, PoolError, RecyclingMethod, Runtime};
use tokio_postgres::error::SqlState;
use tokio_postgres::{Config, config::Host};
use tokio_postgres_rustls::MakeRustlsConnect;

use super::super::error::StoreError;
use super::super::postgres_failure::PostgresFailure;

/// How long connecting (TCP, TLS and authentication) may take by default.
pub(super) const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// Connections the pool keeps at most.
const POOL_SIZE: usize = 16;

/// `postgres://user@host:port/dbname`: the database as errors name it,
/// never with the password.
pub(super) fn describe(config: &Config) -> String {
    let user = config.get_user().unwrap_or("");
    let host = match config.get_hosts().first() {
        Some(Host::Tcp(h)) => h.clone(),
        #[cfg(unix)]
        Some(Host::Unix(p)) => p.display().to_string(),
        None => String::new(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config.get_dbname().unwrap_or(user);
    let at = if user.is_empty() {
        String::new()
    } else {
        format!("{user}@")
    };
    format!("postgres://{at}{host}:{port}/{db}")
}

/// The URL (or `key=value` string) parsed; a bad one is
/// [`PostgresFailure::BadUrl`] (the URL is not repeated: it may hold a
/// password).
pub(super) fn parse(url: &str, timeout: Duration) -> Result<Config, StoreError> {
    let bad = |source: Box<dyn std::error::Error + Send + Sync>| StoreError::Postgres {
        db: "(the URL given)".into(),
        failure: PostgresFailure::BadUrl,
        source,
    };
    let mut config: Config = url.parse().map_err(|e| {
        bad(format!("{e} (expected postgres://user:password@host:5432/dbname)").into())
    })?;
    if config.get_hosts().is_empty() {
        return Err(bad(
            "the URL names no host (postgres://user:password@host:5432/dbname)".into(),
        ));
    }
    config.connect_timeout(timeout);
    if config.get_application_name().is_none() {
        config.application_name("troupe");
    }
    Ok(config)
}

/// A pool of connections to `config`'s database: TLS as the URL's
/// `sslmode` asks (by default tried, and plain text if the server has
/// none), verified against the system's root certificates.
pub(super) fn pool(config: Config, timeout: Duration) -> Result<Pool, StoreError> {
    let db = describe(&config);
    let manager = Manager::from_config(
        config,
        tls(&db)?,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(POOL_SIZE)
        .runtime(Runtime::Tokio1)
        .create_timeout(Some(timeout))
        .wait_timeout(Some(timeout * 6))
        .build()
        .map_err(|e| StoreError::Postgres {
            db,
            failure: PostgresFailure::Query,
            source: Box::new(e),
        })
}

/// rustls with ring (the workspace's provider) and the system's roots.
pub(super) fn tls(db: &str) -> Result<MakeRustlsConnect, StoreError> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in rustls_native_certs::load_native_certs().certs {
        // A certificate the system holds but rustls cannot parse is skipped.
        let _ = roots.add(cert);
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| StoreError::Postgres {
            db: db.to_string(),
            failure: PostgresFailure::Unreachable,
            source: Box::new(e),
        })?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(MakeRustlsConnect::new(config))
}

/// A driver error, sorted.
pub(super) fn pg_error(db: &str) -> impl Fn(tokio_postgres::Error) -> StoreError + '_ {
    move |e| StoreError::Postgres {
        db: db.to_string(),
        failure: classify(&e),
        source: Box::new(Detailed(e)),
    }
}

/// A driver error whose text says all of it: the driver's own text is
/// only its kind (`db error`), the server's message and the OS error
/// being its sources.
#[derive(Debug)]
struct Detailed(tokio_postgres::Error);

impl std::fmt::Display for Detailed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if let Some(db) = self.0.as_db_error() {
            return write!(f, "{} ({})", db.message(), db.code().code());
        }
        write!(f, "{}", self.0)?;
        let mut next = std::error::Error::source(&self.0);
        while let Some(e) = next {
            write!(f, ": {e}")?;
            next = e.source();
        }
        Ok(())
    }
}

impl std::error::Error for Detailed {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.0)
    }
}

/// A pool error, sorted (a timeout waiting to connect is an unreachable
/// server).
pub(super) fn pool_error(db: &str) -> impl Fn(PoolError) -> StoreError + '_ {
    move |e| match e {
        PoolError::Backend(e) => pg_error(db)(e),
        PoolError::Timeout(_) => StoreError::Postgres {
            db: db.to_string(),
            failure: PostgresFailure::Unreachable,
            source: "no connection within the connect timeout".into(),
        },
        other => StoreError::Postgres {
            db: db.to_string(),
            failure: PostgresFailure::Query,
            source: Box::new(other),
        },
    }
}

/// Which failure a driver error is.
fn classify(e: &tokio_postgres::Error) -> PostgresFailure {
    if let Some(code) = e.code() {
        return if *code == SqlState::INVALID_PASSWORD
            || *code == SqlState::INVALID_AUTHORIZATION_SPECIFICATION
        {
            PostgresFailure::Authentication
        } else if *code == SqlState::INVALID_CATALOG_NAME {
            PostgresFailure::NoDatabase
        } else if *code == SqlState::INSUFFICIENT_PRIVILEGE {
            PostgresFailure::Permission
        } else {
            PostgresFailure::Query
        };
    }
    let text = e.to_string();
    if text.contains("password missing") {
        return PostgresFailure::Authentication;
    }
    let io = std::error::Error::source(e).is_some_and(|s| s.is::<std::io::Error>());
    if io || text.contains("timeout") || text.contains("connection closed") {
        PostgresFailure::Unreachable
    } else {
        PostgresFailure::Query
    }
}
