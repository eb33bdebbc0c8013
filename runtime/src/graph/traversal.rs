//! How a cursor moves through its graph: made for the graph's shape, fed
//! each finished turn, it takes the transitions whose conditions hold,
//! settles joins (all, any, all that can arrive) and counts loops. Pure
//! bookkeeping, no actors: the run's supervisor feeds it and asks it what
//! to start.

use std::borrow::Cow;
use std::sync::Arc;

use super::cursor::{Cursor, EdgeState};
use super::model::{Graph, Join};
use crate::message::Message;
use crate::state::StateSnapshot;

/// A loop went round more often than its limit allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LoopLimitExceeded {
    /// The step the loop returns to.
    pub(crate) step: String,
    /// The loop's limit.
    pub(crate) limit: u32,
}

impl Cursor {
    /// A cursor for graph `g`, with nothing activated yet.
    pub(crate) fn new(g: &Graph) -> Self {
        let n = g.names.len();
        Cursor {
            next: Vec::new(),
            in_next: vec![false; n],
            edges: vec![EdgeState::Pending; g.edges.len()],
            fired: vec![0; n],
            resolved: vec![0; n],
            any_done: vec![false; n],
            loops: vec![0; g.edges.len()],
            superstep: 0,
        }
    }

    /// Whether this cursor was made for a graph of this shape: every
    /// per-node and per-edge table has the graph's length, and the nodes
    /// waiting to run are the graph's and exactly those marked as waiting.
    pub(crate) fn fits(&self, g: &Graph) -> bool {
        let (nodes, edges) = (g.names.len(), g.edges.len());
        self.in_next.len() == nodes
            && self.fired.len() == nodes
            && self.resolved.len() == nodes
            && self.any_done.len() == nodes
            && self.edges.len() == edges
            && self.loops.len() == edges
            && self.next.iter().all(|&i| i < nodes && self.in_next[i])
            && self.in_next.iter().filter(|&&waiting| waiting).count() == self.next.len()
    }

