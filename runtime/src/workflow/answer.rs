//! Answering a question an agent asked the caller: the answer joins the
//! thread as input tagged with the request's id, and the run that takes it
//! in (`run/setup.rs`) delivers it to the asking participant instead of
//! routing it. An agent asking from inside a nested workflow is known to
//! the run above by a longer id (the nested workflow's name, `/`, the id it
//! has there): that run delivers the answer to the nested workflow, whose
//! next run delivers it on — at any depth.

use std::sync::Arc;

use crate::error::CheckpointError;
use crate::message::Message;
use crate::resumable::request::InputRequest;
use crate::thread::Thread;

/// The metadata key an answer carries the request's id under.
pub(crate) const ANSWER_KEY: &str = "troupe.request";

/// The input requests pending in a thread.
pub(crate) fn pending_requests(thread: &Thread) -> Vec<InputRequest> {
    thread
        .state()
        .map(|s| s.scheduler.requests().to_vec())
        .unwrap_or_default()
}

/// The position among `requests` of the one `message` answers, if any:
/// it is tagged with the request's id — or, coming from a run above, with
/// an id that ends in `/` and the request's id.
pub(crate) fn answered(requests: &[InputRequest], message: &Message) -> Option<usize> {
    let tag = message.metadata.get(ANSWER_KEY)?;
    requests.iter().position(|r| {
        tag == &r.id
            || tag
                .strip_suffix(r.id.as_str())
                .is_some_and(|above| above.ends_with('/'))
    })
}

/// Appends the caller's answer to request `request_id` of run `run_id` to
/// `thread`, as input the next run over it delivers to the asking agent.
/// The answer is not the run's output: a run carrying on from counters
/// left in the thread lists only what comes after it.
pub(crate) fn deliver(
    thread: &mut Thread,
    run_id: &str,
    request_id: &str,
    answer: String,
) -> Result<(), CheckpointError> {
    let requests = thread.state().map_or(&[][..], |s| s.scheduler.requests());
    if !requests.iter().any(|r| r.id == request_id) {
        return Err(CheckpointError::UnknownRequest {
            run_id: run_id.to_string(),
            request: request_id.to_string(),
            pending: if requests.is_empty() {
                "none".into()
            } else {
                requests
                    .iter()
                    .map(|r| r.id.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            },
        });
    }
    let message = Arc::new(Message::user(answer).with_metadata(ANSWER_KEY, request_id));
    thread.push_shared(message);
    let len = thread.len();
    if let Some(counters) = thread
        .state_mut()
        .as_mut()
        .and_then(|s| s.scheduler.body_mut().counters.as_mut())
    {
        counters.start_len = len;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(id: &str) -> InputRequest {
        InputRequest {
            id: id.into(),
            agent: "a".into(),
            prompt: "?".into(),
        }
    }

    #[test]
    fn an_answer_matches_its_request_by_id_or_by_the_longer_id_of_a_run_above() {
        let requests = [request("clerk-1"), request("team/clerk-2")];
        let tagged = |tag: &str| Message::user("x").with_metadata(ANSWER_KEY, tag);
        assert_eq!(answered(&requests, &tagged("clerk-1")), Some(0));
        assert_eq!(answered(&requests, &tagged("team/clerk-2")), Some(1));
        assert_eq!(answered(&requests, &tagged("outer/team/clerk-2")), Some(1));
        assert_eq!(answered(&requests, &tagged("outer/clerk-1")), Some(0));
        // Only a whole id after a '/' matches.
        assert_eq!(answered(&requests, &tagged("xclerk-1")), None);
        assert_eq!(answered(&requests, &tagged("clerk-3")), None);
        assert_eq!(answered(&requests, &Message::user("untagged")), None);
    }
}
