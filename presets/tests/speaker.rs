//! Group chat robustness for small models (AutoGen #6944, #7471): a
//! selector reads a speaker out of twenty malformed answers, asks again
//! with the valid names when it cannot tell, and falls back instead of
//! looping.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use troupe_agents::{ScriptedModel, ScriptedReply};
use troupe_presets::{SelectorGroupChat, SpeakerFallback};
use troupe_runtime::{FnAgent, RunContext, Thread, Workflow};

fn team(model: Arc<ScriptedModel>, fallback: SpeakerFallback) -> Workflow {
    let speaker =
        |name: &'static str| FnAgent::sync(name, move |_: &Thread| Ok(format!("{name} here")));
    SelectorGroupChat::builder()
        .participant(speaker("planner"))
        .participant(speaker("code_writer"))
        .participant(speaker("tester"))
        .model(model)
        .max_selector_attempts(3)
        .fallback(fallback)
        .max_turns(1)
        .build()
        .unwrap()
}

/// Who speaks first when the model answers `first` and then, asked again,
/// only "I am not sure" — and how many times the model was asked.
async fn first_speaker(first: &str, fallback: SpeakerFallback) -> (Result<String, String>, usize) {
    let first = first.to_string();
    let model = Arc::new(ScriptedModel::from_fn(move |request| {
        // The first question has no earlier answer in it.
        let retry = request.messages.len() > 1;
        Ok(ScriptedReply::text(if retry {
            "I am not sure".to_string()
        } else {
            first.clone()
        }))
    }));
    let run = tokio::time::timeout(
        Duration::from_secs(10),
        team(model.clone(), fallback).run_task("build a parser", &RunContext::new()),
    )
    .await
    .expect("never loops");
    let spoke = run
        .map(|r| {
            r.messages
                .first()
                .map(|m| m.source.to_string())
                .unwrap_or_default()
        })
        .map_err(|e| e.to_string());
    (spoke, model.requests().len())
}

#[tokio::test]
async fn twenty_malformed_answers_pick_the_speaker_or_fall_back() {
    let cases: [(&str, &str); 20] = [
        ("tester", "tester"),
        ("Tester", "tester"),
        ("TESTER", "tester"),
        ("\"tester\"", "tester"),
        ("'tester'.", "tester"),
        ("`tester`", "tester"),
        ("**tester**", "tester"),
        ("# tester", "tester"),
        ("Agent: tester", "tester"),
        ("Next speaker: Tester", "tester"),
        ("speaker = code_writer", "code_writer"),
        ("code writer", "code_writer"),
        ("Code-Writer", "code_writer"),
        ("{\"next_speaker\": \"planner\"}", "planner"),
        (
            "I think the planner should go first, to outline the work.",
            "planner",
        ),
        (
            "<think>tester or planner? planner.</think>\nplanner",
            "planner",
        ),
        ("> The tester.", "tester"),
        // Unclear: asked again, still unclear, then round robin: nobody
        // spoke yet, so the first participant.
        ("the planner or the tester", "planner"),
        ("nobody", "planner"),
        ("", "planner"),
    ];
    for (answer, expected) in cases {
        let (spoke, asked) = first_speaker(answer, SpeakerFallback::RoundRobin).await;
        assert_eq!(spoke.as_deref(), Ok(expected), "answer {answer:?}");
        assert!(asked <= 3, "answer {answer:?}: asked {asked} times");
    }
}

#[tokio::test]
async fn an_unclear_answer_is_retried_with_the_valid_names_then_fails_if_asked_to() {
    let (spoke, asked) = first_speaker("the intern", SpeakerFallback::Fail).await;
    assert_eq!(asked, 3, "asked again up to max_selector_attempts");
    let err = spoke.unwrap_err();
    assert!(
        err.contains("named no valid speaker in 3 attempts"),
        "{err}"
    );
    assert!(err.contains("planner, code_writer, tester"), "{err}");
    // A retry shows the valid names.
    let model = Arc::new(ScriptedModel::new([
        ScriptedReply::text("the intern"),
        ScriptedReply::text("tester"),
    ]));
    let r = team(model.clone(), SpeakerFallback::Fail)
        .run_task("go", &RunContext::new())
        .await
        .unwrap();
    assert_eq!(r.messages[0].source.as_ref(), "tester");
    let retry = model.requests()[1]
        .messages
        .last()
        .unwrap()
        .text()
        .to_string();
    assert!(retry.contains("[planner, code_writer, tester]"), "{retry}");
}
