//! What a step receives of the steps before it: the seed's pass-down
//! modes ([`ResultPassing`]), how far back it looks ([`ResultScope`]), and
//! the typed view of earlier results ([`StepInput`], [`StepResult`]).

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use troupe_runtime::{Message, message::USER};

/// Metadata key marking the message that renders earlier results as
/// attachments: the engine's own, which `NodeInput::Attachments` uses.
pub const INPUT_KEY: &str = troupe_runtime::graph::INPUT_KEY;
/// Metadata key marking the message that carries a step's request.
pub const REQUEST_KEY: &str = "troupe.plan.request";

/// Builds the thread a step's agent sees from what the step receives.
pub type MergeFn = Arc<dyn Fn(&StepInput) -> Vec<Message> + Send + Sync>;

/// How a step receives the results of the steps it depends on (the seed's
/// `ResultPassDownMode`, typed). Whatever the mode, the step's agent also
/// sees the task (the plan's input) first and its request last, except
/// with [`ResultPassing::Custom`], which builds the whole thread.
#[derive(Clone, Default)]
pub enum ResultPassing {
    /// Nothing of earlier steps: the task and the request only
    /// (`NoPassDown`).
    Nothing,
    /// One message listing each earlier result as an attachment (id,
    /// description, content), the way pattern 4 of the seed puts
    /// `previous_agent_results` into the prompt. The default.
    #[default]
    Attachments,
    /// The earlier steps' messages themselves, in the order they were
    /// produced (tool calls included), as a conversation.
    Messages,
    /// Each earlier result's text as a message of its own, in the order
    /// their steps ran, before the request (`ResultAsLeadingArgs`: the
    /// results prepended to the step's input).
    LeadingArgs,
    /// The earlier results' text under a named key (the seed's
    /// `"key_name"` mode): `{KEY}` in the step's request is replaced by
    /// it; a request without `{KEY}` is preceded by one message
    /// `KEY:` and the results.
    Key(Arc<str>),
    /// A function of the [`StepInput`] builds the thread (the seed's
    /// callable mode).
    Custom(MergeFn),
}

impl ResultPassing {
    /// A custom merge: `f` builds the thread the step's agent sees.
    pub fn custom(f: impl Fn(&StepInput) -> Vec<Message> + Send + Sync + 'static) -> Self {
        ResultPassing::Custom(Arc::new(f))
    }
}

impl fmt::Debug for ResultPassing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ResultPassing::Nothing => "Nothing",
            ResultPassing::Attachments => "Attachments",
            ResultPassing::Messages => "Messages",
            ResultPassing::LeadingArgs => "LeadingArgs",
            ResultPassing::Key(key) => return write!(f, "Key({key:?})"),
            ResultPassing::Custom(_) => "Custom(..)",
        })
    }
}

/// Whose results a step receives.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ResultScope {
    /// The steps directly before it in the graph (pattern 4: a DAG node
    /// sees its predecessors). The default of text plans.
    #[default]
    Predecessors,
    /// Every step before it, in the order they ran (pattern 2: sequential
    /// accumulation). The branches of a parallel group count as one
    /// result, their summarizer's, once it has run. The default of
    /// action groups.
    AllEarlier,
}

/// What one earlier step (or a merged parallel group) produced.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StepResult {
    /// The step's id.
    pub id: String,
    /// What the step was (its description; by default its request).
    pub description: String,
    /// What it produced.
    pub content: ResultContent,
}

/// The content of a [`StepResult`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResultContent {
    /// The text of the step's last message.
    Text(String),
    /// The results of a parallel group's branches, collected by the default
    /// summarizer, in branch order.
    Merged(Vec<StepResult>),
}

impl StepResult {
    /// A text result.
    pub fn text(
        id: impl Into<String>,
        description: impl Into<String>,
        text: impl Into<String>,
    ) -> Self {
        StepResult {
            id: id.into(),
            description: description.into(),
            content: ResultContent::Text(text.into()),
        }
    }

