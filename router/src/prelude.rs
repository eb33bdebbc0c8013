//! The names a program routing messages between agents uses, for a glob
//! import:
//!
//! ```
//! use troupe_router::prelude::*;
//!
//! let _builder = RouterBuilder::new();
//! ```

pub use crate::{InboxConfig, Router, RouterBuilder, RouterError};
