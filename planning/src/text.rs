//! [`PlanGraph`]: the text dependency graph of a plan, parsed and checked.
//!
//! One path per line, steps separated by `->`; inside a position, `,`
//! separates alternatives, and a line stands for every path of the
//! Cartesian product of its positions (`A -> B, C -> D` is A→B→D and
//! A→C→D). Paths that share steps share nodes: a step id is one node
//! however many lines name it. Blank lines are skipped (models put them
//! around their answers); anything else that cannot be a DAG is an error
//! with its line number.

use std::collections::HashMap;
use std::fmt;

use troupe_runtime::message::USER;

use crate::error::PlanError;

/// Separates the steps of a path.
const STEP_SEP: &str = "->";
/// Separates the alternatives of one position.
const ALT_SEP: char = ',';

/// The dependency graph of a text plan: step ids (in order of first
/// appearance) and the edges between them, each remembered with the line
/// that gave it. Acyclic by construction.
///
/// ```
/// use troupe_planning::PlanGraph;
///
/// let g = PlanGraph::parse("SUGGEST_RECIPE_STARBUCKS -> ORDER_STARBUCKS\nORDER_MCDONALDS").unwrap();
/// assert_eq!(g.ids(), ["SUGGEST_RECIPE_STARBUCKS", "ORDER_STARBUCKS", "ORDER_MCDONALDS"]);
/// assert_eq!(g.starts(), ["SUGGEST_RECIPE_STARBUCKS", "ORDER_MCDONALDS"]);
/// assert_eq!(g.edges().collect::<Vec<_>>(), [("SUGGEST_RECIPE_STARBUCKS", "ORDER_STARBUCKS")]);
///
/// let err = PlanGraph::parse("A -> B\nB -> A").unwrap_err();
/// assert_eq!(err.to_string(), "line 2: B -> A -> B is a cycle; a plan must not loop");
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PlanGraph {
    ids: Vec<String>,
    first_line: Vec<usize>,
    edges: Vec<(usize, usize)>,
    edge_line: Vec<usize>,
    successors: Vec<Vec<usize>>,
}

impl PlanGraph {
    /// Parses a text plan (see the module documentation for the syntax).
    pub fn parse(text: &str) -> Result<Self, PlanError> {
        let mut g = Builder::default();
        for (i, raw) in text.lines().enumerate() {
            let line = i + 1;
            if raw.trim().is_empty() {
                continue;
            }
            g.line(line, raw)?;
        }
        if g.graph.ids.is_empty() {
            return Err(PlanError::Empty);
        }
        Ok(g.graph)
    }

    /// The step ids, in order of first appearance.
    pub fn ids(&self) -> &[String] {
        &self.ids
    }

    /// The line that first named `id`.
    pub fn line_of(&self, id: &str) -> Option<usize> {
        self.index_of(id).map(|i| self.first_line[i])
    }

    /// The edges `(from, to)`, in the order they were given.
    pub fn edges(&self) -> impl Iterator<Item = (&str, &str)> {
        self.edges
            .iter()
            .map(|&(a, b)| (self.ids[a].as_str(), self.ids[b].as_str()))
    }

    /// The steps nothing comes before: where the plan starts.
    pub fn starts(&self) -> Vec<&str> {
        let mut has_in = vec![false; self.ids.len()];
        for &(_, b) in &self.edges {
            has_in[b] = true;
        }
        self.ids
            .iter()
            .zip(has_in)
            .filter(|(_, has)| !has)
            .map(|(id, _)| id.as_str())
            .collect()
    }

    /// The steps that come directly before `id`.
    pub fn predecessors(&self, id: &str) -> Vec<&str> {
        let Some(i) = self.index_of(id) else {
            return Vec::new();
        };
        self.edges
            .iter()
            .filter(|&&(_, b)| b == i)
            .map(|&(a, _)| self.ids[a].as_str())
            .collect()
    }

    pub(crate) fn index_of(&self, id: &str) -> Option<usize> {
        self.ids.iter().position(|x| x == id)
    }

    pub(crate) fn edge_indexes(&self) -> &[(usize, usize)] {
        &self.edges
    }
}

/// Writes the graph back as text: one line per edge, and a line for each
/// step that has none. Parsing the text gives the same graph.
impl fmt::Display for PlanGraph {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_graph(f, &self.ids, &self.edges)
    }
}

/// Writes ids and edges as text plan lines (shared with [`Plan`](crate::Plan)).
pub(crate) fn write_graph(
    f: &mut impl fmt::Write,
    ids: &[String],
    edges: &[(usize, usize)],
) -> fmt::Result {
    let mut touched = vec![false; ids.len()];
    let mut lines = Vec::new();
    for &(a, b) in edges {
        touched[a] = true;
        touched[b] = true;
        lines.push(format!("{} {STEP_SEP} {}", ids[a], ids[b]));
    }
    // Steps without edges first (in plan order), then one line per edge.
    let mut out: Vec<String> = ids
        .iter()
        .zip(&touched)
        .filter(|(_, t)| !**t)
        .map(|(id, _)| id.clone())
        .collect();
    out.extend(lines);
    f.write_str(&out.join("\n"))
}

