//! `provider:model` specs and building providers from a config.

use paddock_core::model::{ModelConfig, ModelError, ProviderKind};
use paddock_models::{build_with_env, parse_spec};

fn env_with_keys(name: &str) -> Option<String> {
    match name {
        "OPENAI_API_KEY" => Some("sk-live-openai".into()),
        "ANTHROPIC_API_KEY" => Some("sk-ant-live".into()),
        _ => None,
    }
}

#[test]
fn specs_get_each_providers_defaults() -> anyhow::Result<()> {
    assert_eq!(
        parse_spec("openai:gpt-4o")?,
        ModelConfig {
            provider: ProviderKind::OpenAi,
            model: "gpt-4o".into(),
            base_url: Some("https://api.openai.com/v1".into()),
            context_window: 128_000,
            api_key_env: Some("OPENAI_API_KEY".into()),
        }
    );
    assert_eq!(
        parse_spec("anthropic:claude-sonnet-4-5")?,
        ModelConfig {
            provider: ProviderKind::Anthropic,
            model: "claude-sonnet-4-5".into(),
            base_url: Some("https://api.anthropic.com".into()),
            context_window: 200_000,
            api_key_env: Some("ANTHROPIC_API_KEY".into()),
        }
    );
    // only the first colon separates: paths and model ids may hold more
    assert_eq!(
        parse_spec("scripted:examples/demo:v2.json")?,
        ModelConfig {
            provider: ProviderKind::Scripted,
            model: "examples/demo:v2.json".into(),
            base_url: None,
            context_window: 128_000,
            api_key_env: None,
        }
    );
    Ok(())
}

#[test]
fn bad_specs_are_config_errors() {
    for spec in ["gpt-4o", "gemini:pro", "openai:", "scripted:  "] {
        let result = parse_spec(spec);
        assert!(
            matches!(&result, Err(ModelError::Config { reason }) if reason.contains(&format!("{spec:?}"))),
            "{spec}: {result:?}"
        );
    }
}

#[test]
fn a_missing_key_fails_at_construction() -> anyhow::Result<()> {
    for spec in ["openai:gpt-4o", "anthropic:claude-sonnet-4-5"] {
        // The public endpoint, however its base URL is written.
        let mut config = parse_spec(spec)?;
        let public = config.base_url.clone().unwrap_or_default();
        config.base_url = Some(format!("{}/", paddock_models::api_root(&public)));
        let result = build_with_env(&config, |_| None);
        let expected = config.api_key_env.clone().unwrap_or_default();
        assert!(
            matches!(&result, Err(ModelError::MissingApiKey { env }) if *env == expected),
            "{spec}: {:?}",
            result.err()
        );
    }
    Ok(())
}

#[test]
fn a_custom_key_variable_and_base_url_are_used() -> anyhow::Result<()> {
    let mut config = parse_spec("openai:qwen2.5-coder")?;
    config.base_url = Some("http://127.0.0.1:11434/v1".into());
    config.api_key_env = Some("LOCAL_LLM_KEY".into());
    config.context_window = 32_768;
    let provider = build_with_env(&config, |name| {
        (name == "LOCAL_LLM_KEY").then(|| "local-secret".to_owned())
    })?;
    assert_eq!(provider.name(), "openai:qwen2.5-coder");
    assert_eq!(provider.context_window(), 32_768);
    let debug = format!("{provider:?}");
    assert!(debug.contains("127.0.0.1:11434"), "{debug}");
    assert!(!debug.contains("local-secret"), "the key leaked: {debug}");

    // no key variable at all: a keyless local server
    config.api_key_env = None;
    build_with_env(&config, |_| None)?;
    Ok(())
}

#[test]
fn a_custom_base_url_needs_no_key() -> anyhow::Result<()> {
    for (spec, base) in [
        ("openai:qwen2.5-coder", "http://127.0.0.1:9/v1"),
        ("anthropic:local", "http://127.0.0.1:9"),
    ] {
        let mut config = parse_spec(spec)?;
        config.base_url = Some(base.into());
        let provider = build_with_env(&config, |_| None)?;
        assert_eq!(provider.name(), spec);
    }
    Ok(())
}

#[tokio::test]
async fn https_endpoints_speak_tls() -> anyhow::Result<()> {
    use paddock_core::model::{Message, ModelRequest, collect};
    use tokio::io::AsyncWriteExt;

    // a plain-HTTP server behind an https:// URL: the client must attempt a TLS
    // handshake and fail as a network error, not talk HTTP in the clear
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let port = listener.local_addr()?.port();
    let server = tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let _ = socket
                .write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n")
                .await;
        }
    });
    let mut config = parse_spec("openai:gpt-4o")?;
    config.base_url = Some(format!("https://127.0.0.1:{port}/v1"));
    let provider = build_with_env(&config, env_with_keys)?;
    let request = ModelRequest {
        messages: vec![Message::user("hi")],
        ..ModelRequest::default()
    };
    let outcome = collect(provider.stream(&request, Default::default())).await;
    server.abort();
    match outcome {
        Err(ModelError::Network { .. } | ModelError::RetriesExhausted { .. }) => Ok(()),
        other => anyhow::bail!("expected a TLS failure, got {other:?}"),
    }
}

#[test]
fn scripted_specs_load_the_file() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("demo.json");
    std::fs::write(&path, r#"{"turns": [{"text": "hi"}]}"#)?;
    let provider = build_with_env(
        &parse_spec(&format!("scripted:{}", path.display()))?,
        |_| None,
    )?;
    assert_eq!(provider.name(), format!("scripted:{}", path.display()));

    let missing = parse_spec("scripted:/nonexistent/script.json")?;
    assert!(matches!(
        build_with_env(&missing, |_| None),
        Err(ModelError::ScriptRead { .. })
    ));
    Ok(())
}
