//! Presets run on the same clock as every workflow: on tokio's paused
//! clock, scripted models that take minutes and a stop timeout play out
//! exactly, in no real time.

// Test helpers may fail loudly: a broken fixture should stop the test.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::time::Duration;

use tokio::time::Instant;
use troupe_agents::model::WhenExhausted;
use troupe_agents::{ChatAgent, ScriptedModel, ScriptedReply};
use troupe_presets::RoundRobinGroupChat;
use troupe_runtime::{RunContext, RunStatus, StopCondition};

const MINUTE: Duration = Duration::from_secs(60);

fn thinker(name: &'static str) -> ChatAgent {
    let model = ScriptedModel::new([ScriptedReply::text(format!("{name} thought"))])
        .when_exhausted(WhenExhausted::RepeatLast)
        .delay(10 * MINUTE);
    ChatAgent::builder(name).model(model).build().unwrap()
}

#[tokio::test(start_paused = true)]
async fn a_round_robin_of_slow_models_stops_at_its_virtual_timeout() {
    let team = RoundRobinGroupChat::builder()
        .participant(thinker("a"))
        .participant(thinker("b"))
        .participant(thinker("c"))
        .stop_condition(StopCondition::timeout(25 * MINUTE))
        .build()
        .unwrap();
    let start = Instant::now();
    let real = std::time::Instant::now();
    let r = tokio::time::timeout(24 * 60 * MINUTE, team.run_task("go", &RunContext::new()))
        .await
        .expect("the run hung")
        .unwrap();
    // a at 10 minutes, b at 20; c was mid-answer when the timeout fired.
    let said: Vec<_> = r.messages.iter().map(|m| m.source.to_string()).collect();
    assert_eq!(said, ["a", "b"]);
    assert!(matches!(r.status, RunStatus::Stopped(ref s) if s.condition == "timeout(25m)"));
    assert_eq!(Instant::now() - start, 25 * MINUTE);
    assert!(real.elapsed() < Duration::from_secs(30));
}
