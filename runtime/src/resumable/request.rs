//! [`InputRequest`]: a question an agent asked the caller, pending until
//! the caller answers it.

/// A question an agent asked the caller ([`Reply::ask`](crate::Reply::ask)).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct InputRequest {
    /// The id to answer it by.
    pub id: String,
    /// The asking participant.
    pub agent: String,
    /// The question.
    pub prompt: String,
}
