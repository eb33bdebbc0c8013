//! [`CacheKey`]: a node's `cache: {key}` template — `{{ $steps… }}`
//! references over the run's state, and `{{ $input }}` for the text of
//! what the node reads this turn.

use super::board::Board;
use super::text::Template;

/// What `{{ $input }}` is written as (spaces inside the braces allowed).
const INPUT_PATTERN: &str = r"\{\{\s*\$input\s*\}\}";

/// A cache key template: `{{ $steps… }}` pieces between `{{ $input }}`s.
#[derive(Debug, Clone)]
pub(crate) struct CacheKey {
    parts: Vec<Template>,
}

impl CacheKey {
    /// Parses a key template.
    pub(crate) fn parse(text: &str) -> Result<CacheKey, String> {
        let re = regex::Regex::new(INPUT_PATTERN).map_err(|e| e.to_string())?;
        let parts = re
            .split(text)
            .map(Template::parse)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| e.message)?;
        Ok(CacheKey { parts })
    }

    /// The templates between the `{{ $input }}`s.
    pub(crate) fn templates(&self) -> &[Template] {
        &self.parts
    }

    /// The key over `board`, `input` standing for `{{ $input }}`.
    pub(crate) fn render(&self, board: &Board<'_>, input: &str) -> String {
        let rendered: Vec<String> = self.parts.iter().map(|t| t.render(board)).collect();
        rendered.join(input)
    }
}
