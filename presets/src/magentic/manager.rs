//! The Magentic manager: the node every turn of the team leads back to. It
//! plans (the task ledger), checks progress after every turn (the progress
//! ledger), replans when the team stalls, asks the user when it must, and
//! writes the final answer itself.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde::de::DeserializeOwned;
use troupe_agents::{ChatMessage, ChatModel, ChatRequest, StructuredOutput, complete_metered};
use troupe_runtime::{
    Agent, AgentError, Event, Message, Reply, RunContext, Thread, event::LedgerKind, message::USER,
};

use super::history::{
    BY, CORRECTION, FOR, KIND, Kind, OUTCOME, RESETS, ROUND, STALLS, TO, View, exchanges, kind_of,
};
use super::ledger::{ProgressLedger, TaskLedger, progress_ledger_schema, task_ledger_schema};
use super::prompts::{self, fill};
use crate::speaker::{SpeakerFallback, SpeakerMatch, correction, fallback_speaker, parse_speaker};

/// A ledger the model wrote.
struct Answer<T> {
    value: T,
    /// As the model wrote it (compact JSON).
    json: String,
    /// What was still wrong with it, when every attempt failed the check.
    unresolved: Option<String>,
}

/// How a task ended, as the final answer's metadata says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Outcome {
    /// The progress ledger found the request satisfied.
    Satisfied,
    /// `max_turns` progress checks were made.
    MaxTurns,
    /// The team stalled again after `max_resets` replans.
    MaxResets,
}

impl Outcome {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Outcome::Satisfied => "satisfied",
            Outcome::MaxTurns => "max_turns",
            Outcome::MaxResets => "max_resets",
        }
    }
}

/// What a manager may do, set by the builder.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) max_stalls: u32,
    pub(crate) max_resets: u32,
    pub(crate) max_turns: u32,
    pub(crate) max_attempts: u32,
    pub(crate) fallback: SpeakerFallback,
    pub(crate) plan_review: bool,
    pub(crate) ask_user: bool,
    pub(crate) final_answer_prompt: String,
}

/// The manager node.
pub(crate) struct Manager {
    pub(crate) name: String,
    pub(crate) model: Arc<dyn ChatModel>,
    /// Each participant's name and description.
    pub(crate) roles: Vec<(String, String)>,
    pub(crate) settings: Settings,
    pub(crate) task_schema: StructuredOutput,
    pub(crate) progress_schema: StructuredOutput,
}

impl Manager {
    /// A manager of `roles`; fails only if a ledger schema does not compile.
    pub(crate) fn new(
        name: String,
        model: Arc<dyn ChatModel>,
        roles: Vec<(String, String)>,
        settings: Settings,
    ) -> Result<Self, troupe_agents::SchemaError> {
        Ok(Manager {
            name,
            model,
            roles,
            settings,
            task_schema: StructuredOutput::named("task_ledger", task_ledger_schema())?,
            progress_schema: StructuredOutput::named("progress_ledger", progress_ledger_schema())?,
        })
    }

    fn team(&self) -> String {
        let mut lines: Vec<String> = self
            .roles
            .iter()
            .map(|(n, d)| format!("{n}: {d}"))
            .collect();
        if self.settings.ask_user {
            lines.push(format!(
                "{USER}: the person who gave the task; ask them only for information no one else on the team can find"
            ));
        }
        lines.join("\n")
    }

    /// Who may be named next speaker.
    fn candidates(&self) -> Vec<String> {
        let mut names: Vec<String> = self.roles.iter().map(|(n, _)| n.clone()).collect();
        if self.settings.ask_user {
            names.push(USER.to_string());
        }
        names
    }
}

impl fmt::Debug for Manager {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("MagenticManager")
            .field("name", &self.name)
            .field("settings", &self.settings)
            .finish()
    }
}

