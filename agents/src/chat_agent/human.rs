//! Tool calls that wait for the user: the built-in `ask_user` tool, and
//! tools that need approval. A round holding such calls ends the turn with
//! an input request (one at a time); the next turn finds the round in the
//! agent's thread, turns the caller's answer into the call's result, and
//! goes on with the tool loop.

use std::sync::Arc;

use serde::Deserialize;
use troupe_runtime::{
    AgentError, Content, Event, Message, Reply, RunContext, Thread, message::ToolCall,
    message::ToolResult,
};

use super::tool_round::Ran;
use super::{ChatAgent, ToolMessages};
use crate::conversation::{is_answer, is_tool_round};
use crate::model::ToolDefinition;
use crate::tool::{ASK_USER, parse_arguments};

/// The arguments of an `ask_user` call.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Question {
    question: String,
}

/// The definition of the `ask_user` tool the model sees.
pub(super) fn ask_user_definition() -> ToolDefinition {
    ToolDefinition {
        name: ASK_USER.to_string(),
        description: "Ask the user a question and wait for the answer. Use it when you \
                      need information or a decision only the user can give."
            .to_string(),
        parameters: serde_json::json!({
            "type": "object",
            "properties": {
                "question": {
                    "type": "string",
                    "description": "The question, complete enough to answer on its own."
                }
            },
            "required": ["question"],
            "additionalProperties": false
        }),
    }
}

/// The question of an `ask_user` call, or why its arguments make no sense.
fn question_of(call: &ToolCall) -> Result<String, String> {
    let value = parse_arguments(&call.name, &call.arguments).map_err(|e| e.to_string())?;
    let Question { question } = serde_json::from_value(value)
        .map_err(|e| format!("{ASK_USER} takes {{\"question\": string}}: {e}"))?;
    if question.trim().is_empty() {
        return Err(format!("{ASK_USER} needs a non-empty question"));
    }
    Ok(question)
}

/// Whether the caller's answer approves a call: `yes`, `y`, `ok`,
/// `approve` or `approved`, in any case, a trailing `.` or `!` allowed.
pub(crate) fn approves(answer: &str) -> bool {
    let word = answer
        .trim()
        .trim_end_matches(['.', '!'])
        .trim()
        .to_lowercase();
    matches!(word.as_str(), "yes" | "y" | "ok" | "approve" | "approved")
}

/// A round of tool calls the agent's last turn left waiting for the user.
pub(super) struct Pending {
    /// The first call not answered yet: the one the caller was asked about.
    first: ToolCall,
    /// The other calls not answered yet, in the model's order.
    rest: Vec<ToolCall>,
    /// The caller's answer, when it has arrived.
    answer: Option<String>,
    /// Every answer since the round's last message, oldest first: what a
    /// call that asked (maybe more than once) is given when it runs again.
    answers: Vec<String>,
}

/// The round `me`'s last turn left waiting, if it did: its last own
/// message is a tool round (a finished turn ends on its answer), and some
/// of that round's calls have no result yet.
pub(super) fn pending_round(me: &str, thread: &Thread) -> Option<Pending> {
    let messages = thread.messages();
    let last_own = messages.iter().rposition(|m| &*m.source == me)?;
    if !is_tool_round(me, &messages[last_own]) {
        return None;
    }
    let answers: Vec<String> = messages[last_own + 1..]
        .iter()
        .filter(|m| is_answer(m))
        .map(|m| m.text_content().into_owned())
        .collect();
    let answer = answers.last().cloned();
    let mut answered = std::collections::HashSet::new();
    for m in messages[..=last_own].iter().rev() {
        if &*m.source != me {
            continue;
        }
        match &m.content {
            Content::ToolResults(results) => {
                answered.extend(results.iter().map(|r| r.call_id.clone()));
            }
            Content::ToolCalls(calls) => {
                let mut unanswered = calls.iter().filter(|c| !answered.contains(&c.id));
                let first = unanswered.next()?.clone();
                return Some(Pending {
                    first,
                    rest: unanswered.cloned().collect(),
                    answer,
                    answers,
                });
            }
            _ => return None,
        }
    }
    None
}

/// What a turn that found a waiting round does next.
pub(super) enum Resumed {
    /// Ask the caller (again, or about the next call): the turn ends.
    Ask(Box<Reply>),
    /// Every call has its result (this message): the tool loop goes on.
    Continue(Message),
}

impl ChatAgent {
    /// Whether `call` waits for the user: an `ask_user` call with a
    /// question, or a call of a tool that needs approval. (An `ask_user`
    /// call with senseless arguments is answered at once with the error.)
    pub(super) fn waits_for_user(&self, call: &ToolCall) -> bool {
        if self.ask_user && call.name == ASK_USER {
            return question_of(call).is_ok();
        }
        self.tool_index
            .get(&call.name)
            .is_some_and(|&i| self.tools[i].needs_approval())
    }

