//! `router:`: participants given only without a graph, routes between
//! known participants, batch sizes and capacities that work together,
//! outputs that are participants.

use troupe_runtime::message::USER;

use super::checker::{Checker, Defined, at_least_one, expected_names};
use super::participants::{check_participants, ids};
use crate::refs::ref_id;
use crate::schema::{ConfigFile, RouteSpec, RouterSpec, WorkflowSpec};
use crate::tree::FieldPath;

/// Checks the router at `base` of workflow `w`, whose graph (if any) has
/// `participants`; without a graph, the router's members become the
/// workflow's participants.
pub(super) fn check_router(
    c: &mut Checker<'_>,
    names: &Defined,
    spec: &ConfigFile,
    base: &FieldPath,
    w: &WorkflowSpec,
    r: &RouterSpec,
    participants: &mut Vec<String>,
) {
    let path = base.key("router");
    let members: Vec<String> = match (&r.participants, w.graph.is_some()) {
        (Some(list), false) => {
            check_participants(c, names, spec, &path.key("participants"), list);
            ids(list)
        }
        (Some(_), true) => {
            c.error(
                &path.key("participants"),
                "with a graph, the participants are the graph's nodes",
                None,
            );
            participants.clone()
        }
        (None, true) => participants.clone(),
        (None, false) => r.route_members(|n| names.participant(n)),
    };
    if r.routes.is_empty() && !c.lost_part(&path.key("routes")) {
        c.error(
            &path,
            "a router with no routes",
            Some("`routes:` (`from`, `to`)".into()),
        );
    }
    // A graph (or steps or a plan, compiled into one) decides when a node runs, and
    // the node reads its whole inbox: batching cannot apply there.
    let in_graph = w.graph.is_some() || w.steps.is_some() || w.plan.is_some();
    // What an unknown name could have been: the members given, or with
    // members drawn from the routes, any agent or workflow.
    let pool: Vec<&str> = if r.participants.is_none() && w.graph.is_none() {
        names.participants()
    } else {
        members.iter().map(String::as_str).collect()
    };
    for (i, route) in r.routes.iter().enumerate() {
        let rp = path.key("routes").index(i);
        check_route(c, names, &rp, route, &members, &pool);
        if in_graph {
            refuse_batching(c, &rp, route);
        }
    }
    // A route dropped for an error of its own may have named an output.
    let lost_route = c.lost_part(&path.key("routes"));
    for (i, out) in r.output.iter().enumerate() {
        let accounted = members.contains(out)
            || names.broken.contains(out)
            || (lost_route && names.participant(out));
        if !accounted {
            let message = if names.participant(out) {
                format!("`{out}` is not a member of the router (no route names it)")
            } else {
                format!("unknown agent `{out}`")
            };
            c.value_error(
                &path.key("output").index(i),
                message,
                if members.is_empty() {
                    Some("an agent a route names".into())
                } else {
                    expected_names(members.iter().map(String::as_str).collect())
                },
            );
        }
    }
    if w.graph.is_none() {
        *participants = members;
    }
}

fn check_route(
    c: &mut Checker<'_>,
    names: &Defined,
    rp: &FieldPath,
    route: &RouteSpec,
    members: &[String],
    pool: &[&str],
) {
    for (j, from) in route.from.0.iter().enumerate() {
        if from != USER && from != "*" && !members.contains(from) && !names.broken.contains(from) {
            let fp = if route.from.0.len() == 1 {
                rp.key("from")
            } else {
                rp.key("from").index(j)
            };
            let mut known = pool.to_vec();
            known.extend([USER, "*"]);
            c.value_error(
                &fp,
                format!("unknown agent `{from}` in a route"),
                expected_names(known),
            );
        }
    }
    if !members.contains(&route.to) && !names.broken.contains(&route.to) {
        let expected = if route.to.contains('@') {
            Some(format!(
                "the participant's name alone, `{}` (`agent@node` goes in `participants`)",
                ref_id(&route.to)
            ))
        } else {
            expected_names(pool.to_vec())
        };
        c.value_error(
            &rp.key("to"),
            format!("unknown agent `{}` in a route", route.to),
            expected,
        );
    }
    if route.batch_size == Some(0) {
        at_least_one(c, &rp.key("batch_size"));
    }
    match (route.capacity, route.batch_size.unwrap_or(1)) {
        (Some(0), _) => at_least_one(c, &rp.key("capacity")),
        (Some(cap), batch) if cap < batch => c.value_error(
            &rp.key("capacity"),
            format!("capacity {cap} is below the batch size {batch}"),
            Some(format!("{batch} or more")),
        ),
        _ => {}
    }
}

/// `batch_size` and `max_wait` of a route in a workflow with a graph or
/// steps: refused, since the graph decides when its nodes run and each
/// turn reads the node's whole inbox (the runtime refuses them too).
fn refuse_batching(c: &mut Checker<'_>, rp: &FieldPath, route: &RouteSpec) {
    let why = "a graph node runs when the graph activates it and reads its whole inbox";
    if route.batch_size.is_some_and(|n| n > 1) {
        c.error(
            &rp.key("batch_size"),
            format!("`batch_size` cannot apply in a workflow with a graph or steps: {why}"),
            Some("no `batch_size` (or a router-only workflow)".into()),
        );
    }
    if route.max_wait.is_some() {
        c.error(
            &rp.key("max_wait"),
            format!("`max_wait` cannot apply in a workflow with a graph or steps: {why}"),
            Some("no `max_wait` (or a router-only workflow)".into()),
        );
    }
}
