//! [`ActionGroups`]: a plan written as groups, `[[A], [B, C, D], [E]]` —
//! a group of one runs after the group before it; a group of several runs
//! its steps in parallel, each branch on its own thread, and a
//! [`Summarizer`] merges them before the next group starts.

use troupe_runtime::graph::Isolation;

use crate::error::PlanError;
use crate::passing::ResultScope;
use crate::plan::{Node, NodeKind, Plan};
use crate::step::PlanStep;
use crate::summarizer::Summarizer;

#[derive(Debug, Clone)]
struct Group {
    steps: Vec<PlanStep>,
    summarizer: Option<Summarizer>,
}

/// Builds a [`Plan`] from action groups.
///
/// A parallel group's summarizer is a node of its own, named after the
/// branches it merges (`B1+B2`). By default every step sees the results of
/// all earlier groups ([`ResultScope::AllEarlier`], the seed's shared
/// `previous_action_results` list), a parallel group counting as one
/// merged result; and branches start from that same view
/// ([`Isolation::Inherit`]) — with [`Isolation::Fresh`] they see only the
/// task and their request. Branches never see each other.
///
/// ```
/// use troupe_planning::{ActionGroups, PlanStep};
/// use troupe_runtime::{FnAgent, Thread};
///
/// let agent = std::sync::Arc::new(FnAgent::sync("worker", |_: &Thread| Ok("done")));
/// let step = |id: &str| PlanStep::shared(id, agent.clone(), format!("do {id}"));
/// let plan = ActionGroups::new()
///     .step(step("A1"))
///     .group([step("B1"), step("B2")])
///     .step(step("C1"))
///     .build()
///     .unwrap();
/// assert_eq!(plan.ids().collect::<Vec<_>>(), ["A1", "B1", "B2", "B1+B2", "C1"]);
/// assert_eq!(plan.to_string(), "A1 -> B1\nA1 -> B2\nB1 -> B1+B2\nB2 -> B1+B2\nB1+B2 -> C1");
/// ```
#[derive(Debug, Clone, Default)]
pub struct ActionGroups {
    groups: Vec<Group>,
    isolation: Option<Isolation>,
    summarizer: Summarizer,
}

impl ActionGroups {
    /// No group yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a group of one step: it runs after everything before it.
    pub fn step(self, step: PlanStep) -> Self {
        self.group([step])
    }

    /// Adds a group: one step runs in sequence, several in parallel.
    pub fn group(mut self, steps: impl IntoIterator<Item = PlanStep>) -> Self {
        self.groups.push(Group {
            steps: steps.into_iter().collect(),
            summarizer: None,
        });
        self
    }

    /// Adds a parallel group with its own summarizer.
    pub fn group_with(
        mut self,
        steps: impl IntoIterator<Item = PlanStep>,
        summarizer: Summarizer,
    ) -> Self {
        self.groups.push(Group {
            steps: steps.into_iter().collect(),
            summarizer: Some(summarizer),
        });
        self
    }

    /// How parallel branches start (default [`Isolation::Inherit`]).
    pub fn isolation(mut self, isolation: Isolation) -> Self {
        self.isolation = Some(isolation);
        self
    }

    /// The summarizer of parallel groups that name none (default
    /// [`Summarizer::Collect`]).
    pub fn summarizer(mut self, summarizer: Summarizer) -> Self {
        self.summarizer = summarizer;
        self
    }

    /// Checks the groups and builds the plan.
    pub fn build(self) -> Result<Plan, PlanError> {
        let isolation = self.isolation.unwrap_or(Isolation::Inherit);
        let mut nodes: Vec<Node> = Vec::new();
        let mut edges = Vec::new();
        let mut exit: Option<usize> = None;
        for (g, group) in self.groups.into_iter().enumerate() {
            let entry_edges = |to: usize, edges: &mut Vec<(usize, usize)>| {
                if let Some(from) = exit {
                    edges.push((from, to));
                }
            };
            match group.steps.len() {
                0 => return Err(PlanError::EmptyGroup { group: g + 1 }),
                1 => {
                    let step = group
                        .steps
                        .into_iter()
                        .next()
                        .ok_or(PlanError::EmptyGroup { group: g + 1 })?;
                    let i = nodes.len();
                    nodes.push(Node {
                        id: step.id().to_string(),
                        kind: NodeKind::Step(step),
                    });
                    entry_edges(i, &mut edges);
                    exit = Some(i);
                }
                n => {
                    let first = nodes.len();
                    let merge = first + n;
                    let ids: Vec<String> = group.steps.iter().map(|s| s.id().to_string()).collect();
                    for (k, step) in group.steps.into_iter().enumerate() {
                        nodes.push(Node {
                            id: step.id().to_string(),
                            kind: NodeKind::Branch {
                                step,
                                merge,
                                isolation,
                            },
                        });
                        entry_edges(first + k, &mut edges);
                        edges.push((first + k, merge));
                    }
                    nodes.push(Node {
                        id: ids.join("+"),
                        kind: NodeKind::Merge {
                            summarizer: group.summarizer.unwrap_or_else(|| self.summarizer.clone()),
                            branches: (first..merge).collect(),
                        },
                    });
                    exit = Some(merge);
                }
            }
        }
        // By source, then target: the text form then reads group by group.
        edges.sort_unstable();
        Plan::new(nodes, edges, ResultScope::AllEarlier)
    }
}

impl Plan {
    /// A plan from action groups with the defaults of [`ActionGroups`]:
    /// `[[A1], [B1, B2], [C1]]`.
    pub fn from_groups<G: IntoIterator<Item = PlanStep>>(
        groups: impl IntoIterator<Item = G>,
    ) -> Result<Plan, PlanError> {
        groups
            .into_iter()
            .fold(ActionGroups::new(), |b, g| b.group(g))
            .build()
    }
}
