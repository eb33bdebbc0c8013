//! The Magentic preset with scripted managers: plans, progress checks,
//! replans on stalls, gives up at `max_resets`, plan review, questions to
//! the user, and a checkpoint/resume that equals the uninterrupted run.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use troupe_agents::model::ScriptPosition;
use troupe_agents::{ScriptedModel, ScriptedReply};
use troupe_presets::{Magentic, MagenticBuilder, ProgressLedger, SpeakerFallback, TaskLedger};
use troupe_runtime::{
    Event, FnAgent, Message, RunContext, RunResult, RunStatus, Thread, event::EventRecord,
    event::LedgerKind,
};

async fn guard<T>(f: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), f)
        .await
        .expect("the run hung")
}

fn task_ledger(facts: &[&str], plan: &[&str]) -> ScriptedReply {
    ScriptedReply::text(
        json!({
            "facts_given": facts,
            "facts_to_look_up": [],
            "facts_to_derive": [],
            "educated_guesses": ["it is on the web"],
            "plan": plan,
        })
        .to_string(),
    )
}

fn progress(done: bool, looping: bool, next: &str, say: &str) -> ScriptedReply {
    ScriptedReply::text(
        json!({
            "is_request_satisfied": {"reason": "checked", "answer": done},
            "is_in_loop": {"reason": "checked", "answer": looping},
            "is_progress_being_made": {"reason": "checked", "answer": !looping},
            "next_speaker": {"reason": "fits", "answer": next},
            "instruction_or_question": {"reason": "fits", "answer": say},
        })
        .to_string(),
    )
}

/// An agent that answers `text` followed by how many messages it has seen.
fn specialist(name: &'static str, text: &'static str) -> FnAgent {
    FnAgent::sync(name, move |_: &Thread| Ok(text.to_string()))
        .with_description(format!("the {name}"))
}

fn team(model: ScriptedModel) -> MagenticBuilder {
    Magentic::builder()
        .name("mag")
        .participant(specialist("researcher", "Rust 1.0 shipped on 2015-05-15."))
        .participant(specialist("writer", "Draft: Rust turned 1.0 in May 2015."))
        .model(Arc::new(model))
}

fn texts(r: &RunResult) -> Vec<String> {
    r.thread
        .messages()
        .iter()
        .map(|m| format!("{}: {}", m.source, m.text_content()))
        .collect()
}

fn sources(r: &RunResult) -> Vec<String> {
    r.thread
        .messages()
        .iter()
        .map(|m| m.source.to_string())
        .collect()
}

