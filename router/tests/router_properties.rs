//! Property tests: the router's precomputed answers equal a brute-force
//! evaluation of the routing rules, and validation flags exactly what the
//! rules say it should.

use std::collections::BTreeSet;
use std::time::Duration;

use proptest::prelude::*;
use troupe_router::{InboxConfig, RouteProblem, RouteWarning, Router, RouterBuilder, Source};

#[derive(Debug, Clone)]
struct Spec {
    n: usize,
    routes: Vec<(Option<Vec<usize>>, usize, Option<InboxConfig>)>,
    outputs: Vec<usize>,
}

/// Sender `n` stands for "user".
fn name(n: usize, i: usize) -> String {
    if i == n {
        Router::USER.to_owned()
    } else {
        format!("p{i}")
    }
}

fn spec() -> impl Strategy<Value = Spec> {
    (1usize..7).prop_flat_map(|n| {
        let source = proptest::option::of(proptest::collection::vec(0..=n, 1..4));
        // Values that never conflict: each option has one non-default value.
        let config = proptest::option::of((1usize..3, any::<bool>()).prop_map(|(batch, ttl)| {
            let config = InboxConfig::new().batch_size(batch);
            if ttl {
                config.ttl(Duration::from_secs(60))
            } else {
                config
            }
        }));
        let routes = proptest::collection::vec((source, 0..n, config), 0..10);
        let outputs = proptest::collection::vec(0..n, 0..3);
        (Just(n), routes, outputs).prop_map(|(n, routes, outputs)| Spec { n, routes, outputs })
    })
}

fn builder(spec: &Spec) -> RouterBuilder {
    let mut builder = Router::builder();
    for (source, target, config) in &spec.routes {
        let source = match source {
            None => Source::from(Router::ANY),
            Some(names) => Source::Many(names.iter().map(|&i| name(spec.n, i)).collect()),
        };
        let target = name(spec.n, *target);
        builder = match config {
            Some(config) => builder.add_route_with(source, target, config.clone()),
            None => builder.add_route(source, target),
        };
    }
    for &o in &spec.outputs {
        builder = builder.output(name(spec.n, o));
    }
    builder
}

fn participants(n: usize) -> Vec<String> {
    (0..n).map(|i| name(n, i)).collect()
}

/// The rules, evaluated literally.
fn model_accepts(spec: &Spec, target: usize, sender: &str) -> bool {
    let routes: Vec<_> = spec.routes.iter().filter(|r| r.1 == target).collect();
    let own = name(spec.n, target) == sender;
    if routes.is_empty() {
        return !own;
    }
    let named = routes.iter().any(|(source, _, _)| {
        source
            .as_ref()
            .is_some_and(|names| names.iter().any(|&i| name(spec.n, i) == sender))
    });
    let any = routes.iter().any(|(source, _, _)| source.is_none());
    named || (any && !own)
}

fn model_targets(spec: &Spec, sender: &str) -> Vec<usize> {
    (0..spec.n)
        .filter(|&t| model_accepts(spec, t, sender))
        .collect()
}

/// reach[i][j]: a path of one or more edges leads from participant i to j.
// Floyd–Warshall reads clearest with indexes.
#[allow(clippy::needless_range_loop)]
fn closure(spec: &Spec) -> Vec<Vec<bool>> {
    let n = spec.n;
    let mut reach: Vec<Vec<bool>> = (0..n)
        .map(|i| {
            (0..n)
                .map(|j| model_accepts(spec, j, &name(n, i)))
                .collect()
        })
        .collect();
    for k in 0..n {
        for i in 0..n {
            for j in 0..n {
                if reach[i][k] && reach[k][j] {
                    reach[i][j] = true;
                }
            }
        }
    }
    reach
}

#[allow(clippy::needless_range_loop)]
fn model_cycles(spec: &Spec) -> Vec<Vec<String>> {
    let n = spec.n;
    let reach = closure(spec);
    let mut seen = BTreeSet::new();
    let mut cycles = Vec::new();
    for i in 0..n {
        if !reach[i][i] || seen.contains(&i) {
            continue;
        }
        let members: Vec<usize> = (0..n).filter(|&j| reach[i][j] && reach[j][i]).collect();
        seen.extend(members.iter().copied());
        cycles.push(members.iter().map(|&j| name(n, j)).collect());
    }
    cycles
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Declaring every participant an entry and an output makes any routes
    /// valid, so the lookups can be compared on every case.
    #[test]
    fn targets_match_the_rules(spec in spec()) {
        let mut b = builder(&spec);
        for p in participants(spec.n) {
            b = b.entry(p.clone()).output(p);
        }
        let router = b.build(&participants(spec.n)).map_err(|e| TestCaseError::fail(e.to_string()))?;
        let mut senders = participants(spec.n);
        senders.push(Router::USER.to_owned());
        senders.push("stranger".to_owned());
        for sender in &senders {
            let expected = model_targets(&spec, sender);
            prop_assert_eq!(router.targets(sender), expected.as_slice(), "sender {}", sender);
            for t in 0..spec.n {
                prop_assert_eq!(router.accepts(t, sender), model_accepts(&spec, t, sender));
            }
        }
        let warnings: Vec<Vec<String>> = router
            .warnings()
            .iter()
            .filter_map(|w| match w {
                RouteWarning::Cycle { agents }
                | RouteWarning::CycleThroughDefault { agents, .. } => Some(agents.clone()),
                _ => None,
            })
            .collect();
        prop_assert_eq!(warnings, model_cycles(&spec));
    }

    #[test]
    fn validation_matches_the_rules(spec in spec()) {
        let n = spec.n;
        // Reachable: accepted from "user", directly or through other participants.
        let reach = closure(&spec);
        let from_user: Vec<bool> = (0..n)
            .map(|j| model_accepts(&spec, j, Router::USER) || (0..n).any(|i| model_accepts(&spec, i, Router::USER) && reach[i][j]))
            .collect();
        let mut expected = Vec::new();
        for (i, &reached) in from_user.iter().enumerate() {
            if !reached {
                expected.push(RouteProblem::Unreachable { agent: name(n, i) });
            }
        }
        for i in 0..n {
            let others = (0..n).any(|t| t != i && model_accepts(&spec, t, &name(n, i)));
            if !others && !spec.outputs.contains(&i) {
                expected.push(RouteProblem::ReachesNobody { agent: name(n, i) });
            }
        }
        match builder(&spec).build(&participants(n)) {
            Ok(router) => {
                prop_assert!(expected.is_empty(), "missed {:?}", expected);
                let names = participants(n);
                prop_assert_eq!(router.participants(), names.as_slice());
            }
            Err(err) => prop_assert_eq!(err.problems, expected),
        }
    }
}
