//! `{{ $steps.<id>.output }}` templates: references to what earlier steps
//! produced, usable in agent instructions and in conditions (as cagent
//! writes them).
//!
//! A reference names a step (or graph node, or team participant) and a
//! path into what it produced:
//!
//! | reference | is |
//! |---|---|
//! | `$steps.draft.output` | the step's last output (its text) |
//! | `$steps.qa.output.approved` | a field of that output read as JSON |
//! | `$steps.qa.output.items[0]` | an element of a JSON list |
//! | `$steps.qa.agent` | the agent that ran the step |
//! | `$steps.research.outputs.web.output` | the output of step `web` inside parallel block `research` |
//! | `$steps.research.outputs[1].output` | the second step of the block, in the order written |
//! | `$steps.research.output` | the block as JSON: `{"steps": {id: {"output", "agent"}}, "order": [...]}` |
//!
//! A condition is a reference (true when its value is truthy: `true`, a
//! non-zero number, the strings `true`/`yes`/`1`, a non-empty list or
//! mapping), optionally negated with `!` or `not`, or compared with
//! `== value` / `!= value`.
//!
//! What the steps produced is kept in the run's state (in its thread), so
//! each run sees its own: a built config's participants record their
//! output there ([`StepRecord::delta`]), and a [`Board`] reads it.
//!
//! ```
//! use troupe_config::template::{Board, Expr, StepRecord, Template};
//! use troupe_runtime::state::StateSnapshot;
//!
//! let mut state = StateSnapshot::default();
//! state.apply(&StepRecord::new("qa_agent", r#"{"approved": true, "notes": "fine"}"#).delta("qa"));
//! let board = Board::new(&state);
//! let expr = Expr::parse("{{ $steps.qa.output.approved }}").unwrap();
//! assert!(expr.evaluate(&board));
//! let text = Template::parse("QA said: {{ $steps.qa.output.notes }}").unwrap();
//! assert_eq!(text.render(&board), "QA said: fine");
//! ```

mod board;
mod cache_key;
mod expr;
mod reference;
mod text;

pub use board::{Board, StepRecord};
pub(crate) use cache_key::CacheKey;
pub use expr::Expr;
pub use reference::{Access, Reference, TemplateError};
pub use text::Template;
