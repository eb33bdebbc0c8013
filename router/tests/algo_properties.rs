//! The graph algorithms of `troupe_router::algo` against simple reference
//! implementations (fixpoints, transitive closure, a recursive walk) on
//! small random graphs — with successors that are not nodes mixed in.

use proptest::prelude::*;
use troupe_router::algo::{
    Adjacency, BackEdge, cycles, depth_first, reachable, strongly_connected_components,
};

/// Graphs of up to 10 nodes; successors range two past the last node.
fn graphs() -> impl Strategy<Value = Vec<Vec<usize>>> {
    (0usize..10)
        .prop_flat_map(|n| proptest::collection::vec(proptest::collection::vec(0..n + 2, 0..4), n))
}

fn graph_and_roots() -> impl Strategy<Value = (Vec<Vec<usize>>, Vec<usize>)> {
    graphs().prop_flat_map(|g| {
        let n = g.len();
        (Just(g), proptest::collection::vec(0..n + 2, 0..4))
    })
}

/// Reachability by fixpoint: mark successors of marked nodes until nothing
/// changes.
fn reference_reachable(g: &[Vec<usize>], roots: &[usize]) -> Vec<bool> {
    let n = g.len();
    let mut seen: Vec<bool> = (0..n).map(|v| roots.contains(&v)).collect();
    let mut changed = true;
    while changed {
        changed = false;
        for v in 0..n {
            if seen[v] {
                for &w in &g[v] {
                    if w < n && !seen[w] {
                        seen[w] = true;
                        changed = true;
                    }
                }
            }
        }
    }
    seen
}

/// `path[u][v]`: a path of one edge or more leads from `u` to `v`
/// (Floyd–Warshall's transitive closure).
fn closure(g: &[Vec<usize>]) -> Vec<Vec<bool>> {
    let n = g.len();
    let mut path = vec![vec![false; n]; n];
    for (u, succ) in g.iter().enumerate() {
        for &w in succ {
            if w < n {
                path[u][w] = true;
            }
        }
    }
    for k in 0..n {
        for u in 0..n {
            for v in 0..n {
                if path[u][k] && path[k][v] {
                    path[u][v] = true;
                }
            }
        }
    }
    path
}

fn same_component(path: &[Vec<bool>], u: usize, v: usize) -> bool {
    u == v || (path[u][v] && path[v][u])
}

/// The cycles as sets: nodes on a cycle, grouped by mutual reachability,
/// each sorted, ordered by their smallest node.
fn reference_cycles(g: &[Vec<usize>]) -> Vec<Vec<usize>> {
    let path = closure(g);
    let n = g.len();
    let mut found: Vec<Vec<usize>> = Vec::new();
    for v in 0..n {
        if !path[v][v] || found.iter().any(|c| c.contains(&v)) {
            continue;
        }
        found.push((0..n).filter(|&u| same_component(&path, u, v)).collect());
    }
    found
}

/// The recursive depth-first walk the iterative one must match.
fn reference_walk(g: &[Vec<usize>], roots: &[usize]) -> (Vec<bool>, Vec<BackEdge>) {
    fn visit(
        g: &[Vec<usize>],
        v: usize,
        reached: &mut [bool],
        on_path: &mut [bool],
        back: &mut Vec<BackEdge>,
    ) {
        reached[v] = true;
        on_path[v] = true;
        for (index, &to) in g[v].iter().enumerate() {
            if to >= g.len() {
                continue;
            }
            if on_path[to] {
                back.push(BackEdge { from: v, index, to });
            } else if !reached[to] {
                visit(g, to, reached, on_path, back);
            }
        }
        on_path[v] = false;
    }
    let n = g.len();
    let (mut reached, mut on_path, mut back) = (vec![false; n], vec![false; n], Vec::new());
    for &r in roots {
        if r < n && !reached[r] {
            visit(g, r, &mut reached, &mut on_path, &mut back);
        }
    }
    (reached, back)
}

proptest! {
    #[test]
    fn reachability_matches_the_fixpoint((g, roots) in graph_and_roots()) {
        prop_assert_eq!(reachable(&g, roots.iter().copied()), reference_reachable(&g, &roots));
    }

    #[test]
    fn components_are_the_mutual_reachability_classes(g in graphs()) {
        let path = closure(&g);
        let c = strongly_connected_components(&g);
        let n = g.len();
        prop_assert_eq!(c.iter().map(<[usize]>::len).sum::<usize>(), n);
        for u in 0..n {
            let cu = c.component_of(u).unwrap();
            prop_assert!(c.members(cu).contains(&u));
            prop_assert!(c.members(cu).windows(2).all(|w| w[0] < w[1]), "members sorted");
            for v in 0..n {
                prop_assert_eq!(cu == c.component_of(v).unwrap(), same_component(&path, u, v));
            }
        }
    }

    #[test]
    fn components_come_in_reverse_topological_order(g in graphs()) {
        let c = strongly_connected_components(&g);
        for u in 0..g.len() {
            for &v in g.successors(u) {
                if v < g.len() {
                    prop_assert!(c.component_of(v).unwrap() <= c.component_of(u).unwrap());
                }
            }
        }
    }

    #[test]
    fn cycles_are_the_components_with_a_cycle(g in graphs()) {
        prop_assert_eq!(cycles(&g), reference_cycles(&g));
    }

    #[test]
    fn the_walk_matches_the_recursive_one((g, roots) in graph_and_roots()) {
        let walk = depth_first(&g, roots.iter().copied());
        let (reached, back) = reference_walk(&g, &roots);
        prop_assert_eq!(&walk.reached, &reached);
        prop_assert_eq!(&walk.back_edges, &back);
        prop_assert_eq!(walk.reached, reference_reachable(&g, &roots));
    }

    #[test]
    fn without_its_back_edges_the_reached_graph_has_no_cycle((g, roots) in graph_and_roots()) {
        let walk = depth_first(&g, roots.iter().copied());
        let forward: Vec<Vec<usize>> = g
            .iter()
            .enumerate()
            .map(|(v, succ)| {
                if !walk.reached[v] {
                    return Vec::new();
                }
                succ.iter()
                    .enumerate()
                    .filter(|&(index, _)| !walk.back_edges.iter().any(|e| e.from == v && e.index == index))
                    .map(|(_, &w)| w)
                    .collect()
            })
            .collect();
        prop_assert!(reference_cycles(&forward).is_empty());
    }
}
