//! Turning a [`RouterBuilder`] into a [`Router`]: merge what the routes say
//! about each target, validate it all, and precompute the lookups. The
//! public entry is [`RouterBuilder::build`], defined here.

use std::collections::hash_map::Entry;
use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::Arc;
use std::time::Duration;

use crate::algo;
use crate::builder::{Route, RouterBuilder};
use crate::config::{InboxConfig, Overflow, SenderFilter};
use crate::hash::FastMap;
use crate::router::{Inner, Router, SenderSlot};
use crate::source::Source;
use crate::validation::{AgentRole, RouteProblem, RouteWarning, RouterError};

impl RouterBuilder {
    /// Validates the routes against the participants (in this order) and
    /// precomputes every lookup.
    ///
    /// # Errors
    ///
    /// Every [`RouteProblem`] found, at once.
    pub fn build<S: AsRef<str>>(self, participants: &[S]) -> Result<Router, RouterError> {
        build(self, participants)
    }
}

/// See [`RouterBuilder::build`].
fn build<S: AsRef<str>>(builder: RouterBuilder, participants: &[S]) -> Result<Router, RouterError> {
    let mut plan = Plan::new(participants, &builder.entries);
    plan.apply_routes(&builder.routes);
    plan.apply_inboxes(&builder.inboxes);
    let outputs = plan.outputs(&builder.outputs);
    plan.report_unknown();
    let (configs, self_routes, unrouted) = plan.resolve_inboxes();
    let deliveries = Deliveries::new(&plan, &configs, &self_routes);
    plan.check_graph(&deliveries, &outputs);
    if !plan.problems.is_empty() {
        return Err(RouterError {
            problems: plan.problems,
        });
    }
    // With no route at all every participant hears everyone, as a group
    // chat means to; beside routes that choose senders, it is worth
    // saying.
    let some_routed = unrouted.len() < plan.names.len();
    let mut warnings: Vec<RouteWarning> = unrouted
        .iter()
        .filter(|_| some_routed)
        .filter_map(|&i| plan.names.get(i))
        .map(|agent| RouteWarning::HearsEveryone {
            agent: agent.clone(),
        })
        .collect();
    warnings.extend(deliveries.cycles(&plan.names, &unrouted));
    let (senders, targets) = deliveries.table();
    Ok(Router::from_inner(Inner {
        participants: plan.names,
        configs,
        self_routes,
        senders,
        targets,
        any_targets: deliveries.any_targets,
        entries: plan.entries,
        outputs,
        warnings,
        routes: builder.routes,
    }))
}

/// What the routes say about each target so far, and the problems found.
struct Plan {
    names: Vec<String>,
    /// The index of each valid participant name (the first, if repeated).
    index: HashMap<String, usize>,
    /// `"user"` first, then declared entries, without repeats.
    entries: Vec<String>,
    /// The same names, for lookups: a map-reduce declares one per worker.
    entry_set: HashSet<String>,
    rules: Vec<Rules>,
    problems: Vec<RouteProblem>,
    /// Reported together after the routes, once per name and role.
    unknown: Vec<(String, AgentRole)>,
}

/// One target's inbox as the routes describe it.
#[derive(Default)]
struct Rules {
    routed: bool,
    any: bool,
    self_route: bool,
    sources: BTreeSet<String>,
    options: Options,
}

/// Inbox options set so far; `None` is unset (left at its default).
#[derive(Default)]
struct Options {
    batch_size: Option<usize>,
    ttl: Option<Duration>,
    capacity: Option<usize>,
    overflow: Option<Overflow>,
    max_wait: Option<Duration>,
    /// (option, "option: first vs second"), once per option.
    conflicts: Vec<(&'static str, String)>,
}

impl Options {
    fn merge(&mut self, c: &InboxConfig) {
        let defaults = InboxConfig::new();
        let batch = (c.batch_size != defaults.batch_size).then_some(c.batch_size);
        let overflow = (c.overflow != defaults.overflow).then_some(c.overflow);
        let conflicts = &mut self.conflicts;
        set(
            conflicts,
            &mut self.batch_size,
            batch,
            "batch_size",
            usize::to_string,
        );
        set(conflicts, &mut self.ttl, c.ttl, "ttl", show_duration);
        set(
            conflicts,
            &mut self.capacity,
            c.capacity,
            "capacity",
            usize::to_string,
        );
        set(
            conflicts,
            &mut self.overflow,
            overflow,
            "overflow",
            Overflow::to_string,
        );
        set(
            conflicts,
            &mut self.max_wait,
            c.max_wait,
            "max_wait",
            show_duration,
        );
    }

