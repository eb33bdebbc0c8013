//! The reasoner's loop (seed 000/003): ask the reasoner, run the batch of
//! actions it asks for, feed the results back (pattern 1), until the
//! status says completed, nothing is asked, or the iteration ceiling.

use std::sync::Arc;

use troupe_agents::placeholders::{
    ACTION_MEMORY_KEY, ACTION_RESULT_KEY, CONVERSATION_KEY, TASK_STATES_KEY, TaskStateItem,
    TaskStatus,
};
use troupe_runtime::{
    AgentError, Content, Event, Message, RunContext, RunStatus, Thread, message::USER,
    state::StateDelta,
};

use super::actions::{ActionResult, memory_of, render_memories, render_results};
use super::answer::ReasonerAnswer;
use super::batch;
use super::copy::{BranchAction, Loop, Seed};
use super::record::{self, BATCH_RUN, Record};

/// How the loop ended.
pub(crate) struct Done {
    pub(crate) own: Thread,
    pub(crate) resumed: bool,
    pub(crate) records: Vec<Record>,
    /// Whether it stopped at its iteration ceiling.
    pub(crate) at_ceiling: bool,
}

impl Done {
    /// The answers, in order.
    pub(crate) fn answers(&self) -> impl Iterator<Item = &ReasonerAnswer> {
        self.records.iter().filter_map(|r| match r {
            Record::Answer { answer } => Some(answer),
            _ => None,
        })
    }

    /// The latest results (a batch's, or a branch's action's).
    pub(crate) fn last_results(&self) -> Vec<ActionResult> {
        last_results(&self.records)
    }
}

fn last_results(records: &[Record]) -> Vec<ActionResult> {
    records
        .iter()
        .rev()
        .find_map(|r| match r {
            Record::Results { results } => Some(results.clone()),
            Record::Action { result } => Some(vec![result.clone()]),
            Record::Answer { .. } | Record::Stopped { .. } => None,
        })
        .unwrap_or_default()
}

