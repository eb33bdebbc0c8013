//! A batch of next actions compiled into a plan: action groups (a group
//! of several on branched copies of the reasoner, merged by the
//! summarizer) or a dependency graph (plain actions), by the same
//! planning engine as any plan.

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use troupe_runtime::{Agent, AgentError, Message, Reply, RunContext, Thread, Workflow};

use super::Core;
use super::actions::{Action, ActionStep, render_memories, with_memory};
use super::answer::{ActionCall, BranchStart, NextActions};
use super::copy::{BranchAction, Loop, Seed};
use crate::groups::ActionGroups;
use crate::plan::Plan;
use crate::step::PlanStep;
use crate::summarizer::Summarizer;

/// A compiled batch.
pub(crate) struct Compiled {
    pub(crate) plan: Plan,
    pub(crate) workflow: Workflow,
    /// Each step id's action name.
    pub(crate) actions: BTreeMap<String, String>,
}

/// Gives each call an id: its own, else its action's name, numbered from
/// the second time a name is used.
fn ids(calls: &[&ActionCall]) -> Vec<String> {
    let mut used: BTreeMap<String, usize> = BTreeMap::new();
    calls
        .iter()
        .map(|c| {
            let base = c.id.clone().unwrap_or_else(|| c.action.clone());
            let n = used.entry(base.clone()).or_insert(0);
            *n += 1;
            if *n == 1 { base } else { format!("{base}{n}") }
        })
        .collect()
}

/// Compiles `next` for the copy at `depth` and `path`; `seed` is what an
/// inheriting branch starts from. The error says what is wrong.
pub(crate) fn compile(
    core: &Arc<Core>,
    depth: u32,
    path: &str,
    seed: &Seed,
    next: &NextActions,
) -> Result<Compiled, String> {
    let find = |name: &str| {
        core.actions
            .iter()
            .find(|a| a.name() == name)
            .cloned()
            .ok_or_else(|| {
                let known: Vec<&str> = core.actions.iter().map(Action::name).collect();
                format!("no action `{name}` (the actions: {})", known.join(", "))
            })
    };
    let mut actions = BTreeMap::new();
    let plain = |id: &str, call: &ActionCall, action: Action| {
        let step = ActionStep {
            id: id.to_string(),
            action,
            input: call.input.clone(),
        };
        PlanStep::new(id, step, call.input_text())
    };
    let plan = match next {
        NextActions::Groups(groups) => {
            let calls: Vec<&ActionCall> = groups.iter().flatten().collect();
            let mut names = ids(&calls).into_iter();
            let mut b = ActionGroups::new();
            for group in groups {
                let mut steps = Vec::new();
                for call in group {
                    let id = names.next().unwrap_or_default();
                    let action = find(&call.action)?;
                    actions.insert(id.clone(), call.action.clone());
                    let branched = group.len() > 1 && depth < core.max_depth;
                    if branched {
                        let start = call.branch.unwrap_or(if core.start_as_new {
                            BranchStart::Fresh
                        } else {
                            BranchStart::Inherit
                        });
                        let branch = Branch {
                            core: core.clone(),
                            depth: depth + 1,
                            path: if path.is_empty() {
                                id.clone()
                            } else {
                                format!("{path}/{id}")
                            },
                            id: id.clone(),
                            call: call.clone(),
                            action,
                            seed: match start {
                                BranchStart::Inherit => seed.clone(),
                                BranchStart::Fresh => Seed::default(),
                            },
                        };
                        steps.push(PlanStep::new(id.as_str(), branch, call.input_text()));
                    } else {
                        steps.push(plain(&id, call, action));
                    }
                }
                b = b.group(steps);
            }
            if let Some(s) = &core.summarizer {
                b = b.summarizer(Summarizer::Agent(s.clone()));
            }
            b.build().map_err(|e| e.to_string())?
        }
        NextActions::Graph {
            actions: calls,
            graph,
        } => {
            let refs: Vec<&ActionCall> = calls.iter().collect();
            let mut steps = Vec::new();
            for (id, call) in ids(&refs).into_iter().zip(calls) {
                let action = find(&call.action)?;
                actions.insert(id.clone(), call.action.clone());
                steps.push(plain(&id, call, action));
            }
            Plan::from_text(graph, steps).map_err(|e| e.to_string())?
        }
    };
    let workflow = plan
        .compile_with(&core.options)
        .map_err(|e| e.to_string())?;
    Ok(Compiled {
        plan,
        workflow,
        actions,
    })
}

/// A parallel action on a branched copy of the reasoner: the action runs,
/// then the copy reasons on its result, and may branch again (up to the
/// depth limit).
struct Branch {
    core: Arc<Core>,
    depth: u32,
    path: String,
    id: String,
    call: ActionCall,
    action: Action,
    seed: Seed,
}

#[async_trait]
impl Agent for Branch {
    fn name(&self) -> &str {
        &self.id
    }

    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError> {
        let copy = Loop {
            core: &self.core,
            depth: self.depth,
            path: self.path.clone(),
            seed: self.seed.clone(),
        };
        let branch = BranchAction {
            id: &self.id,
            call: &self.call,
            action: &self.action,
        };
        let done = copy.drive(&thread, &ctx, Some(branch)).await?;
        let results = done.last_results();
        let response = done
            .answers()
            .last()
            .map(|a| a.response.clone())
            .filter(|r| !r.is_empty())
            .or_else(|| results.last().map(|r| r.result.clone()))
            .unwrap_or_default();
        // The memories of the action and of what the copy ran last.
        let mut memory = done
            .records
            .iter()
            .find_map(|r| match r {
                super::record::Record::Action { result } => result.memory.clone(),
                _ => None,
            })
            .unwrap_or_default();
        let batches = done.records.iter().rev().find_map(|r| match r {
            super::record::Record::Results { results } => Some(results),
            _ => None,
        });
        if let Some(batch) = batches {
            let more = render_memories(batch);
            if !more.is_empty() && !memory.is_empty() {
                memory.push('\n');
            }
            memory.push_str(&more);
        }
        let message = with_memory(
            Message::text("", response),
            (!memory.is_empty()).then_some(memory),
        );
        let mut reply = Reply::message(message);
        if done.resumed {
            reply = reply.with_thread(done.own);
        }
        Ok(reply)
    }
}
