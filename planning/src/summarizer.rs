//! [`Summarizer`]: what merges the branches of a parallel group into one
//! result.

use std::fmt;
use std::sync::Arc;

use troupe_runtime::Agent;

use crate::passing::StepResult;

/// Merges a parallel group's results into one text.
pub type SummarizeFn = Arc<dyn Fn(&[StepResult]) -> String + Send + Sync>;

/// What merges the branches of a parallel group (the seed's summary node).
#[derive(Clone, Default)]
pub enum Summarizer {
    /// Collects each branch's result, in branch order, into one merged
    /// result ([`ResultContent::Merged`](crate::ResultContent::Merged)):
    /// the seed's default summarizer. The default.
    #[default]
    Collect,
    /// An agent that receives the branches' results as attachments (and
    /// the request to combine them) and answers with the merged result.
    Agent(Arc<dyn Agent>),
    /// A function of the branches' results.
    Fn(SummarizeFn),
}

impl Summarizer {
    /// An agent as summarizer.
    pub fn agent(agent: impl Agent) -> Self {
        Summarizer::Agent(Arc::new(agent))
    }

    /// A function as summarizer.
    pub fn func(f: impl Fn(&[StepResult]) -> String + Send + Sync + 'static) -> Self {
        Summarizer::Fn(Arc::new(f))
    }
}

impl fmt::Debug for Summarizer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Summarizer::Collect => f.write_str("Collect"),
            Summarizer::Agent(a) => write!(f, "Agent({})", a.name()),
            Summarizer::Fn(_) => f.write_str("Fn(..)"),
        }
    }
}