    /// The result as text: a text result as is, a merged one as its
    /// branches' attachments.
    pub fn content_text(&self) -> String {
        match &self.content {
            ResultContent::Text(t) => t.clone(),
            ResultContent::Merged(parts) => render_attachments(parts),
        }
    }

    /// The result as an attachment, rendered by the engine's renderer, the
    /// one `NodeInput::Attachments` uses (a merged result nests its
    /// branches).
    pub fn to_attachment(&self) -> String {
        troupe_runtime::graph::attachment(&self.id, &self.description, &self.content_text())
    }
}

/// Results as attachments, one after the other.
///
/// ```
/// use troupe_planning::{render_attachments, StepResult};
///
/// let text = render_attachments(&[StepResult::text("FIND", "find a recipe", "a latte")]);
/// assert_eq!(text, "<attachment id=\"FIND\" description=\"find a recipe\">\na latte\n</attachment>");
/// ```
pub fn render_attachments(results: &[StepResult]) -> String {
    results
        .iter()
        .map(StepResult::to_attachment)
        .collect::<Vec<_>>()
        .join("\n")
}

/// Everything a step receives, before it becomes its agent's thread.
#[derive(Debug, Clone)]
pub struct StepInput {
    /// The step's id.
    pub step: String,
    /// What the step is asked to do.
    pub request: String,
    /// The plan's input: the messages that came from outside the plan (the
    /// user's task, an outer workflow's messages).
    pub task: Vec<Arc<Message>>,
    /// The results the step receives, in the order their steps ran.
    pub results: Vec<StepResult>,
    /// Every message of the steps whose results it receives, in the order
    /// they were produced.
    pub messages: Vec<Arc<Message>>,
}

impl StepInput {
    /// The request as a user message (marked with [`REQUEST_KEY`]), or
    /// `None` for a step with no request.
    pub fn request_message(&self) -> Option<Message> {
        (!self.request.trim().is_empty()).then(|| {
            Message::text(USER, self.request.clone()).with_metadata(REQUEST_KEY, self.step.clone())
        })
    }

    /// The results as one message of attachments (marked with
    /// [`INPUT_KEY`]), or `None` when there are none.
    pub fn attachments_message(&self) -> Option<Message> {
        (!self.results.is_empty()).then(|| {
            Message::text(USER, render_attachments(&self.results))
                .with_metadata(INPUT_KEY, "attachments")
        })
    }

    /// The thread a step's agent sees under `passing`.
    pub(crate) fn view(&self, passing: &ResultPassing) -> Vec<Message> {
        let own = |ms: &[Arc<Message>]| ms.iter().map(|m| (**m).clone()).collect::<Vec<_>>();
        let mut thread = match passing {
            ResultPassing::Custom(f) => return f(self),
            _ => own(&self.task),
        };
        match passing {
            ResultPassing::Attachments => thread.extend(self.attachments_message()),
            ResultPassing::Messages => thread.extend(own(&self.messages)),
            ResultPassing::LeadingArgs => thread.extend(self.results.iter().map(|r| {
                Message::text(USER, r.content_text()).with_metadata(INPUT_KEY, r.id.clone())
            })),
            ResultPassing::Key(key) => return self.keyed(thread, key),
            ResultPassing::Nothing | ResultPassing::Custom(_) => {}
        }
        thread.extend(self.request_message());
        thread
    }

    /// `thread` then the request, the results under `key` (see
    /// [`ResultPassing::Key`]).
    fn keyed(&self, mut thread: Vec<Message>, key: &str) -> Vec<Message> {
        let value = self
            .results
            .iter()
            .map(StepResult::content_text)
            .collect::<Vec<_>>()
            .join("\n\n");
        let placeholder = format!("{{{key}}}");
        if self.request.contains(&placeholder) {
            let request = self.request.replace(&placeholder, &value);
            thread.push(Message::text(USER, request).with_metadata(REQUEST_KEY, self.step.clone()));
            return thread;
        }
        if !self.results.is_empty() {
            thread.push(
                Message::text(USER, format!("{key}:\n{value}")).with_metadata(INPUT_KEY, key),
            );
        }
        thread.extend(self.request_message());
        thread
    }
}
