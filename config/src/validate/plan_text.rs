//! Positions inside a text plan: where line `k`, column `c` of the plan
//! (a YAML string value) is written in the file, and where in a plan line
//! a step id or a position of the path is.

use super::checker::Checker;
use crate::error::Position;
use crate::tree::FieldPath;

/// Where the plan text at `path` puts its lines in the file.
pub(super) struct PlanText {
    /// The value's start.
    start: Position,
    /// For a block scalar (`|`, `>`): line k of the plan is file line
    /// `start.line + k`; its content is indented this many columns.
    block_indent: Option<u32>,
    /// For a quoted scalar on one line: 1 (the quote).
    quote: u32,
}

impl PlanText {
    /// The layout of the plan text at `path`. The parser places a block
    /// scalar at its content's first line; the line above then ends with
    /// the indicator (`|`, `|-`, `>2`…).
    pub(super) fn of(c: &Checker<'_>, path: &FieldPath) -> PlanText {
        let start = c.value_start(path);
        let first = c
            .source_line(start.line)
            .map(|l| {
                l.chars()
                    .skip(start.column.saturating_sub(1) as usize)
                    .collect::<String>()
            })
            .unwrap_or_default();
        let indicator = |l: &str| {
            let l = l
                .trim_end()
                .trim_end_matches(|ch: char| ch.is_ascii_digit() || ch == '-' || ch == '+');
            l.ends_with('|') || l.ends_with('>')
        };
        let quote = u32::from(first.starts_with('"') || first.starts_with('\''));
        if indicator(&first) {
            // Placed at the indicator: the content starts on the next line.
            let indent = (start.line + 1..start.line.saturating_add(10_000))
                .map_while(|l| c.source_line(l))
                .find(|l| !l.trim().is_empty())
                .map_or(0, |l| {
                    u32::try_from(l.len() - l.trim_start_matches(' ').len()).unwrap_or(0)
                });
            return PlanText {
                start,
                block_indent: Some(indent),
                quote: 0,
            };
        }
        let above = start
            .line
            .checked_sub(1)
            .and_then(|l| c.source_line(l))
            .unwrap_or_default();
        // Only indentation before the value: it is not on its key's line.
        let alone = c.source_line(start.line).is_some_and(|l| {
            l.chars()
                .take(start.column.saturating_sub(1) as usize)
                .all(|ch| ch == ' ')
        });
        if quote == 0 && alone && indicator(above) {
            return PlanText {
                start: Position::new(start.line - 1, start.column),
                block_indent: Some(start.column.saturating_sub(1)),
                quote: 0,
            };
        }
        PlanText {
            start,
            block_indent: None,
            quote,
        }
    }

    /// The file position of column `column` (from 1) of plan line `line`
    /// (from 1). A plain or quoted string spread over several lines is
    /// located at the plan line's start only when it is on one line; else
    /// at the value.
    pub(super) fn position(&self, line: usize, column: usize) -> Position {
        let line = u32::try_from(line).unwrap_or(u32::MAX);
        let column = u32::try_from(column.max(1)).unwrap_or(u32::MAX);
        match self.block_indent {
            Some(indent) => Position::new(self.start.line.saturating_add(line), indent + column),
            None if line == 1 => {
                Position::new(self.start.line, self.start.column + self.quote + column - 1)
            }
            None => self.start,
        }
    }
}

/// The column (from 1) of step id `id` in plan line `text`: where it is
/// written as a whole id (between `->`, `,`, spaces or the line's ends).
pub(super) fn column_of_id(text: &str, id: &str) -> usize {
    let is_sep = |c: char| c.is_whitespace() || c == ',' || c == '-' || c == '>';
    let mut from = 0;
    while let Some(i) = text[from..].find(id) {
        let at = from + i;
        let end = at + id.len();
        let before = text[..at].chars().next_back().is_none_or(is_sep);
        let after = text[end..].chars().next().is_none_or(is_sep);
        if before && after {
            return text[..at].chars().count() + 1;
        }
        from = end;
    }
    first_column(text)
}

/// The column (from 1) where position `position` (from 1) of the path in
/// plan line `text` starts (its first character that is not a space; the
/// `->` before it when it is empty).
pub(super) fn column_of_position(text: &str, position: usize) -> usize {
    let mut offset = 0;
    for (p, part) in text.split("->").enumerate() {
        if p + 1 == position {
            let lead = part.len() - part.trim_start().len();
            let inner = part.trim_start();
            // An empty alternative: point at the comma that leaves it empty.
            let at = if inner.is_empty() || inner.starts_with(',') {
                if p == 0 {
                    offset + lead
                } else {
                    offset.saturating_sub(2)
                }
            } else {
                offset + lead
            };
            return text[..at.min(text.len())].chars().count() + 1;
        }
        offset += part.len() + 2;
    }
    first_column(text)
}

/// The column (from 1) of the first character of `text` that is not a
/// space.
pub(super) fn first_column(text: &str) -> usize {
    text.chars().take_while(|c| c.is_whitespace()).count() + 1
}
