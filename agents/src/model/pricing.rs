//! [`Pricing`]: what a model's tokens cost, to turn a call's usage into
//! money.

use troupe_runtime::message::Usage;

/// What a model charges, in USD per million tokens, read and written.
///
/// ```
/// use troupe_agents::Pricing;
/// use troupe_runtime::message::Usage;
///
/// let price = Pricing::per_million(2.5, 10.0);
/// let usage = Usage { prompt_tokens: 1_000, completion_tokens: 200 };
/// assert!((price.cost(usage) - 0.0045).abs() < 1e-12);
/// ```
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pricing {
    /// USD per million input (prompt) tokens.
    pub input: f64,
    /// USD per million output (completion) tokens.
    pub output: f64,
}

impl Pricing {
    /// `input` and `output` USD per million tokens.
    pub fn per_million(input: f64, output: f64) -> Self {
        Pricing { input, output }
    }

    /// What a call that used `usage` cost, in USD.
    pub fn cost(&self, usage: Usage) -> f64 {
        (usage.prompt_tokens as f64 * self.input + usage.completion_tokens as f64 * self.output)
            / 1e6
    }
}
