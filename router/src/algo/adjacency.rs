//! [`Adjacency`]: what the graph algorithms need to know of a graph.

/// A directed graph whose nodes are the indices `0..node_count()`, given
/// by each node's successor list.
///
/// Implemented for `Vec<T>` and `[T]` where each `T` is a successor list
/// (`Vec<usize>`, `&[usize]`, …), and for references to any implementor.
/// Successors `>= node_count()` are ignored by every algorithm of
/// [`algo`](crate::algo).
///
/// ```
/// use troupe_router::algo::Adjacency;
///
/// let graph = vec![vec![1, 2], vec![2], vec![]];
/// assert_eq!(graph.node_count(), 3);
/// assert_eq!(graph.successors(0), [1, 2]);
/// assert!(graph.successors(7).is_empty()); // not a node: no successors
/// ```
pub trait Adjacency {
    /// The number of nodes, `n`: nodes are `0..n`.
    fn node_count(&self) -> usize;

    /// The successors of `node`, in the order edges are followed; empty for
    /// a node `>= n`. An edge may appear more than once.
    fn successors(&self, node: usize) -> &[usize];
}

impl<T: AsRef<[usize]>> Adjacency for [T] {
    fn node_count(&self) -> usize {
        self.len()
    }

    fn successors(&self, node: usize) -> &[usize] {
        self.get(node).map_or(&[], AsRef::as_ref)
    }
}

impl<T: AsRef<[usize]>> Adjacency for Vec<T> {
    fn node_count(&self) -> usize {
        self.len()
    }

    fn successors(&self, node: usize) -> &[usize] {
        self.as_slice().successors(node)
    }
}

impl<A: Adjacency + ?Sized> Adjacency for &A {
    fn node_count(&self) -> usize {
        (**self).node_count()
    }

    fn successors(&self, node: usize) -> &[usize] {
        (**self).successors(node)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slices_of_slices_are_graphs() {
        let lists: [&[usize]; 2] = [&[1], &[]];
        let graph: &[&[usize]] = &lists;
        assert_eq!(graph.node_count(), 2);
        assert_eq!(graph.successors(0), [1]);
        assert!(graph.successors(2).is_empty());
        assert_eq!((&graph).successors(0), [1]);
    }
}