impl Loop<'_> {
    /// Runs the loop over the turn's thread `lent`.
    pub(crate) async fn drive(
        &self,
        lent: &Arc<Thread>,
        ctx: &RunContext,
        branch: Option<BranchAction<'_>>,
    ) -> Result<Done, AgentError> {
        let record::Split {
            own,
            mut records,
            mut batch,
            resumed,
        } = record::split(lent);
        let source = self.core.name.as_str();
        if let Some(b) = &branch
            && records.is_empty()
        {
            // Not over `lent`: the action's own run does not report as
            // this turn (the loop does).
            let view = Arc::new(own.clone());
            let (result, memory) = b.action.run(b.id, &b.call.input, view, ctx).await?;
            records.push(Record::Action {
                result: ActionResult {
                    id: b.id.to_string(),
                    action: b.action.name().to_string(),
                    result,
                    memory,
                },
            });
            record::report(lent, ctx, record::progress(&own, &records, source));
        }
        let mut at_ceiling = false;
        loop {
            if ctx.is_cancelled() {
                return Err(AgentError::cancelled());
            }
            let pending = match records.last() {
                Some(Record::Stopped { .. }) => break,
                Some(Record::Answer { answer }) => {
                    if answer.status == TaskStatus::Completed {
                        break;
                    }
                    match answer.actions() {
                        Some(next) => Some(next.clone()),
                        None => break,
                    }
                }
                _ => None,
            };
            if let Some(next) = pending {
                let (results, stopped) = self
                    .run_batch(lent, ctx, &own, &records, &next, batch.take())
                    .await?;
                records.push(Record::Results { results });
                if let Some(reason) = stopped {
                    records.push(Record::Stopped { reason });
                }
                record::report(lent, ctx, record::progress(&own, &records, source));
                continue;
            }
            let asked = records
                .iter()
                .filter(|r| matches!(r, Record::Answer { .. }))
                .count();
            if asked >= self.core.max_iterations as usize {
                at_ceiling = true;
                break;
            }
            if ctx.is_stopping() {
                return Err(AgentError::cancelled());
            }
            let answer = self.ask(&own, &records, ctx).await?;
            ctx.emit_with(|| Event::Custom {
                path: ctx.path().clone(),
                name: "reasoner_answer".into(),
                data: serde_json::to_value(&answer).unwrap_or_default(),
            });
            records.push(Record::Answer { answer });
            record::report(lent, ctx, record::progress(&own, &records, source));
        }
        Ok(Done {
            own,
            resumed,
            records,
            at_ceiling,
        })
    }

    /// The task-status items so far: the seed's, then this copy's.
    pub(crate) fn states(&self, records: &[Record]) -> Vec<TaskStateItem> {
        let mut items = self.seed.states.clone();
        items.extend(records.iter().filter_map(|r| match r {
            Record::Answer { answer } => Some(answer.state_item()),
            _ => None,
        }));
        items
    }

    /// `{conversation}`: the seed's lines, the thread's, and this copy's
    /// instant responses.
    pub(crate) fn conversation(&self, own: &Thread, records: &[Record]) -> Vec<String> {
        let mut lines = self.seed.conversation.clone();
        // A copy's thread is its step's view, not a conversation: an
        // inheriting copy has the one it branched from in its seed.
        if self.path.is_empty() {
            let text = troupe_agents::placeholders::conversation(self.core.reasoner.name(), own);
            lines.extend(text.lines().filter(|l| !l.is_empty()).map(str::to_string));
        }
        for r in records {
            if let Record::Answer { answer } = r
                && !answer.response.is_empty()
            {
                lines.push(format!("Agent: {}", answer.response));
            }
        }
        lines
    }

    /// The reasoner of this copy: its own when one was given for its
    /// branch path, else the agent's.
    fn reasoner(&self) -> &Arc<dyn troupe_runtime::Agent> {
        self.core
            .branch_reasoners
            .get(&self.path)
            .unwrap_or(&self.core.reasoner)
    }

    /// One reasoner turn: its thread is the input, then each earlier
    /// answer (as its own message) and the results that followed; the
    /// placeholders' values come in the run state it is shown.
    async fn ask(
        &self,
        own: &Thread,
        records: &[Record],
        ctx: &RunContext,
    ) -> Result<ReasonerAnswer, AgentError> {
        let reasoner = self.reasoner();
        let me = reasoner.name().to_string();
        let mut chat: Vec<Message> = Vec::new();
        if self.path.is_empty() || self.seed.inherit {
            chat.extend(own.messages().iter().map(|m| (**m).clone()));
        }
        for r in records {
            match r {
                Record::Action { result } => chat.push(Message::text(
                    USER,
                    format!(
                        "The result of action {} ({}): {}",
                        result.id, result.action, result.result
                    ),
                )),
                Record::Answer { answer } => chat.push(Message::structured(
                    me.as_str(),
                    serde_json::to_string(answer).unwrap_or_default(),
                )),
                Record::Results { results } => chat.push(Message::text(
                    USER,
                    format!("The actions ran:\n{}", render_results(results)),
                )),
                Record::Stopped { .. } => {}
            }
        }
        let latest = last_results(records);
        let mut state = ctx.state().clone();
        state.apply(
            &StateDelta::new()
                .set(ACTION_RESULT_KEY, render_results(&latest))
                .set(ACTION_MEMORY_KEY, render_memories(&latest))
                .set(
                    TASK_STATES_KEY,
                    serde_json::to_string(&self.states(records)).unwrap_or_default(),
                )
                .set(CONVERSATION_KEY, self.conversation(own, records).join("\n")),
        );
        let reply = reasoner
            .run(Arc::new(Thread::from_messages(chat)), ctx.with_state(state))
            .await?;
        let Some(last) = reply.messages().last() else {
            return Err(AgentError::failed(format!(
                "{}: the reasoner gave no answer",
                self.core.name
            )));
        };
        ReasonerAnswer::parse(&last.text_content())
            .map_err(|e| AgentError::failed(format!("{}: {e}", self.core.name)))
    }

    /// Runs one batch (going on from `resumed`, its run cut short, if
    /// given) and collects its results, and why the stop condition stopped
    /// it, if it did. A batch that cannot be built is one error result the
    /// reasoner sees next.
    async fn run_batch(
        &self,
        lent: &Arc<Thread>,
        ctx: &RunContext,
        own: &Thread,
        records: &[Record],
        next: &super::answer::NextActions,
        resumed: Option<Thread>,
    ) -> Result<(Vec<ActionResult>, Option<String>), AgentError> {
        let seed = Seed {
            inherit: true,
            states: self.states(records),
            conversation: self.conversation(own, records),
        };
        let compiled = match batch::compile(self.core, self.depth, &self.path, &seed, next) {
            Ok(c) => c,
            Err(why) => {
                let error = ActionResult {
                    id: "error".into(),
                    action: "error".into(),
                    result: format!("Error: these actions cannot run: {why}"),
                    memory: None,
                };
                return Ok((vec![error], None));
            }
        };
        ctx.emit_with(|| Event::Plan {
            path: ctx.path().clone(),
            plan: compiled.plan.to_string(),
        });
        let input = match resumed {
            Some(run) => run,
            None => Thread::from_messages(own.messages().iter().map(|m| (**m).clone())),
        };
        let base = record::progress(own, records, &self.core.name);
        let relay = ctx.relay_progress(lent, move |run| {
            let mut t = base.clone();
            t.children_mut()
                .insert(BATCH_RUN.to_string(), Box::new(run));
            t
        });
        let result = compiled
            .workflow
            .run_relayed(input, ctx, relay)
            .await
            .map_err(AgentError::workflow)?;
        if result.status == RunStatus::Interrupted {
            return Err(AgentError::cancelled());
        }
        let mut results = Vec::new();
        for id in compiled.plan.order() {
            let last = result
                .messages
                .iter()
                .rev()
                .find(|m| &*m.source == id && !matches!(m.content, Content::Stop(_)));
            if let Some(m) = last {
                let action = compiled
                    .actions
                    .get(id)
                    .cloned()
                    .unwrap_or_else(|| "summarizer".to_string());
                results.push(ActionResult {
                    id: id.to_string(),
                    action,
                    result: m.text_content().into_owned(),
                    memory: memory_of(m),
                });
            }
        }
        let stopped = match &result.status {
            RunStatus::Stopped(reason) => Some(reason.to_string()),
            _ => None,
        };
        Ok((results, stopped))
    }
}
