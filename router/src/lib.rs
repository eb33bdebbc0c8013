//! Inboxes and routes for troupe: who receives whose messages, and when a
//! participant has enough of them to run.
//!
//! This crate is pure and synchronous: no async, no threads, and inboxes are
//! told the time instead of reading a clock.
//! It is generic over the message type, which only has to say who sent it and
//! when it was created (the [`Envelope`] trait). The runtime calls it for every
//! message, so lookups are precomputed and pushes do not allocate (beyond
//! the queue's amortized growth).
//!
//! # Routes
//!
//! Every participant of a workflow has an inbox. By default every message
//! reaches every *other* participant's inbox (a broadcast). A [`Router`],
//! built with [`Router::builder`], narrows that: a route names the sources
//! whose messages a target's inbox accepts.
//!
//! - A participant no route names accepts every sender except itself.
//! - A participant named by routes accepts exactly the union of their
//!   sources. A [`Source`] is one name, several, or [`Router::ANY`] (every
//!   sender except the target itself).
//! - A participant never receives its own messages unless a route names it
//!   as its own source.
//! - `"user"` ([`Router::USER`]) stands for the caller's messages. It is the
//!   default *entry*: where work starts. [`RouterBuilder::entry`] adds more.
//! - [`RouterBuilder::output`] declares a participant a sink: its messages
//!   are the workflow's result and need not reach anyone.
//!
//! [`Router::targets`] answers "whose inboxes get this sender's message?"
//! with one hash lookup.
//!
//! # Validation
//!
//! [`RouterBuilder::build`] checks the routes against the participants and
//! reports *every* problem at once in a [`RouterError`]: unknown names,
//! participants no message can reach from an entry, participants whose
//! messages reach nobody (and are not outputs), invalid or conflicting inbox
//! options. Routes that can cascade without end (cycles) are legal but come
//! back as [`RouteWarning`]s from [`Router::warnings`]. The graph walks
//! behind these checks are public in [`algo`], for every crate of troupe
//! that validates a graph.
//!
//! # Inboxes
//!
//! An [`Inbox`] is a FIFO queue configured by an [`InboxConfig`]: a sender
//! filter, a batch size (how many messages one run takes), a time-to-live
//! counted from each message's creation, a capacity with an [`Overflow`]
//! policy, and a max wait after which a partial batch runs anyway. Operations
//! take `now` explicitly, so tests move time by hand (see [`ManualClock`])
//! instead of sleeping. Nothing is lost silently: every message the inbox
//! does not keep comes back in a [`Push`] outcome or as a [`Dropped`] with its
//! [`DropReason`].
//!
//! The runtime's loop, per message: for each index in `router.targets(sender)`,
//! push into that inbox; then, for an inbox whose [`Inbox::readiness`] is
//! [`Readiness::Ready`], [`Inbox::take_batch`] and run its participant.
//!
//! # Example
//!
//! ```
//! use std::time::{Duration, SystemTime};
//! use troupe_router::{
//!     Clock, DropReason, Envelope, InboxConfig, ManualClock, Push, Readiness, RouteWarning,
//!     Router,
//! };
//!
//! #[derive(Debug, Clone, PartialEq)]
//! struct Msg {
//!     from: String,
//!     text: String,
//!     at: SystemTime,
//! }
//!
//! impl Envelope for Msg {
//!     fn sender(&self) -> &str {
//!         &self.from
//!     }
//!     fn created_at(&self) -> SystemTime {
//!         self.at
//!     }
//! }
//!
//! fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let team = ["planner", "researcher", "critic", "writer", "logger"];
//!     let router = Router::builder()
//!         .add_route("user", "planner")
//!         .add_route(["planner", "critic"], "researcher")
//!         .add_route("researcher", "critic")
//!         .add_route_with(
//!             "researcher",
//!             "writer",
//!             InboxConfig::new().batch_size(2).ttl_str("1h")?,
//!         )
//!         .add_route(Router::ANY, "logger")
//!         .output("writer")
//!         .output("logger")
//!         .build(&team)?;
//!
//!     // Indexes follow the participant order: logger (4) hears everyone.
//!     assert_eq!(router.targets("user"), [0, 4]);
//!     assert_eq!(router.targets("researcher"), [2, 3, 4]);
//!     // Researcher and critic feed each other: legal, but flagged.
//!     assert_eq!(
//!         router.warnings(),
//!         [RouteWarning::Cycle { agents: vec!["researcher".into(), "critic".into()] }]
//!     );
//!
//!     // The writer's inbox, driven by a manual clock.
//!     let clock = ManualClock::new(SystemTime::UNIX_EPOCH);
//!     let writer = router.index_of("writer").ok_or("no writer")?;
//!     let mut inbox = router.inbox::<Msg>(writer).ok_or("no inbox")?;
//!     let msg = |from: &str, text: &str| Msg {
//!         from: from.into(),
//!         text: text.into(),
//!         at: clock.now(),
//!     };
//!
//!     // The writer does not take the planner's messages: handed back.
//!     let push = inbox.push(msg("planner", "plan"), clock.now());
//!     assert!(matches!(push, Push::Filtered(_)));
//!
//!     assert!(inbox.push(msg("researcher", "finding 1"), clock.now()).is_accepted());
//!     // Half a batch and no max wait: it waits for a second message.
//!     assert_eq!(inbox.readiness(clock.now()), Readiness::Waiting { until: None });
//!
//!     clock.advance(Duration::from_secs(2 * 3600));
//!     assert!(inbox.push(msg("researcher", "finding 2"), clock.now()).is_accepted());
//!     // The first finding outlived its hour, so the batch is still partial;
//!     // a flush takes what is live and reports what expired.
//!     let batch = inbox.take_all(clock.now());
//!     assert_eq!(batch.messages.len(), 1);
//!     assert_eq!(batch.messages[0].text, "finding 2");
//!     assert!(matches!(batch.dropped[0].reason, DropReason::Expired { .. }));
//!
//!     // Mistakes are reported together, each naming the agents concerned.
//!     let err = Router::builder()
//!         .add_route("planer", "writer")
//!         .build(&["planner", "writer"])
//!         .unwrap_err();
//!     assert_eq!(err.problems.len(), 3);
//!     let text = err.to_string();
//!     assert!(text.contains("unknown agent \"planer\""));
//!     assert!(text.contains("agent \"writer\" is unreachable"));
//!     assert!(text.contains("agent \"planner\" reaches nobody"));
//!     Ok(())
//! }
//! ```

// The workspace lints (`[lints] workspace = true`) forbid unsafe code,
// require docs and keep unwrap/expect/panic out of library code. This crate
// adds two: every public type is debuggable, and, since the runtime calls it
// per message and a panic there would take a whole workflow down, library
// code does not index or slice (which panics when out of bounds) either.
#![warn(missing_debug_implementations)]
#![cfg_attr(not(test), warn(clippy::indexing_slicing))]

pub mod algo;
mod build;
mod builder;
mod clock;
mod config;
mod envelope;
mod error;
mod hash;
mod inbox;
mod outcome;
pub mod prelude;
mod router;
mod source;
mod validation;

pub use builder::{Route, RouterBuilder};
pub use clock::{Clock, ManualClock, SystemClock};
pub use config::{InboxConfig, Overflow, SenderFilter};
pub use envelope::Envelope;
pub use error::InboxConfigError;
pub use inbox::Inbox;
pub use outcome::{Batch, DropReason, Dropped, Push, Readiness};
pub use router::Router;
pub use source::{AnySource, Source};
pub use validation::{AgentRole, RouteProblem, RouteWarning, RouterError};

// The README's example is compiled and run as a doc test, so it cannot
// drift from the API.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeExample;
