//! Unit tests of [`Router`] and [`RouterBuilder`]: the routing rules,
//! validation problems and warnings, option merging, entries and lookups.

use super::*;
use crate::config::{Overflow, SenderFilter};
use crate::error::InboxConfigError;
use crate::validation::{AgentRole, RouteProblem};
use std::time::{Duration, SystemTime};

struct Note(&'static str);

impl Envelope for Note {
    fn sender(&self) -> &str {
        self.0
    }
    fn created_at(&self) -> SystemTime {
        SystemTime::UNIX_EPOCH
    }
}

fn build(builder: RouterBuilder, participants: &[&str]) -> Router {
    builder.build(participants).expect("valid router")
}

fn problems(builder: RouterBuilder, participants: &[&str]) -> Vec<RouteProblem> {
    builder
        .build(participants)
        .expect_err("invalid router")
        .problems
}

fn text(builder: RouterBuilder, participants: &[&str]) -> String {
    builder
        .build(participants)
        .expect_err("invalid router")
        .to_string()
}

#[test]
fn default_is_a_broadcast_to_everyone_else() {
    let router = build(Router::builder(), &["a", "b", "c"]);
    assert_eq!(router.targets("user"), [0, 1, 2]);
    assert_eq!(router.targets("a"), [1, 2]);
    assert_eq!(router.targets("b"), [0, 2]);
    assert_eq!(router.targets("c"), [0, 1]);
    assert!(!router.accepts(0, "a"));
    assert!(router.accepts(0, "b"));
    assert_eq!(router.inbox_config(1), Some(&InboxConfig::new()));
}

#[test]
fn a_routed_target_accepts_only_its_sources() {
    let router = build(
        Router::builder()
            .add_route("user", "a")
            .add_route("a", "b")
            .output("b"),
        &["a", "b"],
    );
    assert_eq!(router.targets("user"), [0]);
    assert_eq!(router.targets("a"), [1]);
    assert_eq!(router.targets("b"), [] as [usize; 0]);
    assert_eq!(
        router.inbox_config(1).map(|c| &c.senders),
        Some(&SenderFilter::only(["a"]))
    );
}

#[test]
fn multi_source_routes_union() {
    let router = build(
        Router::builder()
            .add_route(["user", "a"], "c")
            .add_route("b", "c")
            .add_route(vec!["user"], "a")
            .add_route("user", "b")
            .output("c"),
        &["a", "b", "c"],
    );
    assert!(router.accepts(2, "user"));
    assert!(router.accepts(2, "a"));
    assert!(router.accepts(2, "b"));
    assert!(!router.accepts(2, "c"));
    assert_eq!(router.targets("a"), [2]);
    assert_eq!(router.targets("b"), [2]);
    assert_eq!(router.targets("user"), [0, 1, 2]);
}

#[test]
fn any_accepts_every_sender_but_itself() {
    let router = build(
        Router::builder()
            .add_route("user", "a")
            .add_route("a", "b")
            .add_route(Router::ANY, "log")
            .output("log")
            .output("b"),
        &["a", "b", "log"],
    );
    assert_eq!(router.targets("a"), [1, 2]);
    assert_eq!(router.targets("b"), [2]);
    assert_eq!(router.targets("log"), [] as [usize; 0]);
    assert!(router.accepts(2, "stranger"));
    // Unknown senders reach exactly the inboxes that accept anyone.
    assert_eq!(router.targets("stranger"), [2]);
}

#[test]
fn a_self_route_must_be_explicit() {
    let router = build(
        Router::builder()
            .add_route(Router::ANY, "a")
            .add_route("a", "a")
            .output("a"),
        &["a", "b"],
    );
    assert_eq!(router.targets("a"), [0, 1]);
    assert!(router.accepts(0, "a"));
    assert!(!router.accepts(1, "b"));
    // `b` is no route's target: it hears `a`, and `a` hears anyone.
    assert_eq!(
        router.warnings(),
        [
            RouteWarning::HearsEveryone { agent: "b".into() },
            RouteWarning::CycleThroughDefault {
                agents: vec!["a".into(), "b".into()],
                through: vec!["b".into()],
            }
        ]
    );
}

#[test]
fn self_route_alone_is_a_warning_and_reaches_nobody_else() {
    let router = build(
        Router::builder()
            .add_route(["user", "a"], "a")
            .add_route("a", "b")
            .output("b"),
        &["a", "b"],
    );
    assert_eq!(router.targets("a"), [0, 1]);
    let warnings = router.warnings();
    assert_eq!(
        warnings,
        [RouteWarning::Cycle {
            agents: vec!["a".into()]
        }]
    );
    assert!(warnings[0].to_string().contains("\"a\" routes to itself"));

    let problems = problems(Router::builder().add_route(["user", "a"], "a"), &["a"]);
    assert_eq!(
        problems,
        [RouteProblem::ReachesNobody { agent: "a".into() }]
    );
}

#[test]
fn broadcast_and_chains() {
    let router = build(Router::builder(), &["a", "b", "c"]);
    // With no route, everyone hears everyone: the default's cycle.
    assert_eq!(
        router.warnings(),
        [RouteWarning::CycleThroughDefault {
            agents: vec!["a".into(), "b".into(), "c".into()],
            through: vec!["a".into(), "b".into(), "c".into()],
        }]
    );
    let chain = build(
        Router::builder()
            .add_route("user", "a")
            .add_route("a", "b")
            .add_route("b", "c")
            .output("c"),
        &["a", "b", "c"],
    );
    assert!(chain.warnings().is_empty());
    assert_eq!(chain.outputs(), ["c"]);
}

#[test]
fn cycle_warnings_name_their_agents_in_participant_order() {
    let router = build(
        Router::builder()
            .add_route(["user", "c"], "a")
            .add_route("a", "b")
            .add_route("b", "c")
            .add_route("b", "d")
            .add_route("d", "e")
            .add_route("e", "d")
            .output("d"),
        &["a", "b", "c", "d", "e"],
    );
    let warnings: Vec<String> = router.warnings().iter().map(|w| w.to_string()).collect();
    assert_eq!(
        warnings,
        [
            "routes among \"a\", \"b\", \"c\" form a cycle: messages can cascade without end",
            "routes among \"d\", \"e\" form a cycle: messages can cascade without end",
        ]
    );
}

#[test]
fn unknown_agents_are_named_with_their_role() {
    let problems = problems(
        Router::builder()
            .add_route("ghost", "a")
            .add_route("user", "phantom")
            .add_route("ghost", "b")
            .output("spectre"),
        &["a", "b"],
    );
    let unknown: Vec<_> = problems
        .iter()
        .filter_map(|p| match p {
            RouteProblem::UnknownAgent { name, role } => Some((name.as_str(), *role)),
            _ => None,
        })
        .collect();
    assert_eq!(
        unknown,
        [
            ("ghost", AgentRole::Source),
            ("phantom", AgentRole::Target),
            ("spectre", AgentRole::Output),
        ]
    );
    let text = problems
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("\n");
    assert!(
        text.contains("unknown agent \"ghost\" as a route source"),
        "{text}"
    );
    assert!(
        text.contains("unknown agent \"phantom\" as a route target"),
        "{text}"
    );
    assert!(
        text.contains("unknown agent \"spectre\" declared as output"),
        "{text}"
    );
}

#[test]
fn unreachable_agents_are_errors() {
    let text = text(
        Router::builder()
            .add_route("user", "a")
            .add_route("b", "c")
            .add_route("c", "b")
            .output("a"),
        &["a", "b", "c"],
    );
    assert!(text.contains("agent \"b\" is unreachable"), "{text}");
    assert!(text.contains("agent \"c\" is unreachable"), "{text}");
    assert!(!text.contains("\"a\" is unreachable"), "{text}");
}

#[test]
fn agents_reaching_nobody_are_errors_with_a_hint() {
    let err = Router::builder()
        .add_route("user", "a")
        .add_route("user", "b")
        .build(&["a", "b"])
        .expect_err("a and b are dead ends");
    assert_eq!(
        err.problems,
        [
            RouteProblem::ReachesNobody { agent: "a".into() },
            RouteProblem::ReachesNobody { agent: "b".into() },
        ]
    );
    let text = err.to_string();
    assert!(text.contains("agent \"a\" reaches nobody"), "{text}");
    assert!(text.contains(".output(\"a\")"), "{text}");
    assert!(
        Router::builder()
            .add_route("user", "a")
            .add_route("user", "b")
            .output("a")
            .output("b")
            .build(&["a", "b"])
            .is_ok()
    );
}

#[test]
fn participant_names_are_checked() {
    let problems = problems(Router::builder(), &["a", "", "user", "a", "b", "a"]);
    assert_eq!(
        problems,
        [
            RouteProblem::EmptyName { index: 1 },
            RouteProblem::ReservedName {
                name: "user".into()
            },
            RouteProblem::DuplicateParticipant { name: "a".into() },
        ]
    );
    let text = text(Router::builder(), &["a", "a", "user"]);
    assert!(
        text.contains("participant \"a\" is listed more than once"),
        "{text}"
    );
    assert!(text.contains("\"user\" is reserved"), "{text}");
}

#[test]
fn invalid_inbox_options_name_the_target() {
    let err = Router::builder()
        .add_route_with("user", "a", InboxConfig::new().batch_size(0))
        .inbox("b", InboxConfig::new().batch_size(4).capacity(2))
        .build(&["a", "b"])
        .expect_err("invalid options");
    assert!(err.problems.contains(&RouteProblem::InvalidConfig {
        target: "a".into(),
        reason: InboxConfigError::ZeroBatchSize,
    }));
    assert!(err.problems.contains(&RouteProblem::InvalidConfig {
        target: "b".into(),
        reason: InboxConfigError::CapacityBelowBatchSize {
            capacity: 2,
            batch_size: 4
        },
    }));
    let text = err.to_string();
    assert!(text.contains("invalid inbox options for \"a\""), "{text}");
    assert!(text.contains("invalid inbox options for \"b\""), "{text}");
}

#[test]
fn options_merge_across_routes_and_conflicts_are_errors() {
    let router = build(
        Router::builder()
            .add_route_with("user", "a", InboxConfig::new().batch_size(3))
            .add_route_with("b", "a", InboxConfig::new().ttl(Duration::from_secs(60)))
            .add_route_with("b", "a", InboxConfig::new().batch_size(3))
            .inbox(
                "a",
                InboxConfig::new().capacity(9).overflow(Overflow::Reject),
            )
            .output("a"),
        &["a", "b"],
    );
    assert_eq!(
        router.inbox_config(0),
        Some(&InboxConfig {
            senders: SenderFilter::only(["user", "b"]),
            batch_size: 3,
            ttl: Some(Duration::from_secs(60)),
            capacity: Some(9),
            overflow: Overflow::Reject,
            max_wait: None,
        })
    );

    let err = Router::builder()
        .add_route_with("user", "a", InboxConfig::new().batch_size(3))
        .add_route_with("b", "a", InboxConfig::new().batch_size(5))
        .add_route_with("b", "a", InboxConfig::new().batch_size(7))
        .inbox("a", InboxConfig::new().ttl_str("1h").expect("duration"))
        .inbox("a", InboxConfig::new().ttl_str("30m").expect("duration"))
        .output("a")
        .build(&["a", "b"])
        .expect_err("conflicts");
    assert_eq!(
        err.problems,
        [
            RouteProblem::ConflictingOptions {
                target: "a".into(),
                detail: "batch_size: 3 vs 5".into()
            },
            RouteProblem::ConflictingOptions {
                target: "a".into(),
                detail: "ttl: 1h vs 30m".into()
            },
        ]
    );
    assert!(
        err.to_string()
            .contains("conflicting inbox options for \"a\"")
    );
}

#[test]
fn inbox_options_alone_keep_the_broadcast() {
    let router = build(
        Router::builder().inbox("b", InboxConfig::new().batch_size(2)),
        &["a", "b"],
    );
    assert_eq!(router.targets("a"), [1]);
    assert_eq!(router.targets("user"), [0, 1]);
    assert_eq!(router.inbox_config(1).map(|c| c.batch_size), Some(2));
    let mut inbox = router.inbox::<Note>(1).expect("in range");
    assert_eq!(inbox.config().batch_size, 2);
    assert!(inbox.push(Note("a"), SystemTime::UNIX_EPOCH).is_accepted());
}

#[test]
fn config_senders_add_to_the_route() {
    let router = build(
        Router::builder()
            .add_route_with("user", "c", InboxConfig::new().senders("a"))
            .inbox("b", InboxConfig::new().senders(["user"]))
            .output("c"),
        &["a", "b", "c"],
    );
    assert!(router.accepts(2, "user") && router.accepts(2, "a"));
    assert!(!router.accepts(2, "b"));
    assert_eq!(router.targets("user"), [0, 1, 2]);
    assert_eq!(router.targets("a"), [2]);
    let problems = problems(
        Router::builder().inbox("b", InboxConfig::new().senders("nobody")),
        &["a", "b"],
    );
    assert!(problems.contains(&RouteProblem::UnknownAgent {
        name: "nobody".into(),
        role: AgentRole::Source
    }));
}

#[test]
fn every_problem_is_reported_at_once() {
    let err = Router::builder()
        .add_route("ghost", "a")
        .add_route("user", "nowhere")
        .add_route_with("user", "b", InboxConfig::new().capacity(0))
        .add_route("user", "c")
        .output("zzz")
        .build(&["a", "b", "c", "c", "user"])
        .expect_err("many problems");
    let names: Vec<&str> = err
        .problems
        .iter()
        .map(|p| match p {
            RouteProblem::ReservedName { .. } => "reserved",
            RouteProblem::DuplicateParticipant { .. } => "duplicate",
            RouteProblem::UnknownAgent { .. } => "unknown",
            RouteProblem::InvalidConfig { .. } => "config",
            RouteProblem::Unreachable { .. } => "unreachable",
            RouteProblem::ReachesNobody { .. } => "nobody",
            RouteProblem::ConflictingOptions { .. } => "conflict",
            RouteProblem::EmptyName { .. } => "empty",
        })
        .collect();
    assert_eq!(
        names,
        [
            "duplicate",
            "reserved",
            "unknown",
            "unknown",
            "unknown",
            "config",
            "unreachable",
            "nobody",
            "nobody",
            "nobody",
        ]
    );
    let text = err.to_string();
    assert!(text.starts_with("invalid router: 10 problems"), "{text}");
    for name in [
        "ghost", "nowhere", "zzz", "\"a\"", "\"b\"", "\"c\"", "\"user\"",
    ] {
        assert!(text.contains(name), "{name} missing from {text}");
    }
}

#[test]
fn entries_start_work_too() {
    let builder = Router::builder()
        .add_route("cron", "a")
        .add_route("a", "b")
        .output("b");
    let problems = problems(builder.clone(), &["a", "b"]);
    assert!(problems.contains(&RouteProblem::UnknownAgent {
        name: "cron".into(),
        role: AgentRole::Source
    }));

    let router = build(builder.entry("cron"), &["a", "b"]);
    assert_eq!(router.entries(), ["user", "cron"]);
    assert_eq!(router.targets("cron"), [0]);
    assert_eq!(router.targets("user"), [] as [usize; 0]);

    // A participant can be an entry: it starts work without a route in.
    let router = build(
        Router::builder()
            .add_route("b", "a")
            .add_route("a", "b")
            .add_route(["user"], "c")
            .entry("a")
            .output("c"),
        &["a", "b", "c"],
    );
    assert_eq!(router.entries(), ["user", "a"]);
    assert_eq!(router.index_of("a"), Some(0));
    assert_eq!(router.index_of("user"), None);
}

#[test]
fn lookups_and_introspection() {
    let router = build(
        Router::builder()
            .add_route("user", "b")
            .output("a")
            .output("a"),
        &["b", "a"],
    );
    assert_eq!(router.participants(), ["b", "a"]);
    assert_eq!(router.index_of("a"), Some(1));
    assert_eq!(router.index_of("zz"), None);
    assert_eq!(router.outputs(), ["a"]);
    assert_eq!(router.routes().len(), 1);
    assert_eq!(router.inbox_config(2), None);
    assert!(router.inbox::<Note>(2).is_none());
    assert!(!router.accepts(2, "a"));
    let shown = format!("{router:?}");
    assert!(shown.starts_with("Router {") && shown.contains("participants"));
}

#[test]
fn router_is_shareable() {
    fn assert_traits<T: Clone + fmt::Debug + Send + Sync + 'static>() {}
    assert_traits::<Router>();
    assert_traits::<RouterBuilder>();
}

/// An agent no route targets hears every sender: said, and a cycle it
/// makes is said to be the default's, not the routes'.
#[test]
fn the_default_of_hearing_everyone_is_warned_of_and_its_cycles_named() {
    // user→a, a→b, c→b, output b: `c` hears everyone, so b ⇄ c.
    let router = build(
        Router::builder()
            .add_route("user", "a")
            .add_route("a", "b")
            .add_route("c", "b")
            .output("b"),
        &["a", "b", "c"],
    );
    assert_eq!(
        router.warnings(),
        [
            RouteWarning::HearsEveryone { agent: "c".into() },
            RouteWarning::CycleThroughDefault {
                agents: vec!["b".into(), "c".into()],
                through: vec!["c".into()],
            }
        ]
    );
    let text = router.warnings()[1].to_string();
    assert!(text.contains("through the router's default"), "{text}");
    // user→a, a→b, a→c, outputs b and c: a chain, no cycle, no default.
    let router = build(
        Router::builder()
            .add_route("user", "a")
            .add_route("a", "b")
            .add_route("a", "c")
            .output("b")
            .output("c"),
        &["a", "b", "c"],
    );
    assert!(router.warnings().is_empty(), "{:?}", router.warnings());
    // No route at all: everyone hears everyone, as a group chat means.
    let open = build(Router::builder().output("b"), &["a", "b"]);
    assert!(
        !open
            .warnings()
            .iter()
            .any(|w| matches!(w, RouteWarning::HearsEveryone { .. })),
        "{:?}",
        open.warnings()
    );
}
