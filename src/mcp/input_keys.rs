//! The keys a stateless (2026-07-28) client answers a run's questions by:
//! each question is keyed by the asking agent's name — `agent_2`,
//! `agent_3`… when one agent asks several at once — so a client (or a
//! test) can answer by a name it knows, also when it calls again without
//! the `requestState` (the run is then started again and its questions
//! answered from `inputResponses`).

use troupe::InputRequest;

/// `requests` with their keys, in order.
pub(super) fn keyed(requests: &[InputRequest]) -> Vec<(String, &InputRequest)> {
    let mut out: Vec<(String, &InputRequest)> = Vec::with_capacity(requests.len());
    for q in requests {
        let base = clean(&q.agent);
        let mut key = base.clone();
        let mut n = 2;
        while out.iter().any(|(k, _)| *k == key) {
            key = format!("{base}_{n}");
            n += 1;
        }
        out.push((key, q));
    }
    out
}

/// An agent's name in the characters of a key.
fn clean(agent: &str) -> String {
    let key: String = agent
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if key.is_empty() {
        "question".into()
    } else {
        key
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(id: &str, agent: &str) -> InputRequest {
        InputRequest {
            id: id.into(),
            agent: agent.into(),
            prompt: "?".into(),
        }
    }

    #[test]
    fn questions_are_keyed_by_their_agent_and_numbered_when_it_asks_several() {
        let asked = [q("a1", "user_name"), q("a2", "clerk"), q("a3", "clerk")];
        let keys: Vec<String> = keyed(&asked).into_iter().map(|(k, _)| k).collect();
        assert_eq!(keys, ["user_name", "clerk", "clerk_2"]);
        assert_eq!(keyed(&[q("x", "the desk")])[0].0, "the_desk");
    }
}
