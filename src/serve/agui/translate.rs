//! From troupe's run events to AG-UI's, one at a time:
//!
//! - each agent's turn is a step named by its path (`press/drafting/writer`),
//!   and a nested team's run a step around its agents' (`press/drafting`);
//! - the answering agent's words (`answer:`, or the one participant) are a
//!   text message per turn, streamed as its model writes them (the rest of
//!   its message, or all of it when the model does not stream, when the
//!   turn's message is produced);
//! - every tool call (any agent's) is `TOOL_CALL_START/ARGS/END`, its
//!   result `TOOL_CALL_RESULT`;
//! - the run's state changes go as `STATE_DELTA`s (`state.rs`).
//!
//! Ids are made unique within the AG-UI run: a tool call id the model
//! reused gets a suffix, and its result follows the latest call of that id.
//! A question asked about a tool call (`ask_user`'s, an approval's) is
//! linked to the call, so its interrupt can name it (`toolCallId`).

use std::collections::HashMap;

use serde_json::Value;
use troupe::Event;

use super::state::RunState;
use super::wire;

/// What a stream has said so far, to say the next events consistently.
pub(crate) struct Translator {
    /// The team's name (the top workflow's path).
    team: String,
    /// The paths whose words are the answer.
    answering: Vec<String>,
    /// The prefix of the ids this run makes.
    prefix: String,
    /// How many ids were made.
    made: u64,
    /// The answering agent's message open: its path, id, and the words
    /// sent of the turn.
    open: Option<(String, String, String)>,
    /// Steps open, oldest first.
    steps: Vec<String>,
    /// Tool call ids sent, by the id the model gave.
    calls: HashMap<String, String>,
    /// Calls sent and not answered yet: the caller's path, the id sent,
    /// the call.
    unanswered: Vec<(String, String, troupe::message::ToolCall)>,
    /// Questions asked about a call: the request id, the call's id sent,
    /// whether it asks for an approval.
    links: HashMap<String, (String, bool)>,
    /// Whether any of the answer's words were sent.
    pub(crate) answered: bool,
    /// The shared state.
    pub(crate) state: RunState,
}

impl Translator {
    /// A translator for a run of `team` whose answer is `answering`'s
    /// words; the ids it makes start with `prefix`.
    pub(crate) fn new(team: &str, answering: Vec<String>, prefix: &str, state: RunState) -> Self {
        Translator {
            team: team.to_string(),
            answering,
            prefix: prefix.to_string(),
            made: 0,
            open: None,
            steps: Vec::new(),
            calls: HashMap::new(),
            unanswered: Vec::new(),
            links: HashMap::new(),
            answered: false,
            state,
        }
    }

    fn id(&mut self, kind: &str) -> String {
        self.made += 1;
        format!("{}-{kind}-{}", self.prefix, self.made)
    }

    /// The AG-UI events a troupe event makes (often none).
    pub(crate) fn take(&mut self, event: Event) -> Vec<Value> {
        match event {
            Event::RunStarted { path, .. } if *path != *self.team => self.step_start(&path),
            Event::RunFinished { path, .. } if *path != *self.team => self.step_end(&path),
            Event::AgentStarted { path, .. } => {
                // A message of its last turn left open (none produced).
                let mut out = self.close_text(&path);
                out.extend(self.step_start(&path));
                out.extend(self.delta_of(|s| s.started(&path)));
                out
            }
            // The turn's message, produced after, closes its text.
            Event::AgentFinished { path, .. } => {
                let mut out = self.delta_of(|s| s.ended(&path, "done"));
                out.extend(self.step_end(&path));
                out
            }
            Event::AgentFailed { path, .. } => {
                let mut out = self.close_text(&path);
                out.extend(self.delta_of(|s| s.ended(&path, "failed")));
                out.extend(self.step_end(&path));
                out
            }
            Event::TextDelta { path, text } if !text.is_empty() && self.answers(&path) => {
                self.words(&path, &text)
            }
            Event::MessageProduced { path, message } if self.answers(&path) => {
                let text = message.text_content();
                let sent = match &self.open {
                    Some((p, _, sent)) if **p == *path => sent.clone(),
                    _ => String::new(),
                };
                let mut out = match text.strip_prefix(sent.as_str()) {
                    Some(rest) if !rest.is_empty() => self.words(&path, rest),
                    _ => Vec::new(),
                };
                out.extend(self.close_text(&path));
                out
            }
            Event::ToolCall { path, call } => {
                let id = if self.calls.contains_key(&call.id) {
                    let n = self.id("call");
                    format!("{}-{n}", call.id)
                } else {
                    call.id.clone()
                };
                self.calls.insert(call.id.clone(), id.clone());
                let mut out = vec![wire::tool_start(&id, &call.name)];
                self.unanswered
                    .push((path.to_string(), id.clone(), call.clone()));
                if !call.arguments.is_empty() {
                    out.push(wire::tool_args(&id, &call.arguments));
                }
                out.push(wire::tool_end(&id));
                out.extend(self.delta_of(RunState::tool_called));
                out
            }
            Event::ToolResult { result, .. } => match self.calls.remove(&result.call_id) {
                // A result of a call made in an earlier run (answered
                // through `resume`) has no call here to refer to.
                Some(id) => {
                    self.unanswered.retain(|(_, sent, _)| *sent != id);
                    let message = self.id("result");
                    vec![wire::tool_result(&message, &id, &result.content)]
                }
                None => Vec::new(),
            },
            Event::InputRequested {
                path,
                request,
                prompt,
            } => {
                self.link(&path, request, &prompt);
                Vec::new()
            }
            _ => Vec::new(),
        }
    }

