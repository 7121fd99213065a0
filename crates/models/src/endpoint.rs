//! Base URLs of the HTTP providers. A base URL is accepted with or without
//! its API version (`http://host:8000` or `http://host:8000/v1`, trailing
//! slashes aside): the request path is always `<root>/v1/chat/completions`
//! (OpenAI) or `<root>/v1/messages` (Anthropic). A key is required only by a
//! provider's public endpoint; a custom one gets the key if its variable is
//! set, else none (local servers mostly take no key).

pub use paddock_core::model::api_root;
#[cfg(test)]
use paddock_core::model::same_api;

/// The URL of `path` (below `/v1`) on the API of `base`.
pub(crate) fn v1_url(base: &str, path: &str) -> String {
    format!("{}/v1/{path}", api_root(base))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_version_is_optional_in_a_base_url() {
        for base in [
            "http://127.0.0.1:8000",
            "http://127.0.0.1:8000/",
            "http://127.0.0.1:8000/v1",
            "http://127.0.0.1:8000/v1/",
        ] {
            assert_eq!(
                v1_url(base, "messages"),
                "http://127.0.0.1:8000/v1/messages",
                "{base}"
            );
        }
        assert_eq!(
            v1_url("https://openrouter.ai/api/v1", "chat/completions"),
            "https://openrouter.ai/api/v1/chat/completions"
        );
        assert!(same_api(
            "https://api.openai.com/v1",
            "https://api.openai.com/"
        ));
        assert!(!same_api("http://10.0.0.5:8000", "http://10.0.0.6:8000/v1"));
    }
}