    fn config(&self, senders: SenderFilter) -> InboxConfig {
        let defaults = InboxConfig::new();
        InboxConfig {
            senders,
            batch_size: self.batch_size.unwrap_or(defaults.batch_size),
            ttl: self.ttl,
            capacity: self.capacity,
            overflow: self.overflow.unwrap_or(defaults.overflow),
            max_wait: self.max_wait,
        }
    }
}

fn show_duration(d: &Duration) -> String {
    humantime::format_duration(*d).to_string()
}

fn set<T: PartialEq>(
    conflicts: &mut Vec<(&'static str, String)>,
    slot: &mut Option<T>,
    value: Option<T>,
    option: &'static str,
    show: impl Fn(&T) -> String,
) {
    let Some(value) = value else { return };
    match slot {
        None => *slot = Some(value),
        Some(old) if *old == value => {}
        Some(old) => {
            if !conflicts.iter().any(|(o, _)| *o == option) {
                let detail = format!("{option}: {} vs {}", show(old), show(&value));
                conflicts.push((option, detail));
            }
        }
    }
}

impl Plan {
    fn new<S: AsRef<str>>(participants: &[S], extra_entries: &[String]) -> Self {
        let names: Vec<String> = participants.iter().map(|p| p.as_ref().to_owned()).collect();
        let mut problems = Vec::new();
        let mut index = HashMap::with_capacity(names.len());
        let mut repeated = HashSet::new();
        for (i, name) in names.iter().enumerate() {
            if name.is_empty() {
                problems.push(RouteProblem::EmptyName { index: i });
            } else if name == Router::USER {
                problems.push(RouteProblem::ReservedName { name: name.clone() });
            } else {
                match index.entry(name.clone()) {
                    Entry::Vacant(slot) => {
                        slot.insert(i);
                    }
                    Entry::Occupied(_) => {
                        if repeated.insert(name.as_str()) {
                            problems
                                .push(RouteProblem::DuplicateParticipant { name: name.clone() });
                        }
                    }
                }
            }
        }
        let mut entries = vec![Router::USER.to_owned()];
        let mut entry_set: HashSet<String> = entries.iter().cloned().collect();
        for entry in extra_entries {
            if entry_set.insert(entry.clone()) {
                entries.push(entry.clone());
            }
        }
        let rules = names.iter().map(|_| Rules::default()).collect();
        Self {
            names,
            index,
            entries,
            entry_set,
            rules,
            problems,
            unknown: Vec::new(),
        }
    }

    fn apply_routes(&mut self, routes: &[Route]) {
        for route in routes {
            let target = self.target(&route.target);
            if let Some(rules) = self.rules_of(target) {
                rules.routed = true;
                rules.any |= route.source == Source::Any;
            }
            for name in route.source.names() {
                self.add_source(target, name);
            }
            if let Some(config) = &route.config {
                self.apply_config(target, config);
            }
        }
    }

    fn apply_inboxes(&mut self, inboxes: &[(String, InboxConfig)]) {
        for (target, config) in inboxes {
            let target = self.target(target);
            self.apply_config(target, config);
        }
    }

    /// The declared outputs that are participants, without repeats.
    fn outputs(&mut self, declared: &[String]) -> Vec<String> {
        let mut outputs: Vec<String> = Vec::new();
        // A set beside the list: a router may declare tens of thousands.
        let mut seen = std::collections::HashSet::new();
        for output in declared {
            if !self.index.contains_key(output) {
                self.note_unknown(output, AgentRole::Output);
            } else if seen.insert(output.as_str()) {
                outputs.push(output.clone());
            }
        }
        outputs
    }

    fn report_unknown(&mut self) {
        let unknown = std::mem::take(&mut self.unknown);
        self.problems.extend(
            unknown
                .into_iter()
                .map(|(name, role)| RouteProblem::UnknownAgent { name, role }),
        );
    }

    /// Each target's final inbox config (one shared by the targets whose
    /// configs are equal) and whether it takes its own messages; and the
    /// participants no route names, which hear every sender by default.
    fn resolve_inboxes(&mut self) -> (Vec<Arc<InboxConfig>>, Vec<bool>, Vec<usize>) {
        let rules = std::mem::take(&mut self.rules);
        let mut configs = Vec::with_capacity(rules.len());
        let mut distinct: HashSet<Arc<InboxConfig>> = HashSet::new();
        let mut self_routes = Vec::with_capacity(rules.len());
        let mut unrouted = Vec::new();
        for (i, (rules, target)) in rules.into_iter().zip(&self.names).enumerate() {
            // A repeated name is reported; only its first holder counts.
            if !rules.routed && self.index.get(target) == Some(&i) {
                unrouted.push(i);
            }
            let senders = if !rules.routed || rules.any {
                SenderFilter::Any
            } else {
                SenderFilter::Only(rules.sources)
            };
            let config = rules.options.config(senders);
            // With conflicting values the merged config is arbitrary, and
            // judging it would only add noise to the conflict reports.
            if rules.options.conflicts.is_empty()
                && let Err(reason) = config.validate()
            {
                self.problems.push(RouteProblem::InvalidConfig {
                    target: target.clone(),
                    reason,
                });
            }
            for (_, detail) in rules.options.conflicts {
                self.problems.push(RouteProblem::ConflictingOptions {
                    target: target.clone(),
                    detail,
                });
            }
            let shared = match distinct.get(&config) {
                Some(same) => same.clone(),
                None => {
                    let config = Arc::new(config);
                    distinct.insert(config.clone());
                    config
                }
            };
            configs.push(shared);
            self_routes.push(rules.self_route);
        }
        (configs, self_routes, unrouted)
    }

    fn check_graph(&mut self, deliveries: &Deliveries, outputs: &[String]) {
        // Every sender key is a node (entries that are not participants come
        // after them), so the walk starts at the entries themselves.
        let seeds = self.entries.iter().filter_map(|e| deliveries.key_of(e));
        let reached = algo::reachable(&deliveries.lists, seeds);
        let valid = |i: usize, name: &String| self.index.get(name) == Some(&i);
        let outputs: std::collections::HashSet<&str> = outputs.iter().map(String::as_str).collect();

        let mut problems = Vec::new();
        for ((i, name), reached) in self.names.iter().enumerate().zip(reached) {
            if valid(i, name) && !reached {
                problems.push(RouteProblem::Unreachable {
                    agent: name.clone(),
                });
            }
        }
        for (i, name) in self.names.iter().enumerate() {
            let others = deliveries.list(i).iter().any(|&t| t != i);
            if valid(i, name) && !others && !outputs.contains(name.as_str()) {
                problems.push(RouteProblem::ReachesNobody {
                    agent: name.clone(),
                });
            }
        }
        self.problems.extend(problems);
    }

    fn rules_of(&mut self, target: Option<usize>) -> Option<&mut Rules> {
        target.and_then(|t| self.rules.get_mut(t))
    }

    fn note_unknown(&mut self, name: &str, role: AgentRole) {
        if !self.unknown.iter().any(|(n, r)| n == name && *r == role) {
            self.unknown.push((name.to_owned(), role));
        }
    }

    fn target(&mut self, name: &str) -> Option<usize> {
        let found = self.index.get(name).copied();
        if found.is_none() {
            self.note_unknown(name, AgentRole::Target);
        }
        found
    }

    fn add_source(&mut self, target: Option<usize>, name: &str) {
        if !self.index.contains_key(name) && !self.entry_set.contains(name) {
            self.note_unknown(name, AgentRole::Source);
            return;
        }
        let is_self = target
            .and_then(|t| self.names.get(t))
            .is_some_and(|n| n == name);
        if let Some(rules) = self.rules_of(target) {
            rules.self_route |= is_self;
            rules.sources.insert(name.to_owned());
        }
    }

    /// A config's options, and its sender names as extra sources.
    fn apply_config(&mut self, target: Option<usize>, config: &InboxConfig) {
        if let SenderFilter::Only(names) = &config.senders {
            for name in names {
                self.add_source(target, name);
            }
        }
        if let Some(rules) = self.rules_of(target) {
            rules.routed |= !config.senders.is_any();
            rules.options.merge(config);
        }
    }
}

/// Who receives whose messages: for each sender, its targets by ascending
/// index. Participant `i` is sender key `i`; an entry that is not a
/// participant gets a key after them.
struct Deliveries {
    n: usize,
    keys: HashMap<String, usize>,
    lists: Vec<Vec<usize>>,
    any_targets: Vec<usize>,
}

impl Deliveries {
    fn new(plan: &Plan, configs: &[Arc<InboxConfig>], self_routes: &[bool]) -> Self {
        let n = plan.names.len();
        let mut keys = plan.index.clone();
        for entry in &plan.entries {
            let next = n + keys.len() - plan.index.len();
            keys.entry(entry.clone()).or_insert(next);
        }
        let mut lists = vec![Vec::new(); n + keys.len() - plan.index.len()];
        let mut any_targets = Vec::new();
        // Visiting targets in ascending order, each pushing itself at most
        // once per list, leaves every list sorted and without repeats.
        for (t, (config, &own)) in configs.iter().zip(self_routes).enumerate() {
            // Repeated names are reported; only their first holder takes part.
            if plan.names.get(t).and_then(|name| plan.index.get(name)) != Some(&t) {
                continue;
            }
            match &config.senders {
                SenderFilter::Any => {
                    any_targets.push(t);
                    for (s, list) in lists.iter_mut().enumerate() {
                        if s != t || own {
                            list.push(t);
                        }
                    }
                }
                SenderFilter::Only(sources) => {
                    for source in sources {
                        if let Some(list) = keys.get(source).and_then(|&k| lists.get_mut(k)) {
                            list.push(t);
                        }
                    }
                }
            }
        }
        Self {
            n,
            keys,
            lists,
            any_targets,
        }
    }

    fn key_of(&self, name: &str) -> Option<usize> {
        self.keys.get(name).copied()
    }

    fn list(&self, key: usize) -> &[usize] {
        self.lists.get(key).map_or(&[], Vec::as_slice)
    }

    /// The cycles of deliveries, each named for what makes it: the
    /// routes alone, or the default of the `unrouted` participants
    /// (who hear every sender) among its members.
    fn cycles(&self, names: &[String], unrouted: &[usize]) -> Vec<RouteWarning> {
        // Only participants receive: entries' keys (`>= n`) are sources alone,
        // so no cycle passes through them.
        let participants = self.lists.get(..self.n).unwrap_or(&self.lists);
        let mut hears_all = vec![false; self.n];
        for &i in unrouted {
            if let Some(h) = hears_all.get_mut(i) {
                *h = true;
            }
        }
        let named = |ids: &[usize]| -> Vec<String> {
            ids.iter().filter_map(|&i| names.get(i).cloned()).collect()
        };
        algo::cycles(participants)
            .into_iter()
            .map(|component| {
                let through: Vec<usize> = component
                    .iter()
                    .copied()
                    .filter(|&i| hears_all.get(i).copied().unwrap_or(false))
                    .collect();
                if through.is_empty() {
                    RouteWarning::Cycle {
                        agents: named(&component),
                    }
                } else {
                    RouteWarning::CycleThroughDefault {
                        agents: named(&component),
                        through: named(&through),
                    }
                }
            })
            .collect()
    }

    /// The lookup table: each sender's slot into one flat list of targets.
    fn table(&self) -> (FastMap<Box<str>, SenderSlot>, Vec<usize>) {
        let mut flat = Vec::with_capacity(self.lists.iter().map(Vec::len).sum());
        let mut spans = Vec::with_capacity(self.lists.len());
        for list in &self.lists {
            let start = flat.len();
            flat.extend_from_slice(list);
            spans.push((start, flat.len()));
        }
        let mut senders = FastMap::default();
        senders.reserve(self.keys.len());
        for (name, &key) in &self.keys {
            let (start, end) = spans.get(key).copied().unwrap_or_default();
            let participant = (key < self.n).then_some(key);
            senders.insert(
                Box::from(name.as_str()),
                SenderSlot {
                    participant,
                    start,
                    end,
                },
            );
        }
        (senders, flat)
    }
}
