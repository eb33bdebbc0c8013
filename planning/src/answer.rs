//! [`PlanSpec`]: a plan as a model writes it — sub-problems (id, request,
//! optionally the agent) and their dependency graph — in one of two
//! [`PlanFormat`]s, read leniently where that is harmless and strictly
//! where it is not.

use std::collections::HashSet;
use std::fmt::Write as _;
use std::sync::Arc;

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use troupe_agents::{SchemaError, StructuredOutput};
use troupe_runtime::Agent;

use crate::error::PlanError;
use crate::plan::Plan;
use crate::step::PlanStep;
use crate::text::PlanGraph;

/// How the model writes its plan.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum PlanFormat {
    /// Two sections of plain text, which any model can write:
    ///
    /// ```text
    /// STEPS:
    /// SUGGEST_RECIPE_STARBUCKS: Suggest a drink at Starbucks
    /// ORDER_STARBUCKS [orderer]: Order the suggested drink
    /// GRAPH:
    /// SUGGEST_RECIPE_STARBUCKS -> ORDER_STARBUCKS
    /// ```
    ///
    /// `[agent]` after an id picks the agent; the GRAPH lines are a text
    /// plan (see [`PlanGraph`]).
    #[default]
    Text,
    /// A JSON object checked against [`PlanSpec::schema`] (and asked of the
    /// model as structured output): `{"steps": [{"id", "request",
    /// "agent"}], "graph": ["A -> B", "C"]}`, one graph line per array
    /// item.
    Json,
}

/// One sub-problem of a [`PlanSpec`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SpecStep {
    /// The step id (`ORDER_STARBUCKS`).
    pub id: String,
    /// What the step's agent is asked.
    pub request: String,
    /// The agent to ask, by name; the planner's first agent when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

/// A plan as written by a model: its steps and its graph lines.
///
/// ```
/// use troupe_planning::PlanSpec;
///
/// let spec = PlanSpec::parse_text("Here is my plan.\nSTEPS:\nA: find a recipe\nB: order it\nGRAPH:\nA -> B").unwrap();
/// assert_eq!(spec.steps.len(), 2);
/// assert_eq!(spec.graph_text(), "A -> B");
/// // The text form reads back as the same plan.
/// assert_eq!(PlanSpec::parse_text(&spec.to_text()).unwrap(), spec);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PlanSpec {
    /// The sub-problems, in the order given.
    pub steps: Vec<SpecStep>,
    /// The dependency graph, one text-plan line per item; when it has no
    /// step at all the steps run one after the other, in order.
    #[serde(default)]
    pub graph: Vec<String>,
}

/// Why a model's plan cannot be used; shown to the model when it is asked
/// again.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum AnswerError {
    /// A section of the text format is missing.
    #[error("the answer has no {0} section: a line reading `{0}:` must start it")]
    MissingSection(&'static str),
    /// A line of the STEPS section is not `ID: request`.
    #[error(
        "line {line} of the answer, `{text}`, is not a step: write `ID: request` (the ID without spaces)"
    )]
    BadStep {
        /// The line of the answer.
        line: usize,
        /// The line as written.
        text: String,
    },
    /// No step was given.
    #[error("the answer lists no steps")]
    NoSteps,
    /// Two steps share an id.
    #[error("step '{0}' is listed twice: step ids must be unique")]
    DuplicateStep(String),
    /// The JSON answer does not parse or does not fit the schema.
    #[error("the answer is not a plan in the JSON format asked for: {0}")]
    Json(#[source] troupe_runtime::BoxError),
    /// A step names an agent the planner does not have.
    #[error("step '{step}' names agent '{agent}', which is not available (agents: {known})")]
    UnknownAgent {
        /// The id of the step that names the agent.
        step: String,
        /// The agent named.
        agent: String,
        /// The agents available.
        known: String,
    },
    /// A step the graph does not mention.
    #[error("step '{0}' is not in the graph: every step must appear in it")]
    NotInGraph(String),
    /// The graph is not a valid plan.
    #[error("in the graph, {0}")]
    Graph(#[from] PlanError),
}

/// The sections of the text format.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    Steps,
    Graph,
}

