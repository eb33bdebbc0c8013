//! A preset as long as a model-written plan can make it builds on the
//! default test thread's stack (every graph walk under it is iterative).

use troupe_presets::{Sequential, StepFlow};
use troupe_runtime::{FnAgent, Thread};

#[test]
fn a_sequential_of_100_000_steps_builds() {
    let n = 100_000;
    // `Previous`: with the default flow each step's route names every
    // earlier step, n²/2 route sources in all — a router too large to be
    // the subject here.
    let mut builder = Sequential::builder().name("long").flow(StepFlow::Previous);
    for i in 0..n {
        builder = builder.participant(FnAgent::sync(format!("step{i}"), |_: &Thread| Ok("ok")));
    }
    let workflow = builder.build().unwrap();
    let names: Vec<&str> = workflow.participants().collect();
    assert_eq!(names.len(), n);
    assert_eq!(names.last(), Some(&"step99999"));
}
