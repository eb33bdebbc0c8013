//! A router section as a [`RouterBuilder`]: routes, their inboxes, and
//! the outputs.

use troupe_router::Source;
use troupe_runtime::{InboxConfig, RouterBuilder};

use crate::schema::{RouteSpec, RouterSpec};

/// The routes and outputs of `r`.
pub(super) fn router(r: &RouterSpec) -> RouterBuilder {
    let mut rb = RouterBuilder::default();
    for route in &r.routes {
        let from = &route.from.0;
        let source = if from.iter().any(|f| f == "*") {
            Source::Any
        } else if from.len() == 1 {
            Source::One(from[0].clone())
        } else {
            Source::Many(from.clone())
        };
        rb = match inbox(route) {
            Some(cfg) => rb.add_route_with(source, route.to.clone(), cfg),
            None => rb.add_route(source, route.to.clone()),
        };
    }
    for o in &r.output {
        rb = rb.output(o.clone());
    }
    rb
}

/// The inbox a route asks for, if it sets any of its options.
fn inbox(route: &RouteSpec) -> Option<InboxConfig> {
    let mut cfg = InboxConfig::new();
    let mut custom = false;
    if let Some(n) = route.batch_size {
        cfg = cfg.batch_size(n);
        custom = true;
    }
    if let Some(t) = &route.ttl {
        cfg = cfg.ttl(t.duration);
        custom = true;
    }
    if let Some(n) = route.capacity {
        cfg = cfg.capacity(n);
        custom = true;
    }
    if let Some(o) = route.overflow {
        cfg = cfg.overflow(o);
        custom = true;
    }
    if let Some(t) = &route.max_wait {
        cfg = cfg.max_wait(t.duration);
        custom = true;
    }
    custom.then_some(cfg)
}