impl PlanSpec {
    /// Reads an answer in [`PlanFormat::Text`]. Text before `STEPS:` and
    /// Markdown fences are ignored; a step line may start with a list
    /// bullet or number.
    pub fn parse_text(answer: &str) -> Result<PlanSpec, AnswerError> {
        let mut section = None;
        let mut saw_steps = false;
        let mut steps = Vec::new();
        let mut graph = Vec::new();
        for (i, raw) in answer.lines().enumerate() {
            let line = raw.trim();
            if line.starts_with("```") {
                continue;
            }
            let (line, opened) = match header(line) {
                Some((s, rest)) => (rest, Some(s)),
                None => (line, None),
            };
            if let Some(s) = opened {
                saw_steps |= s == Section::Steps;
                section = Some(s);
                // `GRAPH: A -> B` opens the section and gives its first line.
                if line.is_empty() {
                    continue;
                }
            }
            match section {
                Some(Section::Steps) if !line.is_empty() => steps.push(step_line(i + 1, line)?),
                Some(Section::Graph) => graph.push(line.to_string()),
                _ => {}
            }
        }
        if !saw_steps {
            return Err(AnswerError::MissingSection("STEPS"));
        }
        while graph.last().is_some_and(|l| l.is_empty()) {
            graph.pop();
        }
        if steps.is_empty() {
            return Err(AnswerError::NoSteps);
        }
        Ok(PlanSpec { steps, graph })
    }

    /// Reads an answer in [`PlanFormat::Json`], checked against
    /// [`PlanSpec::schema`] (a surrounding Markdown fence is allowed).
    pub fn parse_json(answer: &str) -> Result<PlanSpec, AnswerError> {
        let output = structured_output(&[]).map_err(|e| AnswerError::Json(e.into()))?;
        let json = output
            .parse(answer)
            .map_err(|e| AnswerError::Json(e.into()))?;
        let spec: PlanSpec =
            serde_json::from_str(&json).map_err(|e| AnswerError::Json(e.into()))?;
        if spec.steps.is_empty() {
            return Err(AnswerError::NoSteps);
        }
        Ok(spec)
    }

    /// Reads an answer in `format`.
    pub fn parse(answer: &str, format: PlanFormat) -> Result<PlanSpec, AnswerError> {
        match format {
            PlanFormat::Text => PlanSpec::parse_text(answer),
            PlanFormat::Json => PlanSpec::parse_json(answer),
        }
    }