    /// The result of an `ask_user` call that cannot be asked.
    pub(super) fn ask_user_error(&self, call: &ToolCall) -> Option<ToolResult> {
        if !self.ask_user || call.name != ASK_USER {
            return None;
        }
        let why = question_of(call).err()?;
        Some(ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: format!("Error: {why}"),
            is_error: true,
            memory: None,
        })
    }

    /// The question the caller is asked about `call`.
    pub(super) fn question_about(&self, call: &ToolCall) -> String {
        self.question(call)
    }

    /// The question the caller is asked about `call`.
    fn question(&self, call: &ToolCall) -> String {
        match question_of(call) {
            Ok(question) if self.ask_user && call.name == ASK_USER => question,
            _ => format!("approve {}({})? yes/no", call.name, call.arguments),
        }
    }

    /// The reply of a turn that stops to ask the caller about `call`;
    /// `produced` (the round so far) goes to the agent's thread, each
    /// message keeping its own usage (there is no answer to carry it).
    pub(super) fn ask_about(&self, call: &ToolCall, produced: Vec<Message>) -> Reply {
        let question = self.question(call);
        let reply = match self.tool_messages {
            ToolMessages::Private => Reply::empty().with_private(produced),
            ToolMessages::Reply => Reply::from(produced),
        };
        reply.with_request(question)
    }

    /// The reply of a turn that stops because a tool call asked the user
    /// `question` (the call runs again with the answer).
    pub(super) fn ask_for_tool(&self, question: String, produced: Vec<Message>) -> Reply {
        let reply = match self.tool_messages {
            ToolMessages::Private => Reply::empty().with_private(produced),
            ToolMessages::Reply => Reply::from(produced),
        };
        reply.with_request(question)
    }

    /// Settles the waiting round `pending`: the caller's answer becomes
    /// the first unanswered call's result (an approved call runs now), and
    /// the next waiting call, if any, is asked about.
    pub(super) async fn resume_round(
        &self,
        pending: Pending,
        thread: &Arc<Thread>,
        ctx: &RunContext,
    ) -> Result<Resumed, AgentError> {
        let Pending {
            first,
            rest,
            answer,
            answers,
        } = pending;
        if !(self.waits_for_user(&first) || (self.ask_user && first.name == ASK_USER)) {
            // The call itself asked (an MCP elicitation): it runs again
            // with every answer so far, and may ask again (resumed without
            // a new answer, it asks its question again).
            match self
                .run_tool_answered(&first, thread.clone(), ctx, answers)
                .await?
            {
                Ran::Done(result) => {
                    return self.settle_rest(vec![result], rest, thread, ctx).await;
                }
                Ran::Asks(question) => {
                    return Ok(Resumed::Ask(Box::new(
                        self.ask_for_tool(question, Vec::new()),
                    )));
                }
            }
        }
        let Some(answer) = answer else {
            // Resumed without an answer: the question stands.
            return Ok(Resumed::Ask(Box::new(self.ask_about(&first, Vec::new()))));
        };
        let results = vec![self.settle(&first, &answer, thread, ctx).await?];
        self.settle_rest(results, rest, thread, ctx).await
    }

    /// Runs the round's calls after the settled ones (`results`), up to
    /// the next that waits for the user.
    async fn settle_rest(
        &self,
        mut results: Vec<ToolResult>,
        rest: Vec<ToolCall>,
        thread: &Arc<Thread>,
        ctx: &RunContext,
    ) -> Result<Resumed, AgentError> {
        let mut next = None;
        for call in rest {
            if self.waits_for_user(&call) {
                next = Some(self.question(&call));
                break;
            }
            // Does not wait (the agent changed since it asked): runs now.
            match self
                .run_tool_answered(&call, thread.clone(), ctx, Vec::new())
                .await?
            {
                Ran::Done(result) => results.push(result),
                Ran::Asks(question) => {
                    next = Some(question);
                    break;
                }
            }
        }
        for result in &results {
            ctx.emit_with(|| Event::ToolResult {
                path: ctx.path().clone(),
                result: result.clone(),
            });
        }
        let settled = Message::new(self.name.clone(), Content::ToolResults(results));
        Ok(match next {
            Some(question) => Resumed::Ask(Box::new(self.ask_for_tool(question, vec![settled]))),
            None => Resumed::Continue(settled),
        })
    }

    /// The result of `call` given the caller's `answer`.
    async fn settle(
        &self,
        call: &ToolCall,
        answer: &str,
        thread: &Arc<Thread>,
        ctx: &RunContext,
    ) -> Result<ToolResult, AgentError> {
        if self.ask_user && call.name == ASK_USER {
            return Ok(ToolResult {
                call_id: call.id.clone(),
                name: call.name.clone(),
                content: answer.to_string(),
                is_error: false,
                memory: None,
            });
        }
        if approves(answer) {
            return match self
                .run_tool_answered(call, thread.clone(), ctx, Vec::new())
                .await?
            {
                Ran::Done(result) => Ok(result),
                Ran::Asks(question) => Ok(ToolResult {
                    call_id: call.id.clone(),
                    name: call.name.clone(),
                    content: format!(
                        "Error: the approved call asked the user something it cannot be asked in the same round: {question}"
                    ),
                    is_error: true,
                    memory: None,
                }),
            };
        }
        Ok(ToolResult {
            call_id: call.id.clone(),
            name: call.name.clone(),
            content: format!(
                "The user denied this call of {}; it did not run. The user said: {}",
                call.name,
                answer.trim()
            ),
            is_error: true,
            memory: None,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn approvals_and_denials() {
        for yes in ["yes", "Y", " ok ", "Approve", "APPROVED.", "yes!"] {
            assert!(approves(yes), "{yes}");
        }
        for no in ["no", "", "yes please", "nope", "okay then"] {
            assert!(!approves(no), "{no}");
        }
    }

    #[test]
    fn questions_need_a_question() {
        let call = |arguments: &str| ToolCall {
            id: "c".into(),
            name: ASK_USER.into(),
            arguments: arguments.into(),
        };
        assert_eq!(
            question_of(&call(r#"{"question":"Which city?"}"#)).unwrap(),
            "Which city?"
        );
        for bad in [
            "",
            "{}",
            r#"{"question":" "}"#,
            r#"{"q":"x"}"#,
            "{oops",
            r#"{"question":3}"#,
        ] {
            assert!(question_of(&call(bad)).is_err(), "{bad}");
        }
    }
}
