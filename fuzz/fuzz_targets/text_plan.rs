//! Any text given as a plan — the graph syntax (`A -> B, C`) and a
//! planner's answer, as text or JSON — gives a plan or an error that
//! renders, never a panic or a hang.
#![no_main]

use libfuzzer_sys::fuzz_target;
use troupe_planning::{PlanGraph, PlanSpec};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match PlanGraph::parse(text) {
        Ok(g) => {
            let _ = (g.ids().len(), g.starts().len(), g.edges().count());
        }
        Err(e) => {
            let _ = e.to_string();
        }
    }
    for answer in [PlanSpec::parse_text(text), PlanSpec::parse_json(text)] {
        match answer {
            Ok(spec) => {
                let _ = format!("{spec:?}");
            }
            Err(e) => {
                let _ = e.to_string();
            }
        }
    }
});