    /// The JSON schema of [`PlanFormat::Json`]; with `agents`, a step's
    /// `agent` must be one of them.
    pub fn schema(agents: &[&str]) -> Value {
        let agent = if agents.is_empty() {
            json!({"type": "string"})
        } else {
            json!({"type": "string", "enum": agents})
        };
        json!({
            "title": "plan",
            "type": "object",
            "properties": {
                "steps": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "properties": {
                            "id": {"type": "string", "minLength": 1},
                            "request": {"type": "string", "minLength": 1},
                            "agent": agent
                        },
                        "required": ["id", "request"],
                        "additionalProperties": false
                    }
                },
                "graph": {"type": "array", "items": {"type": "string"}}
            },
            "required": ["steps", "graph"],
            "additionalProperties": false
        })
    }

    /// The graph as a text plan: its lines, or — when they name no step —
    /// the steps one after the other (the seed's fallback).
    pub fn graph_text(&self) -> String {
        if self.graph.iter().any(|l| !l.trim().is_empty()) {
            self.graph.join("\n")
        } else {
            self.steps
                .iter()
                .map(|s| s.id.as_str())
                .collect::<Vec<_>>()
                .join(" -> ")
        }
    }

    /// The plan in [`PlanFormat::Text`].
    pub fn to_text(&self) -> String {
        let mut out = String::from("STEPS:\n");
        for s in &self.steps {
            let _ = match &s.agent {
                Some(a) => writeln!(out, "{} [{a}]: {}", s.id, s.request),
                None => writeln!(out, "{}: {}", s.id, s.request),
            };
        }
        out.push_str("GRAPH:\n");
        out.push_str(&self.graph_text());
        out
    }

    /// Checks the plan against the agents available and builds it: every
    /// step's agent must exist, every step must be in the graph and every
    /// graph id must be a step.
    pub fn to_plan(&self, agents: &[Arc<dyn Agent>]) -> Result<Plan, AnswerError> {
        let mut ids = HashSet::new();
        for s in &self.steps {
            if !ids.insert(s.id.as_str()) {
                return Err(AnswerError::DuplicateStep(s.id.clone()));
            }
        }
        let graph = PlanGraph::parse(&self.graph_text())?;
        if let Some(missing) = self.steps.iter().find(|s| graph.line_of(&s.id).is_none()) {
            return Err(AnswerError::NotInGraph(missing.id.clone()));
        }
        let mut steps = Vec::with_capacity(self.steps.len());
        for s in &self.steps {
            let agent = match &s.agent {
                None => agents.first(),
                Some(name) => agents.iter().find(|a| a.name() == name),
            };
            let Some(agent) = agent else {
                return Err(AnswerError::UnknownAgent {
                    step: s.id.clone(),
                    agent: s.agent.clone().unwrap_or_default(),
                    known: agents
                        .iter()
                        .map(|a| a.name())
                        .collect::<Vec<_>>()
                        .join(", "),
                });
            };
            steps.push(PlanStep::shared(
                s.id.clone(),
                agent.clone(),
                s.request.clone(),
            ));
        }
        Ok(Plan::from_graph(&graph, steps)?)
    }
}

/// The structured output of the JSON format.
pub(crate) fn structured_output(agents: &[&str]) -> Result<StructuredOutput, SchemaError> {
    StructuredOutput::named("plan", PlanSpec::schema(agents))
}

/// The section a line opens, if it is a header (`STEPS:`, `## Graph`,
/// `**STEPS**`), and what follows the header on the same line.
fn header(line: &str) -> Option<(Section, &str)> {
    let (head, rest) = line.split_once(':').unwrap_or((line, ""));
    let name = head
        .trim_start_matches(['#', '*', ' '])
        .trim_end_matches(['*', ' ']);
    let section = match name.to_ascii_uppercase().as_str() {
        "STEPS" => Section::Steps,
        "GRAPH" => Section::Graph,
        _ => return None,
    };
    Some((section, rest.trim_start_matches(['*', ' ']).trim()))
}

/// Reads `ID: request` or `ID [agent]: request`, after any list bullet or
/// number.
fn step_line(line: usize, text: &str) -> Result<SpecStep, AnswerError> {
    let bad = || AnswerError::BadStep {
        line,
        text: text.to_string(),
    };
    let mut rest = text.trim_start_matches(['-', '*', '•']).trim_start();
    let digits = rest.chars().take_while(char::is_ascii_digit).count();
    if digits > 0 && rest[digits..].starts_with(['.', ')']) {
        rest = rest[digits + 1..].trim_start();
    }
    let (head, request) = rest.split_once(':').ok_or_else(bad)?;
    let head = head.trim().trim_matches('`');
    let (id, agent) = match head.split_once('[') {
        Some((id, agent)) => {
            let agent = agent.strip_suffix(']').ok_or_else(bad)?.trim();
            (id.trim(), Some(agent.to_string()))
        }
        None => (head, None),
    };
    let request = request.trim();
    if id.is_empty() || id.contains(char::is_whitespace) || request.is_empty() {
        return Err(bad());
    }
    Ok(SpecStep {
        id: id.to_string(),
        request: request.to_string(),
        agent,
    })
}
