//! Errors of building a preset.

/// A preset could not be built.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum PresetError {
    /// The team has no participants.
    #[error("team '{0}' has no participants")]
    NoParticipants(String),
    /// A required part is missing.
    #[error("team '{team}' needs {what}")]
    Missing {
        /// The name of the team that failed to build.
        team: String,
        /// What is missing.
        what: String,
    },
    /// Swarm's first participant cannot hand off, so control could never move.
    #[error(
        "swarm '{team}': its first participant '{agent}' declares no handoffs, so control could never move on"
    )]
    FirstCannotHandOff {
        /// The name of the team that failed to build.
        team: String,
        /// The first participant.
        agent: String,
    },
    /// A participant's name collides with one the preset uses itself.
    #[error("team '{team}': a participant may not be named '{name}', the preset uses that name")]
    ReservedName {
        /// The name of the team that failed to build.
        team: String,
        /// The participant name the preset keeps for itself.
        name: String,
    },
    /// A limit was set to 0, which would refuse every run.
    #[error("team '{team}': `{what}` must be at least 1")]
    ZeroLimit {
        /// The name of the team that failed to build.
        team: String,
        /// The limit.
        what: String,
    },
    /// The underlying workflow did not build.
    #[error(transparent)]
    Workflow(#[from] troupe_runtime::BuildError),
    /// The underlying graph did not validate.
    #[error(transparent)]
    Graph(#[from] troupe_runtime::graph::GraphError),
}