    /// Links question `request` of the agent at `path` to the call it asks
    /// about: its latest unanswered `ask_user` call, or the call whose
    /// approval `prompt` asks for.
    fn link(&mut self, path: &str, request: String, prompt: &str) {
        let found = self.unanswered.iter().rev().find_map(|(p, id, call)| {
            if p != path {
                return None;
            }
            if prompt == format!("approve {}({})? yes/no", call.name, call.arguments) {
                Some((id.clone(), true))
            } else if call.name == "ask_user" {
                Some((id.clone(), false))
            } else {
                None
            }
        });
        if let Some((id, approval)) = found {
            self.unanswered.retain(|(_, sent, _)| *sent != id);
            self.links.insert(request, (id, approval));
        }
    }

    /// The call question `request` asks about, and whether it asks for an
    /// approval.
    pub(crate) fn linked(&self, request: &str) -> Option<&(String, bool)> {
        self.links.get(request)
    }

    /// Whether `path` is an answering agent's.
    fn answers(&self, path: &str) -> bool {
        self.answering.iter().any(|a| a == path)
    }

    /// A `STATE_DELTA` of what `change` did to the state (none if nothing).
    fn delta_of(&mut self, change: impl FnOnce(&mut RunState) -> Vec<Value>) -> Vec<Value> {
        let ops = change(&mut self.state);
        if ops.is_empty() {
            Vec::new()
        } else {
            vec![wire::state_delta(ops)]
        }
    }

    /// `text` of the answering agent at `path`: the next piece of its open
    /// message (opened here when it is the turn's first).
    fn words(&mut self, path: &str, text: &str) -> Vec<Value> {
        let mut out = Vec::new();
        if self.open.as_ref().is_some_and(|(p, _, _)| p != path) {
            let other = self.open.as_ref().map(|(p, _, _)| p.clone());
            if let Some(other) = other {
                out.extend(self.close_text(&other));
            }
        }
        if self.open.is_none() {
            let id = self.id("msg");
            out.push(wire::text_start(&id, path));
            self.open = Some((path.to_string(), id, String::new()));
        }
        if let Some((_, id, sent)) = &mut self.open {
            sent.push_str(text);
            out.push(wire::text_content(id, text));
        }
        self.answered = true;
        out
    }

    /// Ends the message open for `path`, if any.
    fn close_text(&mut self, path: &str) -> Vec<Value> {
        match self.open.take() {
            Some((p, id, _)) if p == path => vec![wire::text_end(&id)],
            other => {
                self.open = other;
                Vec::new()
            }
        }
    }

    /// The whole answer as one message (when none of it was streamed).
    pub(crate) fn whole(&mut self, text: &str) -> Vec<Value> {
        if text.is_empty() {
            return Vec::new();
        }
        let id = self.id("msg");
        self.answered = true;
        vec![
            wire::text_start(&id, &self.team),
            wire::text_content(&id, text),
            wire::text_end(&id),
        ]
    }

    fn step_start(&mut self, name: &str) -> Vec<Value> {
        if self.steps.iter().any(|s| s == name) {
            return Vec::new();
        }
        self.steps.push(name.to_string());
        vec![wire::step(true, name)]
    }

    fn step_end(&mut self, name: &str) -> Vec<Value> {
        match self.steps.iter().rposition(|s| s == name) {
            Some(at) => {
                self.steps.remove(at);
                vec![wire::step(false, name)]
            }
            None => Vec::new(),
        }
    }

    /// Closes what is still open (a message, steps, newest first) before
    /// the run's last event.
    pub(crate) fn close_all(&mut self) -> Vec<Value> {
        let mut out = Vec::new();
        if let Some((_, id, _)) = self.open.take() {
            out.push(wire::text_end(&id));
        }
        while let Some(s) = self.steps.pop() {
            out.push(wire::step(false, &s));
        }
        out
    }
}
