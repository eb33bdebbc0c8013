//! [`Template`]: text with `{{ $steps… }}` references in it (agent
//! instructions), rendered from a [`Board`].

use super::board::{Board, text_of};
use super::reference::{Reference, TemplateError, err, parse_reference};

/// A piece of a template.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Piece {
    Text(String),
    Ref(Reference),
}

/// Text with `{{ $steps… }}` references in it (agent instructions).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pieces: Vec<Piece>,
}

impl Template {
    /// Parses a template; text without `{{` is a template of one piece.
    pub fn parse(text: &str) -> Result<Self, TemplateError> {
        let mut pieces = Vec::new();
        let mut rest = text;
        while let Some(open) = rest.find("{{") {
            if open > 0 {
                pieces.push(Piece::Text(rest[..open].to_string()));
            }
            let after = &rest[open + 2..];
            let Some(close) = after.find("}}") else {
                return err("`{{` without a closing `}}`");
            };
            pieces.push(Piece::Ref(parse_reference(&after[..close])?));
            rest = &after[close + 2..];
        }
        if !rest.is_empty() {
            pieces.push(Piece::Text(rest.to_string()));
        }
        Ok(Template { pieces })
    }

    /// Whether the template has references (so it must be rendered per turn).
    pub fn has_references(&self) -> bool {
        self.pieces.iter().any(|p| matches!(p, Piece::Ref(_)))
    }

    /// The `$steps…` references in the template, in the order they appear.
    pub fn references(&self) -> impl Iterator<Item = &Reference> {
        self.pieces.iter().filter_map(|p| match p {
            Piece::Ref(r) => Some(r),
            Piece::Text(_) => None,
        })
    }

    /// The text with every reference replaced by its value ("" when the
    /// step has not run yet).
    pub fn render(&self, board: &Board<'_>) -> String {
        let mut out = String::new();
        for p in &self.pieces {
            match p {
                Piece::Text(t) => out.push_str(t),
                Piece::Ref(r) => {
                    out.push_str(&board.resolve(r).map(|v| text_of(&v)).unwrap_or_default())
                }
            }
        }
        out
    }
}
