//! The context profiles of known models, matched by the longest model-id
//! prefix. A model not listed gets [`UNKNOWN_OPENAI_CONTEXT_WINDOW`]
//! (OpenAI-compatible servers run anything, often small local models) or
//! Anthropic's common window, with budgets derived from it.

use paddock_core::model::{ContextProfile, ModelConfig, ProviderKind};

/// The window assumed for an OpenAI-compatible model not in the table.
pub const UNKNOWN_OPENAI_CONTEXT_WINDOW: u32 = 32_768;
/// The window of an Anthropic model not in the table (every Claude model so far).
pub const ANTHROPIC_CONTEXT_WINDOW: u32 = 200_000;
/// The smallest window a run can work in: the system prompt and the tool
/// schemas alone take about 3.5k tokens.
pub const MIN_CONTEXT_WINDOW: u32 = 4_096;
/// Scripts are tests and demos: a large window unless they say otherwise.
pub const SCRIPTED_CONTEXT_WINDOW: u32 = 128_000;

/// One known model family: `prefix` of its id, window, default output budget.
struct Known {
    provider: ProviderKind,
    prefix: &'static str,
    context_window: u32,
    output_budget: u32,
}

const fn known(
    provider: ProviderKind,
    prefix: &'static str,
    context_window: u32,
    output_budget: u32,
) -> Known {
    Known {
        provider,
        prefix,
        context_window,
        output_budget,
    }
}

const OPENAI: ProviderKind = ProviderKind::OpenAi;
const ANTHROPIC: ProviderKind = ProviderKind::Anthropic;

/// Windows and output budgets as the providers publish them; the output
/// budget is what a turn reserves, not the model's maximum.
const KNOWN: &[Known] = &[
    known(OPENAI, "gpt-3.5-turbo", 16_385, 4_096),
    known(OPENAI, "gpt-4", 8_192, 2_048),
    known(OPENAI, "gpt-4-32k", 32_768, 4_096),
    known(OPENAI, "gpt-4-turbo", 128_000, 4_096),
    known(OPENAI, "gpt-4o", 128_000, 16_384),
    known(OPENAI, "gpt-4o-mini", 128_000, 16_384),
    known(OPENAI, "gpt-4.1", 1_047_576, 32_768),
    known(OPENAI, "gpt-5", 400_000, 32_768),
    known(OPENAI, "o1", 200_000, 32_768),
    known(OPENAI, "o3", 200_000, 32_768),
    known(OPENAI, "o4-mini", 200_000, 32_768),
    known(ANTHROPIC, "claude-3-haiku", 200_000, 4_096),
    known(ANTHROPIC, "claude-3-opus", 200_000, 4_096),
    known(ANTHROPIC, "claude-3-5-haiku", 200_000, 8_192),
    known(ANTHROPIC, "claude-3-5-sonnet", 200_000, 8_192),
    known(ANTHROPIC, "claude-3-7-sonnet", 200_000, 16_384),
    known(ANTHROPIC, "claude-sonnet-4", 200_000, 16_384),
    known(ANTHROPIC, "claude-opus-4", 200_000, 16_384),
    known(ANTHROPIC, "claude-haiku-4", 200_000, 16_384),
];

fn lookup(provider: ProviderKind, model: &str) -> Option<&'static Known> {
    KNOWN
        .iter()
        .filter(|k| k.provider == provider && model.starts_with(k.prefix))
        .max_by_key(|k| k.prefix.len())
}

/// The profile of `provider`'s `model` as listed, or derived from the
/// provider's default window.
pub fn known_profile(provider: ProviderKind, model: &str) -> ContextProfile {
    match lookup(provider, model) {
        Some(k) => ContextProfile {
            output_budget: k.output_budget,
            ..ContextProfile::for_window(k.context_window)
        },
        None => ContextProfile::for_window(match provider {
            ProviderKind::OpenAi => UNKNOWN_OPENAI_CONTEXT_WINDOW,
            ProviderKind::Anthropic => ANTHROPIC_CONTEXT_WINDOW,
            ProviderKind::Scripted => SCRIPTED_CONTEXT_WINDOW,
        }),
    }
}

/// The profile a built provider uses: the listed one, with the config's
/// window where it was overridden.
pub fn profile_of(config: &ModelConfig) -> ContextProfile {
    let listed = known_profile(config.provider, &config.model);
    if listed.context_window == config.context_window {
        listed
    } else {
        listed.with_window(config.context_window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_longest_prefix_wins() {
        assert_eq!(known_profile(OPENAI, "gpt-4").context_window, 8_192);
        assert_eq!(
            known_profile(OPENAI, "gpt-4-turbo-2024").context_window,
            128_000
        );
        assert_eq!(known_profile(OPENAI, "gpt-4o-mini").output_budget, 16_384);
        assert_eq!(
            known_profile(OPENAI, "gpt-4.1-nano").context_window,
            1_047_576
        );
        assert_eq!(
            known_profile(ANTHROPIC, "claude-sonnet-4-5").output_budget,
            16_384
        );
    }

    #[test]
    fn an_unknown_model_gets_a_conservative_window() {
        let local = known_profile(OPENAI, "qwen2.5-coder:7b");
        assert_eq!(local, ContextProfile::for_window(32_768));
        assert_eq!(
            known_profile(ANTHROPIC, "claude-next").context_window,
            200_000
        );
    }

    #[test]
    fn every_listed_budget_fits_its_window() {
        for k in KNOWN {
            assert!(k.output_budget < k.context_window / 2, "{}", k.prefix);
            assert!(!k.prefix.is_empty());
        }
    }
}