fn ledgers(events: Vec<EventRecord>) -> Vec<(LedgerKind, serde_json::Value)> {
    events
        .into_iter()
        .filter_map(|e| match e.into_event() {
            Event::Ledger { kind, ledger, .. } => Some((kind, ledger)),
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn two_specialists_solve_a_task_in_three_steps() {
    let model = ScriptedModel::new([
        task_ledger(
            &["the task asks when Rust 1.0 shipped"],
            &[
                "researcher finds the date",
                "writer drafts",
                "researcher checks",
            ],
        ),
        // Speaker names as small models write them.
        progress(false, false, "Researcher", "Find the release date."),
        progress(false, false, "**writer**", "Draft one sentence."),
        progress(false, false, "Agent: researcher", "Check the draft."),
        progress(true, false, "", ""),
        ScriptedReply::text("Rust 1.0 shipped on 15 May 2015."),
    ]);
    let (ctx, mut events) = RunContext::stream();
    let r = guard(
        team(model)
            .build()
            .unwrap()
            .run_task("When did Rust 1.0 ship?", &ctx),
    )
    .await
    .unwrap();
    assert!(matches!(r.status, RunStatus::Completed), "{:?}", r.status);
    assert_eq!(r.final_text(), "Rust 1.0 shipped on 15 May 2015.");
    assert_eq!(
        sources(&r),
        [
            "user",
            "manager",
            "manager",
            "researcher",
            "manager",
            "writer",
            "manager",
            "researcher",
            "manager"
        ],
        "{:#?}",
        texts(&r)
    );
    let all = texts(&r);
    assert!(all[1].contains("Here is the plan to follow"), "{}", all[1]);
    assert!(all[1].contains("1. researcher finds the date"));
    assert_eq!(all[2], "manager: Find the release date.");
    // A specialist saw the plan and its instruction.
    let researcher = r.thread.child("researcher").unwrap();
    assert!(
        researcher
            .messages()
            .iter()
            .any(|m| m.text_content() == "Check the draft.")
    );
    let ledgers = ledgers(events.drain_ready());
    let kinds: Vec<LedgerKind> = ledgers.iter().map(|(k, _)| *k).collect();
    assert_eq!(
        kinds,
        [
            LedgerKind::Task,
            LedgerKind::Progress,
            LedgerKind::Progress,
            LedgerKind::Progress,
            LedgerKind::Progress
        ]
    );
    let plan: TaskLedger = serde_json::from_value(ledgers[0].1.clone()).unwrap();
    assert_eq!(plan.plan.len(), 3);
    let last: ProgressLedger = serde_json::from_value(ledgers[4].1.clone()).unwrap();
    assert!(last.is_request_satisfied.answer);
    // The ledgers are in the manager's thread, private, tagged.
    let manager = r.thread.child("manager").unwrap();
    let kinds: Vec<&str> = manager
        .messages()
        .iter()
        .filter_map(|m| m.metadata.get("troupe.magentic").map(String::as_str))
        .collect();
    assert_eq!(kinds.iter().filter(|k| **k == "progress_ledger").count(), 4);
    assert_eq!(kinds.iter().filter(|k| **k == "task_ledger").count(), 1);
    assert_eq!(kinds.last(), Some(&"final_answer"));
}

#[tokio::test]
async fn a_stall_replans_with_updated_facts_then_succeeds() {
    let model = Arc::new(ScriptedModel::new([
        task_ledger(&["find the date"], &["searcher searches"]),
        progress(false, false, "searcher", "Search."),
        progress(false, true, "searcher", "Search again."),
        progress(false, true, "searcher", "Search once more."),
        // The third stall in a row: the manager replans.
        progress(false, true, "searcher", "Search."),
        task_ledger(
            &["find the date", "the search site is down"],
            &["reader reads the release notes"],
        ),
        progress(false, false, "reader", "Read the release notes."),
        progress(true, false, "", ""),
        ScriptedReply::text("It shipped on 2015-05-15."),
    ]));
    let stuck = FnAgent::sync("searcher", |_: &Thread| Ok("Nothing found."));
    let reader = FnAgent::sync("reader", |_: &Thread| Ok("Notes: 2015-05-15."));
    let (ctx, mut events) = RunContext::stream();
    let r = guard(
        Magentic::builder()
            .participant(stuck)
            .participant(reader)
            .model(model.clone())
            .max_stalls(3)
            .build()
            .unwrap()
            .run_task("When did Rust 1.0 ship?", &ctx),
    )
    .await
    .unwrap();
    assert!(matches!(r.status, RunStatus::Completed), "{:?}", r.status);
    assert_eq!(r.final_text(), "It shipped on 2015-05-15.");
    let said: Vec<String> = r
        .thread
        .messages()
        .iter()
        .filter(|m| &*m.source == "searcher")
        .map(|m| m.text_content().into_owned())
        .collect();
    assert_eq!(said, ["Nothing found."; 3], "the same answer three times");
    let ledgers = ledgers(events.drain_ready());
    let tasks: Vec<TaskLedger> = ledgers
        .iter()
        .filter(|(k, _)| *k == LedgerKind::Task)
        .map(|(_, l)| serde_json::from_value(l.clone()).unwrap())
        .collect();
    assert_eq!(tasks.len(), 2, "planned, then replanned");
    assert!(
        tasks[1]
            .facts_given
            .contains(&"the search site is down".to_string())
    );
    // The replan request showed the old ledger and the conversation.
    let replan = model.requests()[5]
        .messages
        .last()
        .unwrap()
        .text()
        .to_string();
    assert!(replan.contains("Here is the old ledger"), "{replan}");
    assert!(replan.contains("searcher: Nothing found."), "{replan}");
    // The team was told the new plan before the reader spoke.
    let all = texts(&r);
    let new_plan = all
        .iter()
        .position(|t| t.contains("reader reads the release notes"))
        .unwrap();
    let reader_spoke = all.iter().position(|t| t.starts_with("reader:")).unwrap();
    assert!(new_plan < reader_spoke);
}

#[tokio::test]
async fn max_resets_reached_ends_with_a_clear_status() {
    let model = ScriptedModel::new([
        task_ledger(&[], &["researcher tries"]),
        progress(false, true, "researcher", "Try."),
        progress(false, true, "researcher", "Try."),
        task_ledger(&["nothing works"], &["researcher tries harder"]),
        progress(false, true, "researcher", "Try harder."),
        progress(false, true, "researcher", "Try harder."),
        ScriptedReply::text("I could not finish: the team kept looping."),
    ]);
    let r = guard(
        team(model)
            .max_stalls(2)
            .max_resets(1)
            .build()
            .unwrap()
            .run_task("do the impossible", &RunContext::new()),
    )
    .await
    .unwrap();
    match &r.status {
        RunStatus::Stopped(reason) => {
            assert_eq!(reason.condition, "custom(magentic_max_resets)", "{reason}")
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(r.final_text(), "I could not finish: the team kept looping.");
    let final_message = r.final_response.as_ref().unwrap();
    assert_eq!(
        final_message
            .metadata
            .get("troupe.magentic.outcome")
            .map(String::as_str),
        Some("max_resets")
    );
}

#[tokio::test]
async fn max_turns_ends_with_a_final_answer() {
    let model = ScriptedModel::new([
        task_ledger(&[], &["researcher, then writer"]),
        progress(false, false, "researcher", "Go."),
        progress(false, false, "writer", "Go."),
        ScriptedReply::text("Out of turns; here is what we have."),
    ]);
    let r = guard(
        team(model)
            .max_turns(2)
            .build()
            .unwrap()
            .run_task("go", &RunContext::new()),
    )
    .await
    .unwrap();
    assert!(
        matches!(&r.status, RunStatus::Stopped(s) if s.condition == "custom(magentic_max_turns)"),
        "{:?}",
        r.status
    );
    assert_eq!(r.final_text(), "Out of turns; here is what we have.");
}

fn review_script() -> ScriptedModel {
    ScriptedModel::new([
        task_ledger(&["a task"], &["researcher researches", "writer writes"]),
        progress(false, false, "writer", "Write it."),
        progress(true, false, "", ""),
        ScriptedReply::text("Done."),
    ])
}

async fn waiting_for_review(model: ScriptedModel) -> (troupe_runtime::Workflow, RunResult, String) {
    let team = team(model).plan_review(true).build().unwrap();
    let r = guard(team.run_task("write it up", &RunContext::new()))
        .await
        .unwrap();
    let RunStatus::WaitingForInput(requests) = &r.status else {
        panic!("{:?}", r.status)
    };
    assert_eq!(requests[0].agent, "manager");
    assert!(
        requests[0]
            .prompt
            .contains("1. researcher researches\n2. writer writes")
    );
    assert!(requests[0].prompt.contains("Reply `approve`"));
    let id = requests[0].id.clone();
    assert!(
        !sources(&r)
            .iter()
            .any(|s| s == "researcher" || s == "writer"),
        "no work before the review"
    );
    (team, r, id)
}

#[tokio::test]
async fn plan_review_approves_the_plan() {
    let (team, r, id) = waiting_for_review(review_script()).await;
    let r = guard(team.respond_in_thread(r.thread, &id, "Approve.", &RunContext::new()))
        .await
        .unwrap();
    assert!(matches!(r.status, RunStatus::Completed), "{:?}", r.status);
    assert_eq!(r.final_text(), "Done.");
    let all = texts(&r);
    let plan = all.iter().find(|t| t.contains("Here is the plan")).unwrap();
    assert!(plan.contains("1. researcher researches"), "{plan}");
}

#[tokio::test]
async fn plan_review_takes_an_edited_plan() {
    let (team, r, id) = waiting_for_review(review_script()).await;
    let (ctx, mut events) = RunContext::stream();
    let r = guard(team.respond_in_thread(r.thread, &id, "1. writer writes alone\n2. stop", &ctx))
        .await
        .unwrap();
    assert_eq!(r.final_text(), "Done.");
    let all = texts(&r);
    let plan = all.iter().find(|t| t.contains("Here is the plan")).unwrap();
    assert!(plan.contains("1. writer writes alone\n2. stop"), "{plan}");
    assert!(!plan.contains("researcher researches"), "{plan}");
    let edited: TaskLedger = ledgers(events.drain_ready())
        .into_iter()
        .find(|(k, _)| *k == LedgerKind::Task)
        .map(|(_, l)| serde_json::from_value(l).unwrap())
        .unwrap();
    assert_eq!(edited.plan, ["writer writes alone", "stop"]);
    assert_eq!(edited.facts_given, ["a task"], "the facts stay");
}

#[tokio::test]
async fn the_manager_asks_the_user_when_information_is_missing() {
    let model = ScriptedModel::new([
        task_ledger(&[], &["ask which year", "researcher looks it up"]),
        progress(false, false, "the user", "Which Rust release do you mean?"),
        progress(false, false, "researcher", "Look up 1.0."),
        progress(true, false, "", ""),
        ScriptedReply::text("May 2015."),
    ]);
    let team = team(model).ask_user(true).build().unwrap();
    let r = guard(team.run_task("when did it ship?", &RunContext::new()))
        .await
        .unwrap();
    let RunStatus::WaitingForInput(requests) = &r.status else {
        panic!("{:?}", r.status)
    };
    assert_eq!(requests[0].prompt, "Which Rust release do you mean?");
    let id = requests[0].id.clone();
    let r = guard(team.respond_in_thread(r.thread, &id, "1.0", &RunContext::new()))
        .await
        .unwrap();
    assert_eq!(r.final_text(), "May 2015.");
    // The team heard the answer from the manager.
    let researcher = r.thread.child("researcher").unwrap();
    assert!(
        researcher
            .messages()
            .iter()
            .any(|m| m.text_content().ends_with("The user answered: 1.0")),
        "{:?}",
        researcher.messages()
    );
}

#[tokio::test]
async fn a_speaker_the_model_cannot_name_falls_back_or_fails() {
    let script = || {
        ScriptedModel::new([
            task_ledger(&[], &["someone works"]),
            progress(false, false, "the intern", "Go."),
            progress(false, false, "nobody", "Go."),
            progress(true, false, "", ""),
            ScriptedReply::text("Done."),
        ])
    };
    let r = guard(
        team(script())
            .max_attempts(2)
            .build()
            .unwrap()
            .run_task("go", &RunContext::new()),
    )
    .await
    .unwrap();
    assert_eq!(r.final_text(), "Done.");
    assert!(
        sources(&r).contains(&"researcher".to_string()),
        "round robin: the first"
    );
    let r = guard(
        team(script())
            .max_attempts(2)
            .fallback(SpeakerFallback::Fail)
            .build()
            .unwrap()
            .run_task("go", &RunContext::new()),
    )
    .await;
    let err = r.expect_err("fails");
    let text = err.to_string();
    assert!(text.contains("no valid next speaker"), "{text}");
    assert!(text.contains("researcher, writer"), "{text}");
}

#[tokio::test]
async fn a_checkpoint_resume_in_the_middle_equals_the_uninterrupted_run() {
    use troupe_runtime::store::{CheckpointStore, MemoryStore};
    let store = Arc::new(MemoryStore::new());
    // By the conversation: a fresh model answers a resumed run as the
    // first answered the uninterrupted one.
    let team = || {
        let model = ScriptedModel::new([
            task_ledger(&["q"], &["researcher", "writer", "researcher"]),
            progress(false, false, "researcher", "Find."),
            progress(false, true, "writer", "Draft."),
            progress(false, false, "researcher", "Check."),
            progress(true, false, "", ""),
            ScriptedReply::text("Final."),
            // The thread continued with a new task.
            task_ledger(&["about 2.0"], &["writer"]),
            progress(true, false, "", ""),
            ScriptedReply::text("There is no 2.0."),
        ])
        .position(ScriptPosition::Conversation);
        team(model).checkpoint_store(store.clone()).build().unwrap()
    };
    let whole = guard(team().run_task("go", &RunContext::new().with_run_id("m1")))
        .await
        .unwrap();
    assert_eq!(whole.final_text(), "Final.");
    let checkpoints = store.list("m1").await.unwrap();
    assert!(checkpoints.len() >= 6, "{}", checkpoints.len());
    for at in [2, checkpoints.len() / 2] {
        let again = guard(team().run_from_checkpoint(
            store.as_ref(),
            "m1",
            Some(checkpoints[at].id),
            &RunContext::new().with_run_id(format!("m2-{at}")),
        ))
        .await
        .unwrap();
        assert_eq!(texts(&again), texts(&whole), "from checkpoint {at}");
        let ledgers = |r: &RunResult| -> Vec<String> {
            r.thread
                .child("manager")
                .unwrap()
                .messages()
                .iter()
                .filter(|m| m.metadata.contains_key("troupe.magentic"))
                .map(|m| format!("{:?} {}", m.metadata, m.text_content()))
                .collect()
        };
        assert_eq!(ledgers(&again), ledgers(&whole));
    }
    // A finished run continues with a new task: a new task ledger, for
    // the new request alone.
    let (ctx, mut events) = RunContext::stream();
    let mut thread = whole.thread;
    thread.push(Message::user("and 2.0?"));
    let next = guard(team().run(thread, &ctx)).await.unwrap();
    assert_eq!(next.final_text(), "There is no 2.0.");
    let tasks: Vec<TaskLedger> = ledgers(events.drain_ready())
        .into_iter()
        .filter(|(k, _)| *k == LedgerKind::Task)
        .map(|(_, l)| serde_json::from_value(l).unwrap())
        .collect();
    assert_eq!(tasks.len(), 1);
    assert_eq!(tasks[0].facts_given, ["about 2.0"]);
}
