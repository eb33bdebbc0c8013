//! Where a graph run stands: the nodes to run next, the state of every
//! join, the loop counters. Pure data, kept in a thread's scheduler state;
//! how finished turns move it through a graph is `traversal.rs`.

use serde::{Deserialize, Serialize};

/// Where one transition stands in the current round of its target's join.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub(super) enum EdgeState {
    /// Not decided yet in this round of its target's join.
    Pending,
    /// Taken.
    Fired,
    /// Its source finished without taking it, or was skipped.
    Dead,
}

/// The scheduling state of one graph run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Cursor {
    /// Nodes activated and not started yet, in activation order.
    pub(super) next: Vec<usize>,
    /// By node: whether it is in `next`.
    pub(super) in_next: Vec<bool>,
    /// By edge: where it stands in its target's join.
    pub(super) edges: Vec<EdgeState>,
    /// By node: incoming transitions fired in this round of its join.
    pub(super) fired: Vec<usize>,
    /// By node: incoming transitions decided (fired or dead) this round.
    pub(super) resolved: Vec<usize>,
    /// By node: an `Any` join already ran this round.
    pub(super) any_done: Vec<bool>,
    /// Times each back-edge was taken in this run of the graph.
    pub(super) loops: Vec<u32>,
    /// Supersteps completed.
    pub(crate) superstep: u64,
}

impl Cursor {
    /// Marks `node` to run next (once, however often it is activated).
    pub(crate) fn activate(&mut self, node: usize) {
        if !self.in_next[node] {
            self.in_next[node] = true;
            self.next.push(node);
        }
    }

    /// Whether any node waits to run.
    pub(crate) fn has_next(&self) -> bool {
        !self.next.is_empty()
    }

    /// The nodes waiting to run, in activation order.
    pub(crate) fn next_nodes(&self) -> &[usize] {
        &self.next
    }

    /// Takes the activated nodes, in node order (so a superstep runs and
    /// reports in the same order every time).
    #[cfg(test)]
    pub(crate) fn take_next(&mut self) -> Vec<usize> {
        let mut next = Vec::new();
        self.take_next_into(&mut next);
        next
    }

    /// [`take_next`](Self::take_next) into `out` (cleared first), whose
    /// buffer the cursor keeps for the next activations: a run's supersteps
    /// pass two buffers back and forth instead of growing a new one each.
    pub(crate) fn take_next_into(&mut self, out: &mut Vec<usize>) {
        out.clear();
        std::mem::swap(out, &mut self.next);
        out.sort_unstable();
        for &i in out.iter() {
            self.in_next[i] = false;
        }
    }

    /// Takes one activated node (dataflow: the earliest activated).
    pub(crate) fn take_one(&mut self, node: usize) -> bool {
        if let Some(pos) = self.next.iter().position(|&i| i == node) {
            self.next.remove(pos);
            self.in_next[node] = false;
            true
        } else {
            false
        }
    }
}
