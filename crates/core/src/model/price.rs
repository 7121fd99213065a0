//! What model calls cost: a price per model (configured, never guessed) and
//! the cost of a call's usage. Money is counted in micro-dollars (millionths
//! of a US dollar) so usage stays exact integers.

use std::collections::BTreeMap;
use std::fmt;

use serde::{Deserialize, Serialize};

use super::Usage;

/// Micro-dollars in one dollar.
pub const MICRO_USD_PER_USD: u64 = 1_000_000;

/// The price of one model, in micro-dollars per million tokens (so $3.00 per
/// million input tokens is `input: 3_000_000`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Price {
    pub input_per_mtok: u64,
    pub output_per_mtok: u64,
}

impl Price {
    /// The cost of one call's usage in micro-dollars, rounded up (a call
    /// never costs nothing when its price is not zero).
    pub fn cost(&self, usage: &Usage) -> u64 {
        let micro = u128::from(usage.input_tokens) * u128::from(self.input_per_mtok)
            + u128::from(usage.output_tokens) * u128::from(self.output_per_mtok);
        u64::try_from(micro.div_ceil(1_000_000)).unwrap_or(u64::MAX)
    }
}

/// Why a price could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PriceError {
    #[error("price {given:?}: expected MODEL=INPUT:OUTPUT (dollars per million tokens)")]
    Shape { given: String },
    #[error("price {given:?}: {what} is not a non-negative amount of dollars")]
    Amount { given: String, what: &'static str },
}

/// Dollars (a decimal such as `0.15`) as micro-dollars; None for a negative,
/// non-finite or absurd amount.
pub fn usd_to_micro(dollars: &str) -> Option<u64> {
    dollars_to_micro(dollars.trim().parse().ok()?)
}

/// Dollars (as a number, e.g. a cost an agent CLI reports) in
/// micro-dollars; None when negative, not finite or absurd.
pub fn dollars_to_micro(value: f64) -> Option<u64> {
    let micro = value * MICRO_USD_PER_USD as f64;
    // 1e15 micro-dollars is a billion dollars: beyond any real price or budget
    (value.is_finite() && (0.0..=1e15).contains(&micro)).then(|| micro.round() as u64)
}

/// Micro-dollars written as dollars, for people (`$0.0123`).
#[derive(Debug, Clone, Copy)]
pub struct Usd(pub u64);

impl fmt::Display for Usd {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = self.0 / MICRO_USD_PER_USD;
        let frac = self.0 % MICRO_USD_PER_USD;
        let digits = format!("{frac:06}");
        let trimmed = digits.trim_end_matches('0');
        let shown = if trimmed.len() < 2 {
            &digits[..2]
        } else {
            trimmed
        };
        write!(f, "${whole}.{shown}")
    }
}

/// Prices by model name (`ModelProvider::name`, such as `openai:gpt-4o`); a
/// key ending in `*` is a prefix (`scripted:*`). The exact name wins over a
/// prefix, a longer prefix over a shorter one. A model with no price has no
/// known cost, and a run with a cost limit on it is refused.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Prices(BTreeMap<String, Price>);

impl Prices {
    pub fn insert(&mut self, model: impl Into<String>, price: Price) {
        self.0.insert(model.into(), price);
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Reads `MODEL=INPUT:OUTPUT`, both in dollars per million tokens.
    pub fn parse_entry(entry: &str) -> Result<(String, Price), PriceError> {
        let shape = || PriceError::Shape {
            given: entry.to_owned(),
        };
        let (model, amounts) = entry.split_once('=').ok_or_else(shape)?;
        let (input, output) = amounts.split_once(':').ok_or_else(shape)?;
        let model = model.trim();
        if model.is_empty() {
            return Err(shape());
        }
        let amount = |text: &str, what| {
            usd_to_micro(text).ok_or_else(|| PriceError::Amount {
                given: entry.to_owned(),
                what,
            })
        };
        Ok((
            model.to_owned(),
            Price {
                input_per_mtok: amount(input, "the input price")?,
                output_per_mtok: amount(output, "the output price")?,
            },
        ))
    }

    /// The price of `model`, if one is configured.
    pub fn of(&self, model: &str) -> Option<Price> {
        if let Some(price) = self.0.get(model) {
            return Some(*price);
        }
        self.0
            .iter()
            .filter_map(|(key, price)| {
                let prefix = key.strip_suffix('*')?;
                model.starts_with(prefix).then_some((prefix.len(), *price))
            })
            .max_by_key(|(len, _)| *len)
            .map(|(_, price)| price)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cost_rounds_up_and_counts_both_directions() {
        let price = Price {
            input_per_mtok: 3_000_000,
            output_per_mtok: 15_000_000,
        };
        let usage = Usage {
            input_tokens: 1_000,
            output_tokens: 100,
        };
        assert_eq!(price.cost(&usage), 3_000 + 1_500);
        let cheap = Price {
            input_per_mtok: 150_000,
            output_per_mtok: 0,
        };
        let one = Usage {
            input_tokens: 1,
            output_tokens: 0,
        };
        assert_eq!(cheap.cost(&one), 1);
    }

    #[test]
    fn exact_names_beat_prefixes_and_longer_prefixes_win() {
        let mut prices = Prices::default();
        let p = |n| Price {
            input_per_mtok: n,
            output_per_mtok: n,
        };
        prices.insert("openai:*", p(1));
        prices.insert("openai:gpt-4o*", p(2));
        prices.insert("openai:gpt-4o-mini", p(3));
        assert_eq!(prices.of("openai:gpt-4o-mini"), Some(p(3)));
        assert_eq!(prices.of("openai:gpt-4o-2024"), Some(p(2)));
        assert_eq!(prices.of("openai:o1"), Some(p(1)));
        assert_eq!(prices.of("anthropic:claude"), None);
    }

    #[test]
    fn entries_parse_in_dollars_and_bad_ones_say_why() {
        let (model, price) = Prices::parse_entry("openai:gpt-4o=2.5:10").unwrap();
        assert_eq!(model, "openai:gpt-4o");
        assert_eq!(
            price,
            Price {
                input_per_mtok: 2_500_000,
                output_per_mtok: 10_000_000
            }
        );
        assert!(matches!(
            Prices::parse_entry("gpt=1"),
            Err(PriceError::Shape { .. })
        ));
        assert!(matches!(
            Prices::parse_entry("gpt=-1:2"),
            Err(PriceError::Amount {
                what: "the input price",
                ..
            })
        ));
        assert!(matches!(
            Prices::parse_entry("gpt=1:NaN"),
            Err(PriceError::Amount { .. })
        ));
    }

    #[test]
    fn dollars_print_for_people() {
        assert_eq!(Usd(0).to_string(), "$0.00");
        assert_eq!(Usd(1_500_000).to_string(), "$1.50");
        assert_eq!(Usd(12_300).to_string(), "$0.0123");
        assert_eq!(usd_to_micro("0.5"), Some(500_000));
        assert_eq!(usd_to_micro("-0.5"), None);
    }
}
