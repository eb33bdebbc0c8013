//! Graph algorithms over plain adjacency lists, shared by every crate of
//! troupe that checks a graph: reachability from a set of roots, strongly
//! connected components (and the cycles among them), and the back edges of a
//! depth-first walk.
//!
//! Nodes are the indices `0..n`; a graph is anything that implements
//! [`Adjacency`] — a `Vec<Vec<usize>>` or a slice of successor lists, or a
//! type of your own. Every algorithm is iterative, with its own explicit
//! stack, so a chain of a million nodes (a long plan written by a model, a
//! generated YAML file) cannot overflow the thread's stack. Successors that
//! are not nodes (`>= n`) are ignored, as are roots that are not, so no
//! input makes these functions panic.
//!
//! ```
//! use troupe_router::algo::{cycles, depth_first, reachable, strongly_connected_components};
//!
//! // 0 -> 1 -> 2 -> 0 is a cycle; 3 -> 3 a self-loop; 4 is alone.
//! let graph: Vec<Vec<usize>> = vec![vec![1], vec![2], vec![0, 3], vec![3], vec![]];
//!
//! assert_eq!(reachable(&graph, [0]), [true, true, true, true, false]);
//! assert_eq!(cycles(&graph), [vec![0, 1, 2], vec![3]]);
//!
//! let components = strongly_connected_components(&graph);
//! assert_eq!(components.len(), 3);
//! assert_eq!(components.component_of(1), components.component_of(2));
//!
//! // Walking from 0: the edge 2 -> 0 (successor #0 of 2) and the self-loop
//! // 3 -> 3 close loops, found in that order.
//! let walk = depth_first(&graph, [0]);
//! let back: Vec<(usize, usize)> = walk.back_edges.iter().map(|e| (e.from, e.to)).collect();
//! assert_eq!(back, [(2, 0), (3, 3)]);
//! assert!(!walk.reached[4]);
//! ```

mod adjacency;
mod dfs;
mod reach;
mod scc;

pub use adjacency::Adjacency;
pub use dfs::{BackEdge, DepthFirst, depth_first};
pub use reach::reachable;
pub use scc::{Components, cycles, strongly_connected_components};
