//! The names a program spreading agents over nodes uses, for a glob
//! import:
//!
//! ```
//! use troupe_cluster::prelude::*;
//!
//! let _builder = Node::builder();
//! ```

pub use crate::{ClusterError, Node, Placement, RemoteAgent};
