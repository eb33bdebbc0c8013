//! The names a program that runs YAML teams uses, for a glob import:
//!
//! ```no_run
//! use troupe_config::prelude::*;
//!
//! let config = Config::load("team.yaml")?;
//! # Ok::<(), ConfigError>(())
//! ```

pub use crate::{BuildOptions, Built, Config, ConfigError};