#[derive(Default)]
struct Builder {
    graph: PlanGraph,
    index: HashMap<String, usize>,
    edge_index: HashMap<(usize, usize), usize>,
}

impl Builder {
    fn line(&mut self, line: usize, raw: &str) -> Result<(), PlanError> {
        let positions = positions(line, raw)?;
        let mut added = false;
        for alternatives in &positions {
            for id in alternatives {
                added |= self.node(id, line);
            }
        }
        // Every combination of adjacent positions is an edge of some path of
        // the product, so the product's edges need not be enumerated path by
        // path (which would grow exponentially with the line).
        let mut first_repeat = None;
        for pair in positions.windows(2) {
            for from in &pair[0] {
                for to in &pair[1] {
                    let (a, b) = (self.index[from.as_str()], self.index[to.as_str()]);
                    match self.edge_index.get(&(a, b)) {
                        Some(&e) => {
                            first_repeat.get_or_insert((a, b, self.graph.edge_line[e]));
                        }
                        None => {
                            self.edge(a, b, line)?;
                            added = true;
                        }
                    }
                }
            }
        }
        if added {
            return Ok(());
        }
        let ids = &self.graph.ids;
        Err(match first_repeat {
            Some((a, b, first_line)) => PlanError::DuplicateEdge {
                line,
                from: ids[a].clone(),
                to: ids[b].clone(),
                first_line,
            },
            None => {
                // A line of one position that added no node: its ids were all
                // named before.
                let id = positions
                    .first()
                    .and_then(|p| p.first())
                    .cloned()
                    .unwrap_or_default();
                let first_line = self.graph.line_of(&id).unwrap_or(line);
                PlanError::DuplicateStep {
                    line,
                    id,
                    first_line,
                }
            }
        })
    }

    /// Registers `id`; returns whether it is new.
    fn node(&mut self, id: &str, line: usize) -> bool {
        if self.index.contains_key(id) {
            return false;
        }
        let g = &mut self.graph;
        self.index.insert(id.to_string(), g.ids.len());
        g.ids.push(id.to_string());
        g.first_line.push(line);
        g.successors.push(Vec::new());
        true
    }

    fn edge(&mut self, a: usize, b: usize, line: usize) -> Result<(), PlanError> {
        if let Some(back) = self.path(b, a) {
            // Written from the new edge's source, as the line reads:
            // a -> b -> ... -> a.
            let cycle = std::iter::once(a)
                .chain(back)
                .map(|i| self.graph.ids[i].clone())
                .collect();
            return Err(PlanError::Cycle { line, cycle });
        }
        let g = &mut self.graph;
        self.edge_index.insert((a, b), g.edges.len());
        g.edges.push((a, b));
        g.edge_line.push(line);
        g.successors[a].push(b);
        Ok(())
    }

    /// A path from `from` to `to` along existing edges, if there is one.
    fn path(&self, from: usize, to: usize) -> Option<Vec<usize>> {
        if from == to {
            return Some(vec![from]);
        }
        let n = self.graph.ids.len();
        let mut parent = vec![usize::MAX; n];
        let mut seen = vec![false; n];
        let mut stack = vec![from];
        seen[from] = true;
        while let Some(x) = stack.pop() {
            for &y in &self.graph.successors[x] {
                if seen[y] {
                    continue;
                }
                seen[y] = true;
                parent[y] = x;
                if y == to {
                    let mut path = vec![to];
                    let mut at = to;
                    while at != from {
                        at = parent[at];
                        path.push(at);
                    }
                    path.reverse();
                    return Some(path);
                }
                stack.push(y);
            }
        }
        None
    }
}

/// Splits a line into its positions and their alternatives, checking every
/// id.
fn positions(line: usize, raw: &str) -> Result<Vec<Vec<String>>, PlanError> {
    let mut out = Vec::new();
    for (p, part) in raw.split(STEP_SEP).enumerate() {
        let position = p + 1;
        let mut alternatives: Vec<String> = Vec::new();
        for alt in part.split(ALT_SEP) {
            let id = alt.trim();
            if id.is_empty() {
                return Err(PlanError::EmptyStep { line, position });
            }
            if id.chars().any(|c| c.is_whitespace() || c == '/') {
                return Err(PlanError::InvalidId {
                    line,
                    id: id.to_string(),
                });
            }
            if id == USER {
                return Err(PlanError::ReservedId {
                    line,
                    id: id.to_string(),
                });
            }
            if alternatives.iter().any(|a| a == id) {
                return Err(PlanError::DuplicateAlternative {
                    line,
                    position,
                    id: id.to_string(),
                });
            }
            alternatives.push(id.to_string());
        }
        out.push(alternatives);
    }
    Ok(out)
}
