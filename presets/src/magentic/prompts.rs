//! The Magentic manager's prompts, after AutoGen's MagenticOne
//! orchestrator, so teams moved over behave alike. Placeholders:
//! `{task}`, `{team}`, `{names}`, `{history}`, `{ledger}`, `{status}`,
//! `{facts}`, `{plan}`.

/// The manager's system message.
pub(crate) const SYSTEM: &str = "You are the manager of a team of AI agents. You keep a ledger of facts and a plan for the task, check the team's progress after every turn, and decide who speaks next.";

/// Asks for the first task ledger.
pub(crate) const TASK_LEDGER: &str = "Below I will present you a request. Before we begin addressing the request, please answer the following pre-survey to the best of your ability, then make a plan. Keep in mind that you are Ken Jennings-level with trivia, and Mensa-level with puzzles, so there should be a deep well to draw from.

Here is the request:

{task}

To address it we have assembled the following team:

{team}

Fill in:
- facts_given: specific facts or figures given in the request itself;
- facts_to_look_up: facts that may need to be looked up, and where;
- facts_to_derive: facts that may need to be derived (computation, deduction);
- educated_guesses: facts recalled from memory, hunches, well-reasoned guesses;
- plan: a short plan to address the request, one step an item; a step may name the team member who does it.

Please output an answer in pure JSON format according to the following schema. The JSON object must be parsable as-is. DO NOT OUTPUT ANYTHING OTHER THAN JSON, AND DO NOT DEVIATE FROM THIS SCHEMA:

{schema}";

/// Asks for a new task ledger after the team stalled.
pub(crate) const REPLAN: &str = "As a reminder, we are working to solve the following request:

{task}

Our team:

{team}

Here is the conversation so far:

{history}

It's clear we aren't making as much progress as we would like, but we may have learned something new. Here is the old ledger:

{ledger}

Please rewrite it: update the facts with anything new we learned (move educated guesses to verified facts if appropriate, and revise guesses), and come up with a new plan that overcomes the prior challenges and helps avoid repeating the same mistakes.

Please output an answer in pure JSON format according to the following schema. The JSON object must be parsable as-is. DO NOT OUTPUT ANYTHING OTHER THAN JSON, AND DO NOT DEVIATE FROM THIS SCHEMA:

{schema}";

/// Asks for a progress ledger.
pub(crate) const PROGRESS_LEDGER: &str = "Recall we are working on the following request:

{task}

And we have assembled the following team:

{team}

Here is the conversation so far:

{history}

To make progress on the request, please answer the following questions, including necessary reasoning:

- is_request_satisfied: Is the request fully satisfied? (True if complete, or False if the original request has yet to be SUCCESSFULLY and FULLY addressed)
- is_in_loop: Are we in a loop where we are repeating the same requests and / or getting the same responses as before? Loops can span multiple turns.
- is_progress_being_made: Are we making forward progress? (True if just starting, or recent messages are adding value. False if recent messages show evidence of being stuck in a loop or if there is evidence of significant barriers to success)
- next_speaker: Who should speak next? (select from: {names})
- instruction_or_question: What instruction or question would you give this team member? (Phrase as if speaking directly to them, and include any specific information they may need)

Please output an answer in pure JSON format according to the following schema. The JSON object must be parsable as-is. DO NOT OUTPUT ANYTHING OTHER THAN JSON, AND DO NOT DEVIATE FROM THIS SCHEMA:

{schema}";

/// What the team is told of the (new) task ledger.
pub(crate) const PLAN_MESSAGE: &str = "We are working to address the following user request:

{task}

To answer this request we have assembled the following team:

{team}

Here is an initial fact sheet to consider:

{facts}

Here is the plan to follow as best as possible:

{plan}";

/// What the user is asked when the plan is up for review.
pub(crate) const PLAN_REVIEW: &str = "Here is the plan for your request:

{plan}

Reply `approve` to start, or send the plan as you want it, one step a line.";

/// The default final-answer prompt; `{status}` says whether the task was
/// completed or why the team stopped.
pub(crate) const FINAL_ANSWER: &str = "We are working on the following task:
{task}

{status}

Here is the conversation that took place:

{history}

Based on the information gathered, provide the final answer to the original request.
The answer should be phrased as if you were speaking to the user.";

/// Fills `template`'s placeholders (`{name}`) from `values` in one pass,
/// so a value that holds braces is left as it is; unknown placeholders
/// stay as written.
pub(crate) fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        out.push_str(&rest[..open]);
        let after = &rest[open + 1..];
        let hit = after.find('}').and_then(|close| {
            let key = &after[..close];
            values
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| (close, *v))
        });
        match hit {
            Some((close, value)) => {
                out.push_str(value);
                rest = &after[close + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn fills_in_one_pass() {
        assert_eq!(
            super::fill("{a} and {b} {c}", &[("a", "{b}"), ("b", "x")]),
            "{b} and x {c}"
        );
    }
}
