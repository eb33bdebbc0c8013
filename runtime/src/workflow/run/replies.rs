//! What a finished turn's reply changes: the participant's thread and the
//! run's, the messages routed on, the stop condition and questions to the
//! caller (its own, or those open in a nested run). What it changes in
//! the scheduling (a graph's transitions) is the scheduling's
//! (`Schedule::took`).

use std::sync::Arc;

use super::core::RunCore;
use crate::agent::Reply;
use crate::event::Event;
use crate::message::{Message, MessageId};
use crate::resumable::request::InputRequest;
use crate::resumable::status::RunStatus;
use crate::stop::Trigger;

/// What a reply applied leaves for the scheduling to take on: the
/// messages its turn produced, and the nodes it picked, if any.
pub(super) struct Applied {
    pub(super) produced: Vec<Arc<Message>>,
    pub(super) next: Option<Vec<String>>,
}

impl RunCore {
    /// Appends a finished turn's messages, routes them and checks the stop
    /// condition. Returns what the scheduling takes on from (see
    /// `Schedule::took`) — nothing while the turn waits for the caller's
    /// answer.
    pub(super) fn apply_reply(&mut self, index: usize, reply: Box<Reply>) -> Option<Applied> {
        self.tally.turns += 1;
        let name = self.spec.names[index].clone();
        let path = self.parts.ctx(index).path().clone();
        let state = self.threads.state_mut();
        state.turns += 1;
        // The speaker's name into the string already there: no allocation
        // (nor formatting) a turn.
        match &mut state.last_speaker {
            Some(last) => {
                if **last != *name {
                    last.clear();
                    last.push_str(&name);
                }
            }
            None => state.last_speaker = Some(String::from(&*name)),
        }
        let slot = self.spec.slot_of[index];
        self.threads.apply_state(&reply.state);
        if let Some(t) = reply.thread {
            self.threads.replace(slot, t);
        }
        if let Some(prompt) = &reply.request {
            let request = InputRequest {
                id: request_id(&name, MessageId::new()),
                agent: name.to_string(),
                prompt: prompt.clone(),
            };
            self.ctx.emit_with(|| Event::InputRequested {
                path: path.clone(),
                request: request.id.clone(),
                prompt: request.prompt.clone(),
            });
            self.tally.waiting.push(request);
            self.phase
                .stop_gracefully(RunStatus::WaitingForInput(Vec::new()));
        }
        let asks_inside = self.take_inner_requests(&name, &path, reply.inner_requests);
        if let Some(next) = &reply.next {
            self.ctx.emit_with(|| Event::Selected {
                path: path.clone(),
                next: next.clone(),
            });
        }
        for mut m in reply.private {
            m.source = name.clone();
            // A tool call kept in the agent's own thread still ends a run
            // waiting for it (`function_call`).
            if let Some(reason) = self.observe(Trigger::Inner(&m)) {
                self.phase.stop_gracefully(RunStatus::Stopped(reason));
            }
            self.threads.slot_mut(slot).push(m);
        }
        let mut produced = Vec::with_capacity(reply.messages.len());
        for mut m in reply.messages {
            m.source = name.clone();
            let m = Arc::new(m);
            self.threads.slot_mut(slot).push_shared(m.clone());
            self.threads.root_mut().push_shared(m.clone());
            self.ctx.emit_with(|| Event::MessageProduced {
                path: path.clone(),
                message: m.clone(),
            });
            if let Some(to) = m.handoff_target() {
                self.ctx.emit_with(|| Event::Handoff {
                    path: path.clone(),
                    to: to.to_string(),
                });
            }
            if let Some(reason) = self.observe(Trigger::Message {
                message: &m,
                produced: true,
            }) {
                self.phase.stop_gracefully(RunStatus::Stopped(reason));
            }
            if !self.spec.edge_delivery {
                self.inboxes.route(&self.spec, &self.ctx, &name, &m);
            }
            self.tally.produced.push(m.clone());
            if self.spec.answers(index) {
                self.tally.last = Some(m.clone());
            }
            produced.push(m);
        }
        // A turn that only steered (a selector's) is not a turn of the
        // conversation: it does not count towards max_turns.
        if !produced.is_empty()
            && let Some(reason) = self.observe(Trigger::Turn)
        {
            self.phase.stop_gracefully(RunStatus::Stopped(reason));
        }
        self.keep_history(slot);
        self.checkpoints.touch();
        // An agent waiting for the caller's answer goes nowhere yet: it
        // runs again once the answer arrives.
        if reply.request.is_some() || asks_inside {
            return None;
        }
        Some(Applied {
            produced,
            next: reply.next,
        })
    }

    /// Participant `name` (a nested run) reported the questions open
    /// inside it: they replace those it reported before, each under
    /// `name/` and its id there, so an id names the way down to the agent
    /// that asked; the run then waits for input. Returns whether any is
    /// open.
    fn take_inner_requests(
        &mut self,
        name: &str,
        path: &Arc<str>,
        inner: Vec<InputRequest>,
    ) -> bool {
        // Most replies come from agents with nothing open anywhere.
        if inner.is_empty()
            && self.tally.waiting.is_empty()
            && self.threads.state().scheduler.requests().is_empty()
        {
            return false;
        }
        let prefix = format!("{name}/");
        let mine = |r: &InputRequest| r.agent == name && r.id.starts_with(&prefix);
        let mut known: Vec<String> = Vec::new();
        let carried = self.threads.state().scheduler.requests();
        if carried.iter().any(mine) {
            let requests = &mut self.threads.state_mut().scheduler.body_mut().requests;
            known.extend(requests.iter().filter(|r| mine(r)).map(|r| r.id.clone()));
            requests.retain(|r| !mine(r));
        }
        known.extend(
            self.tally
                .waiting
                .iter()
                .filter(|r| mine(r))
                .map(|r| r.id.clone()),
        );
        self.tally.waiting.retain(|r| !mine(r));
        if inner.is_empty() {
            return false;
        }
        for r in inner {
            let request = InputRequest {
                id: format!("{prefix}{}", r.id),
                agent: name.to_string(),
                prompt: r.prompt,
            };
            if !known.contains(&request.id) {
                self.ctx.emit_with(|| Event::InputRequested {
                    path: path.clone(),
                    request: request.id.clone(),
                    prompt: request.prompt.clone(),
                });
            }
            self.tally.waiting.push(request);
        }
        self.phase
            .stop_gracefully(RunStatus::WaitingForInput(Vec::new()));
        true
    }
}

/// A question's id: the asking agent's name and twelve hex digits of a
/// fresh message id — six of its per-process random prefix and six of
/// its counter — so that ids made in one process differ, and a run
/// resumed in another process does not hand out an id still pending from
/// the first (short enough to type in `--answer ID=TEXT`).
fn request_id(agent: &str, id: MessageId) -> String {
    let hex = id.to_string();
    format!("{agent}-{}{}", &hex[..6], &hex[26..])
}

#[cfg(test)]
mod request_ids {
    use super::*;

    #[test]
    fn ids_of_one_process_differ_and_carry_its_prefix() {
        let a = request_id("clerk", MessageId::new());
        let b = request_id("clerk", MessageId::new());
        assert_ne!(a, b);
        assert_eq!(a.len(), "clerk-".len() + 12);
        // The prefix part is the process's: the same in both.
        assert_eq!(a[..12], b[..12]);
    }
}