#[async_trait]
impl Agent for Manager {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        "plans, checks progress after every turn, and picks who speaks next"
    }

    async fn run(&self, thread: Arc<Thread>, ctx: RunContext) -> Result<Reply, AgentError> {
        let view = View::of(&thread, &self.name);
        let mut turn = Turn {
            m: self,
            ctx: &ctx,
            view,
            new: Vec::new(),
        };
        turn.run().await
    }
}

/// One turn of the manager: what it read from its thread, and the
/// messages it adds.
struct Turn<'a> {
    m: &'a Manager,
    ctx: &'a RunContext,
    view: View<'a>,
    new: Vec<Message>,
}

impl Turn<'_> {
    async fn run(&mut self) -> Result<Reply, AgentError> {
        let mut ledger = self.view.ledger.clone();
        let mut stalls = self.view.stalls;
        let mut rounds = self.view.rounds;
        if let Some((asked, question, answer)) = self.view.answered.clone() {
            match asked {
                Kind::AskedReview => {
                    let (mut l, resets) = ledger.take().ok_or_else(|| {
                        AgentError::failed("the plan review was answered, but the manager has no plan in its thread")
                    })?;
                    if !approves(&answer) {
                        let plan = TaskLedger::plan_from_text(&answer);
                        if !plan.is_empty() {
                            l.plan = plan;
                        }
                        self.record_task_ledger(&l, resets, Some("user"));
                    }
                    self.tell_plan(&l);
                    ledger = Some((l, resets));
                }
                _ => self.say(
                    Kind::UserAnswer,
                    format!("{question}\n\nThe user answered: {answer}"),
                ),
            }
        } else if ledger.is_none() {
            let schema = self.m.task_schema.schema().to_string();
            let prompt = self.fill(prompts::TASK_LEDGER, &[("schema", &schema)]);
            let l = self.task_ledger(prompt).await?;
            self.record_task_ledger(&l, 0, None);
            if self.m.settings.plan_review {
                let text = fill(prompts::PLAN_REVIEW, &[("plan", &l.plan_text())]);
                return Ok(self.ask(Kind::AskedReview, text));
            }
            self.tell_plan(&l);
            ledger = Some((l, 0));
            stalls = 0;
        }
        loop {
            let Some((current, resets)) = ledger.clone() else {
                return Err(AgentError::failed("the manager has no task ledger"));
            };
            rounds += 1;
            if rounds > self.m.settings.max_turns {
                return self.finish(Outcome::MaxTurns).await;
            }
            let (progress, speaker, now) = self.progress(rounds, stalls, resets).await?;
            if progress.is_request_satisfied.answer {
                return self.finish(Outcome::Satisfied).await;
            }
            stalls = now;
            if stalls >= self.m.settings.max_stalls {
                if resets >= self.m.settings.max_resets {
                    return self.finish(Outcome::MaxResets).await;
                }
                let ledger_text =
                    format!("{}\n\nPlan:\n{}", current.facts_text(), current.plan_text());
                let schema = self.m.task_schema.schema().to_string();
                let prompt = self.fill(
                    prompts::REPLAN,
                    &[("ledger", &ledger_text), ("schema", &schema)],
                );
                let l = self.task_ledger(prompt).await?;
                self.record_task_ledger(&l, resets + 1, None);
                self.tell_plan(&l);
                ledger = Some((l, resets + 1));
                stalls = 0;
                continue;
            }
            let instruction = progress.instruction_or_question.answer.clone();
            if speaker == USER {
                return Ok(self.ask(Kind::AskedQuestion, instruction));
            }
            let mut m = self.message(Kind::Instruction, instruction);
            m.metadata.insert(TO.into(), speaker.clone());
            self.new.push(m);
            return Ok(self.reply().with_next([speaker]));
        }
    }

    /// A message of the manager of `kind`.
    fn message(&self, kind: Kind, text: impl Into<String>) -> Message {
        let m = if kind == Kind::TaskLedger || kind == Kind::ProgressLedger {
            Message::structured(self.m.name.as_str(), text.into())
        } else {
            Message::text(self.m.name.as_str(), text.into())
        };
        m.with_metadata(KIND, kind.as_str())
    }

    fn say(&mut self, kind: Kind, text: String) {
        let m = self.message(kind, text);
        self.new.push(m);
    }

    /// A prompt with the task, the team, the candidates and the
    /// conversation filled in, and `more`.
    fn fill(&self, template: &str, more: &[(&str, &str)]) -> String {
        let team = self.m.team();
        let names = self.m.candidates().join(", ");
        let history = self.view.history(&self.m.name, &self.new);
        let mut values: Vec<(&str, &str)> = vec![
            ("task", &self.view.task),
            ("team", &team),
            ("names", &names),
            ("history", &history),
        ];
        values.extend_from_slice(more);
        fill(template, &values)
    }

    /// Keeps a task ledger in the thread and reports it.
    fn record_task_ledger(&mut self, l: &TaskLedger, resets: u32, by: Option<&str>) {
        let json = serde_json::to_string(l).unwrap_or_default();
        let mut m = self
            .message(Kind::TaskLedger, json)
            .with_metadata(RESETS, resets.to_string());
        if let Some(by) = by {
            m.metadata.insert(BY.into(), by.into());
        }
        let mut summary = l.summary();
        if resets > 0 {
            summary.push_str(&format!(
                "\n(replanned: reset {resets}/{})",
                self.m.settings.max_resets
            ));
        }
        if by == Some("user") {
            summary.push_str("\n(plan edited by the user)");
        }
        self.emit(LedgerKind::Task, summary, serde_json::to_value(l));
        self.new.push(m);
    }

    fn emit(
        &self,
        kind: LedgerKind,
        summary: String,
        ledger: Result<serde_json::Value, serde_json::Error>,
    ) {
        self.ctx.emit_with(|| Event::Ledger {
            path: self.ctx.path().clone(),
            kind,
            summary,
            ledger: ledger.unwrap_or_default(),
        });
    }

    /// Tells the team the task ledger.
    fn tell_plan(&mut self, l: &TaskLedger) {
        let text = self.fill(
            prompts::PLAN_MESSAGE,
            &[("facts", &l.facts_text()), ("plan", &l.plan_text())],
        );
        self.say(Kind::Plan, text);
    }

    async fn task_ledger(&mut self, prompt: String) -> Result<TaskLedger, AgentError> {
        let schema = self.m.task_schema.clone();
        let answer = self
            .structured(Kind::TaskLedger, prompt, &schema, |_: &TaskLedger| Ok(()))
            .await?;
        Ok(answer.value)
    }

    /// Writes the progress ledger of `round` and reads the next speaker
    /// out of it (the fallback's, when the model could not name one) and
    /// the stalls counted with it (`stalls` before it).
    async fn progress(
        &mut self,
        round: u32,
        stalls: u32,
        resets: u32,
    ) -> Result<(ProgressLedger, String, u32), AgentError> {
        let candidates = self.m.candidates();
        let schema = self.m.progress_schema.schema().to_string();
        let prompt = self.fill(prompts::PROGRESS_LEDGER, &[("schema", &schema)]);
        let schema = self.m.progress_schema.clone();
        let Answer {
            value: progress,
            json,
            unresolved,
        } = self
            .structured(
                Kind::ProgressLedger,
                prompt,
                &schema,
                |p: &ProgressLedger| {
                    if p.is_request_satisfied.answer {
                        return Ok(());
                    }
                    match parse_speaker(&p.next_speaker.answer, &candidates) {
                        SpeakerMatch::One(_) => Ok(()),
                        other => Err(correction(&other, &candidates)),
                    }
                },
            )
            .await?;
        let speaker = match parse_speaker(&progress.next_speaker.answer, &candidates) {
            SpeakerMatch::One(one) => one,
            _ if progress.is_request_satisfied.answer => String::new(),
            _ => self.fallback(&progress, unresolved.as_deref())?,
        };
        let stalls = if progress.is_request_satisfied.answer {
            stalls
        } else if progress.stalled() {
            stalls + 1
        } else {
            stalls.saturating_sub(1)
        };
        let s = &self.m.settings;
        let counters = format!(
            "round {round}/{}, stalls {stalls}/{}, resets {resets}/{}",
            s.max_turns, s.max_stalls, s.max_resets
        );
        self.emit(
            LedgerKind::Progress,
            progress.summary(&counters),
            serde_json::to_value(&progress),
        );
        let mut m = self
            .message(Kind::ProgressLedger, json)
            .with_metadata(ROUND, round.to_string())
            .with_metadata(STALLS, stalls.to_string());
        if unresolved.is_some() {
            m.metadata.insert(BY.into(), "fallback".into());
        }
        self.new.push(m);
        Ok((progress, speaker, stalls))
    }

    /// The speaker the fallback policy picks when the model named none.
    fn fallback(&self, progress: &ProgressLedger, why: Option<&str>) -> Result<String, AgentError> {
        let names: Vec<String> = self.m.roles.iter().map(|(n, _)| n.clone()).collect();
        let previous = self
            .view
            .current
            .iter()
            .rev()
            .find(|m| names.iter().any(|n| *n == *m.source))
            .map(|m| m.source.to_string());
        let Some(speaker) = fallback_speaker(
            self.m.settings.fallback,
            previous.as_deref(),
            &names,
            &names,
        ) else {
            return Err(AgentError::failed(format!(
                "the manager's model named no valid next speaker in {} attempts (last answer: '{}'; {}; valid: {})",
                self.m.settings.max_attempts,
                progress.next_speaker.answer,
                why.unwrap_or("unclear"),
                self.m.candidates().join(", ")
            )));
        };
        self.ctx.emit_with(|| Event::Warning {
            path: self.ctx.path().clone(),
            text: format!(
                "the model named no valid speaker in {} attempts ('{}'); '{speaker}' speaks",
                self.m.settings.max_attempts, progress.next_speaker.answer
            ),
        });
        Ok(speaker)
    }

    /// The request for a model call: the system message, the manager's
    /// earlier exchanges (its thread's and this turn's), `prompt`, and the
    /// answers rejected so far in this call with what was wrong.
    fn request(&self, prompt: &str, live: &[Message]) -> Vec<ChatMessage> {
        let me = self.m.name.as_str();
        let mut messages = vec![ChatMessage::system(prompts::SYSTEM)];
        messages.extend(exchanges(
            me,
            self.view.all.iter().map(|m| &**m).chain(self.new.iter()),
        ));
        messages.push(ChatMessage::user(prompt));
        for r in live {
            messages.push(ChatMessage::assistant(r.text_content().into_owned()));
            messages.push(ChatMessage::user(
                r.metadata.get(CORRECTION).cloned().unwrap_or_default(),
            ));
        }
        messages
    }

    async fn call(&self, request: ChatRequest) -> Result<String, AgentError> {
        // Metered and priced as any agent's call: events, usage, cost.
        let response = complete_metered(&*self.m.model, &request, self.ctx)
            .await
            .map_err(|e| AgentError::model(e.to_string()).with_source(e))?;
        Ok(response.text_content().to_string())
    }

    /// Asks the model for a `kind` ledger matching `schema` and passing
    /// `check`, telling it what is wrong and asking again up to
    /// `max_attempts` times. Keeps the rejected answers in the thread (so
    /// later requests show the exchange as it was); the caller keeps the
    /// ledger. A ledger that matches the schema but fails `check` at every
    /// attempt is returned with the last complaint (the caller falls back,
    /// and keeps it marked as not the model's answer); one that never
    /// matches fails the turn.
    async fn structured<T: DeserializeOwned>(
        &mut self,
        kind: Kind,
        prompt: String,
        schema: &StructuredOutput,
        check: impl Fn(&T) -> Result<(), String>,
    ) -> Result<Answer<T>, AgentError> {
        let me = self.m.name.clone();
        let mut live: Vec<Message> = Vec::new();
        let mut last_checked: Option<(T, String, String)> = None;
        let mut last_why = String::new();
        for _ in 0..self.m.settings.max_attempts {
            let request = ChatRequest::new(self.request(&prompt, &live))
                .with_response_format(schema.response_format());
            let text = self.call(request).await?;
            let why = match schema.parse(&text) {
                Ok(json) => match serde_json::from_str::<T>(&json) {
                    Ok(value) => match check(&value) {
                        Ok(()) => {
                            self.new.append(&mut live);
                            return Ok(Answer {
                                value,
                                json,
                                unresolved: None,
                            });
                        }
                        Err(why) => {
                            last_checked = Some((value, json, why.clone()));
                            why
                        }
                    },
                    Err(e) => format!("the answer does not match the schema ({e})."),
                },
                Err(e) => format!("{e}."),
            };
            last_why = why.clone();
            live.push(
                Message::text(me.as_str(), text)
                    .with_metadata(KIND, Kind::Rejected.as_str())
                    .with_metadata(FOR, kind.as_str())
                    .with_metadata(CORRECTION, format!("{why} Answer again.")),
            );
        }
        match last_checked {
            Some((value, json, why)) => {
                self.new.append(&mut live);
                Ok(Answer {
                    value,
                    json,
                    unresolved: Some(why),
                })
            }
            None => Err(AgentError::failed(format!(
                "the manager's model gave no valid {} in {} attempts: {last_why}",
                kind.as_str().replace('_', " "),
                self.m.settings.max_attempts
            ))),
        }
    }

    /// Writes the final answer (`outcome` says why the task ends).
    async fn finish(&mut self, outcome: Outcome) -> Result<Reply, AgentError> {
        let s = &self.m.settings;
        let status = match outcome {
            Outcome::Satisfied => "We have completed the task.".to_string(),
            Outcome::MaxTurns => format!(
                "We stopped after {} rounds (max_turns) without completing the task.",
                s.max_turns
            ),
            Outcome::MaxResets => format!(
                "We stopped: the team stalled again after {} replans (max_resets) without completing the task.",
                s.max_resets
            ),
        };
        let prompt = self.fill(&s.final_answer_prompt, &[("status", &status)]);
        let text = self
            .call(ChatRequest::new(self.request(&prompt, &[])))
            .await?;
        let m = self
            .message(Kind::FinalAnswer, text)
            .with_metadata(OUTCOME, outcome.as_str());
        self.new.push(m);
        Ok(self.reply())
    }

    /// Ends the turn asking the user (`kind` says what about).
    fn ask(&mut self, kind: Kind, question: String) -> Reply {
        self.say(kind, question.clone());
        self.reply().with_request(question)
    }

    /// The turn's messages as a reply: the ledgers and markers private,
    /// the rest for the team.
    fn reply(&mut self) -> Reply {
        let me = self.m.name.as_str();
        let (public, private): (Vec<Message>, Vec<Message>) = std::mem::take(&mut self.new)
            .into_iter()
            .partition(|m| kind_of(me, m).is_some_and(Kind::is_public));
        Reply::from(public).with_private(private)
    }
}

/// Whether a plan-review answer approves the plan as it is.
fn approves(answer: &str) -> bool {
    let a = answer.trim().trim_end_matches(['.', '!']).to_lowercase();
    matches!(
        a.as_str(),
        "" | "approve" | "approved" | "ok" | "okay" | "yes" | "y" | "lgtm" | "go" | "go ahead"
    )
}