    /// Node `x` finished a turn that produced `messages`, the run's state
    /// then being `state`: takes the transitions whose conditions hold and
    /// writes their indexes to `taken` (cleared first: a run keeps one
    /// buffer for every turn). On a switch node only the first conditional
    /// transition that holds is taken.
    pub(crate) fn finished_into(
        &mut self,
        g: &Graph,
        x: usize,
        messages: &[Arc<Message>],
        selected: Option<&[String]>,
        state: &StateSnapshot,
        taken: &mut Vec<usize>,
    ) -> Result<(), LoopLimitExceeded> {
        let name = &g.names[x];
        taken.clear();
        let mut conditional_taken = false;
        for &e in &g.out[x] {
            let c = &g.edges[e].condition;
            if !c.is_otherwise() && c.evaluate_with_state(name, messages, selected, state) {
                taken.push(e);
                conditional_taken |= !c.is_always();
                if g.first_match[x] && !c.is_always() {
                    break;
                }
            }
        }
        if !conditional_taken {
            taken.extend(
                g.out[x]
                    .iter()
                    .copied()
                    .filter(|&e| g.edges[e].condition.is_otherwise()),
            );
        }
        // Out-edges are few, but a fan-out node has as many as branches:
        // sort once so membership is a binary search, not a scan.
        // (`taken` follows the out-edges, which are mostly in order: then
        // it is its own sorted copy.)
        let taken_sorted: Cow<'_, [usize]> = if taken.is_sorted() {
            Cow::Borrowed(taken)
        } else {
            let mut copy = taken.clone();
            copy.sort_unstable();
            Cow::Owned(copy)
        };
        for &e in &g.out[x] {
            if taken_sorted.binary_search(&e).is_ok() {
                self.fire(g, e)?;
            } else if !g.edges[e].back {
                self.dead(g, e);
            }
        }
        Ok(())
    }

    fn fire(&mut self, g: &Graph, e: usize) -> Result<(), LoopLimitExceeded> {
        let edge = &g.edges[e];
        if edge.back {
            self.loops[e] += 1;
            if self.loops[e] > edge.limit {
                return Err(LoopLimitExceeded {
                    step: g.names[edge.to].clone(),
                    limit: edge.limit,
                });
            }
            self.reset(g, edge.to);
            self.activate(edge.to);
            return Ok(());
        }
        match self.edges[e] {
            EdgeState::Fired => return Ok(()),
            EdgeState::Dead => self.fired[edge.to] += 1,
            EdgeState::Pending => {
                self.fired[edge.to] += 1;
                self.resolved[edge.to] += 1;
            }
        }
        self.edges[e] = EdgeState::Fired;
        let mut doomed = Vec::new();
        self.check(g, edge.to, &mut doomed);
        self.kill(g, doomed);
        Ok(())
    }

    fn dead(&mut self, g: &Graph, e: usize) {
        self.kill(g, vec![e]);
    }

    /// Marks the `doomed` edges dead (the last first), and with them every
    /// edge a skipped node will not take: a branch that does not run kills
    /// the whole chain below it. A worklist, not recursion, so a long chain
    /// cannot overflow the stack; edges are handled in the order a
    /// depth-first recursion would handle them.
    fn kill(&mut self, g: &Graph, mut doomed: Vec<usize>) {
        while let Some(e) = doomed.pop() {
            if self.edges[e] != EdgeState::Pending {
                continue;
            }
            self.edges[e] = EdgeState::Dead;
            let to = g.edges[e].to;
            self.resolved[to] += 1;
            self.check(g, to, &mut doomed);
        }
    }

    /// Runs `y` if its join is satisfied. If the round closes without it,
    /// `y` is skipped: its forward out-edges join `doomed`.
    fn check(&mut self, g: &Graph, y: usize, doomed: &mut Vec<usize>) {
        let total = g.forward_in[y].len();
        let (fired, resolved) = (self.fired[y], self.resolved[y]);
        match g.joins[y] {
            Join::Any => {
                if fired > 0 && !self.any_done[y] {
                    self.any_done[y] = true;
                    self.activate(y);
                }
                if resolved == total {
                    let ran = self.any_done[y];
                    self.reset(g, y);
                    if !ran {
                        Self::skip(g, y, doomed);
                    }
                }
            }
            Join::All => {
                if fired == total {
                    self.reset(g, y);
                    self.activate(y);
                } else if resolved == total {
                    self.reset(g, y);
                    Self::skip(g, y, doomed);
                }
            }
            Join::AllThatCanArrive => {
                if resolved == total {
                    self.reset(g, y);
                    if fired > 0 {
                        self.activate(y);
                    } else {
                        Self::skip(g, y, doomed);
                    }
                }
            }
        }
    }

    /// Starts a new round of `y`'s join.
    fn reset(&mut self, g: &Graph, y: usize) {
        for &e in &g.forward_in[y] {
            self.edges[e] = EdgeState::Pending;
        }
        self.fired[y] = 0;
        self.resolved[y] = 0;
        self.any_done[y] = false;
    }

    /// `y` will not run in this round: nothing it would have sent arrives.
    /// Its forward out-edges are pushed last first, so that they are
    /// popped in order.
    fn skip(g: &Graph, y: usize, doomed: &mut Vec<usize>) {
        doomed.extend(g.out[y].iter().rev().filter(|&&e| !g.edges[e].back));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fn_agent::FnAgent;
    use crate::graph::Condition;
    use crate::thread::Thread;

    fn node(name: &str) -> FnAgent {
        FnAgent::sync(name, |_: &Thread| Ok(""))
    }

    fn says(text: &str) -> Vec<Arc<Message>> {
        vec![Arc::new(Message::text("x", text))]
    }

    /// Node `x` finished a turn that said `text`: the transitions taken.
    fn finish(
        c: &mut Cursor,
        g: &Graph,
        x: usize,
        text: &str,
    ) -> Result<Vec<usize>, LoopLimitExceeded> {
        let mut taken = Vec::new();
        c.finished_into(
            g,
            x,
            &says(text),
            None,
            &StateSnapshot::default(),
            &mut taken,
        )?;
        Ok(taken)
    }

    fn diamond(join: Join) -> Graph {
        Graph::builder()
            .add_agent(node("s"))
            .add_agent(node("a"))
            .add_agent(node("b"))
            .add_agent(node("j"))
            .add_transition("s", "a", Condition::text_contains("A"))
            .add_transition("s", "b", Condition::text_contains("B"))
            .add_edge("a", "j")
            .add_edge("b", "j")
            .join("j", join)
            .build()
            .unwrap()
    }

    #[test]
    fn all_that_can_arrive_skips_a_branch_that_will_not_come() {
        let g = diamond(Join::AllThatCanArrive);
        let mut c = Cursor::new(&g);
        finish(&mut c, &g, 0, "A only").unwrap();
        assert_eq!(c.take_next(), [1]);
        finish(&mut c, &g, 1, "done").unwrap();
        assert_eq!(c.take_next(), [3], "j runs: b's edge is dead, a's fired");
    }

    #[test]
    fn all_waits_for_both_and_any_for_one() {
        let g = diamond(Join::All);
        let mut c = Cursor::new(&g);
        finish(&mut c, &g, 0, "A and B").unwrap();
        assert_eq!(c.take_next(), [1, 2]);
        finish(&mut c, &g, 1, "").unwrap();
        assert!(!c.has_next());
        finish(&mut c, &g, 2, "").unwrap();
        assert_eq!(c.take_next(), [3]);

        let g = diamond(Join::Any);
        let mut c = Cursor::new(&g);
        finish(&mut c, &g, 0, "A and B").unwrap();
        c.take_next();
        finish(&mut c, &g, 1, "").unwrap();
        assert_eq!(c.take_next(), [3]);
        finish(&mut c, &g, 2, "").unwrap();
        assert!(!c.has_next(), "any runs once per round");
    }

    #[test]
    fn loops_count_and_fail_past_their_limit() {
        let g = Graph::builder()
            .add_agent(node("t"))
            .add_agent(node("qa"))
            .add_edge("t", "qa")
            .add_loop_with_limit("qa", "t", Condition::text_contains("REJECT"), 2)
            .build()
            .unwrap();
        let mut c = Cursor::new(&g);
        assert!(finish(&mut c, &g, 1, "REJECT").is_ok());
        assert!(finish(&mut c, &g, 1, "REJECT").is_ok());
        let err = finish(&mut c, &g, 1, "REJECT").unwrap_err();
        assert_eq!(
            err,
            LoopLimitExceeded {
                step: "t".into(),
                limit: 2
            }
        );
    }

    #[test]
    fn otherwise_fires_only_when_no_condition_did() {
        let g = Graph::builder()
            .add_agent(node("r"))
            .add_agent(node("yes"))
            .add_agent(node("no"))
            .add_transition("r", "yes", Condition::text_contains("Y"))
            .add_transition("r", "no", Condition::otherwise())
            .build()
            .unwrap();
        let mut c = Cursor::new(&g);
        finish(&mut c, &g, 0, "Y").unwrap();
        assert_eq!(c.take_next(), [1]);
        finish(&mut c, &g, 0, "n").unwrap();
        assert_eq!(c.take_next(), [2]);
    }

    #[test]
    fn a_switch_fires_only_its_first_matching_case() {
        let g = Graph::builder()
            .add_agent(node("r"))
            .add_agent(node("a"))
            .add_agent(node("b"))
            .add_agent(node("d"))
            .add_switch(
                "r",
                [
                    ("a".to_string(), Condition::text_contains("A")),
                    ("b".to_string(), Condition::text_contains("B")),
                ],
                Some("d".into()),
            )
            .build()
            .unwrap();
        let mut c = Cursor::new(&g);
        finish(&mut c, &g, 0, "A and B").unwrap();
        assert_eq!(c.take_next(), [1], "only the first true case");
        let mut c = Cursor::new(&g);
        finish(&mut c, &g, 0, "B").unwrap();
        assert_eq!(c.take_next(), [2]);
        let mut c = Cursor::new(&g);
        finish(&mut c, &g, 0, "none").unwrap();
        assert_eq!(c.take_next(), [3], "the default");
    }

    #[test]
    fn a_branch_not_taken_skips_a_long_chain_on_the_default_stack() {
        let n = 100_000;
        let mut b = Graph::builder()
            .add_agent(node("s"))
            .add_agent(node("other"));
        for i in 0..n {
            b = b.add_agent(node(&format!("c{i}")));
        }
        b = b
            .add_transition("s", "other", Condition::text_contains("B"))
            .add_transition("s", "c0", Condition::text_contains("A"))
            .add_edge(format!("c{}", n - 1), "other");
        for i in 1..n {
            b = b.add_edge(format!("c{}", i - 1), format!("c{i}"));
        }
        let g = b.build().unwrap();
        let mut c = Cursor::new(&g);
        finish(&mut c, &g, 0, "B only").unwrap();
        // "other" waits for what can still arrive: the dead chain's end
        // counts as resolved only once the whole chain is skipped.
        assert_eq!(c.take_next(), [1]);
    }
}
