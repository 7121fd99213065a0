//! The scripted provider: turns consumed in order, clear errors.

mod support;

use std::path::Path;

use paddock_core::model::{
    Message, ModelError, ModelEvent, ModelProvider, ModelRequest, ModelResponse, StopReason,
    ToolCall, Usage, collect,
};
use paddock_models::ScriptedProvider;
use serde_json::json;
use support::drain;
use tokio_util::sync::CancellationToken;

fn write(dir: &Path, text: &str) -> anyhow::Result<std::path::PathBuf> {
    let path = dir.join("script.json");
    std::fs::write(&path, text)?;
    Ok(path)
}

const SCRIPT: &str = r#"{"turns": [
    {"text": "I will look first.", "tool_calls": [
        {"name": "workspace_tree", "arguments": {}},
        {"name": "read_file", "arguments": {"path": "src/lib.rs"}}
    ], "usage": {"input_tokens": 100, "output_tokens": 20}},
    {"text": "All done."}
]}"#;

#[tokio::test]
async fn each_call_consumes_the_next_turn_with_deterministic_ids() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let provider = ScriptedProvider::load(&write(dir.path(), SCRIPT)?, 32_000)?;
    assert_eq!(provider.context_window(), 32_000);
    assert_eq!(provider.remaining(), 2);

    let request = ModelRequest {
        messages: vec![Message::user("x".repeat(40))],
        ..ModelRequest::default()
    };
    let events: Vec<ModelEvent> = drain(provider.stream(&request, CancellationToken::new()))
        .await
        .into_iter()
        .collect::<Result<_, _>>()?;
    let tree = ToolCall {
        id: "call_1_1".into(),
        name: "workspace_tree".into(),
        arguments: json!({}),
    };
    let read = ToolCall {
        id: "call_1_2".into(),
        name: "read_file".into(),
        arguments: json!({"path": "src/lib.rs"}),
    };
    assert_eq!(
        events,
        vec![
            ModelEvent::TextDelta {
                text: "I will look first.".into()
            },
            ModelEvent::ToolCallStart {
                id: "call_1_1".into(),
                name: "workspace_tree".into()
            },
            ModelEvent::ToolCallDelta {
                id: "call_1_1".into(),
                json: "{}".into()
            },
            ModelEvent::ToolCall(tree),
            ModelEvent::ToolCallStart {
                id: "call_1_2".into(),
                name: "read_file".into()
            },
            ModelEvent::ToolCallDelta {
                id: "call_1_2".into(),
                json: "{\"path\":\"src/lib.rs\"}".into()
            },
            ModelEvent::ToolCall(read),
            ModelEvent::Usage(Usage {
                input_tokens: 100,
                output_tokens: 20
            }),
            ModelEvent::Done {
                stop: StopReason::ToolCalls
            },
        ]
    );

    // without a scripted usage, the turn reports estimates: 40 chars / 4 + 4 framing
    let second = collect(provider.stream(&request, CancellationToken::new())).await?;
    assert_eq!(
        second,
        ModelResponse {
            text: "All done.".into(),
            tool_calls: vec![],
            usage: Some(Usage {
                input_tokens: 14,
                output_tokens: 3
            }),
            stop: StopReason::EndTurn,
        }
    );
    assert_eq!(provider.remaining(), 0);
    Ok(())
}

#[tokio::test]
async fn running_out_of_turns_names_the_turn() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let path = write(dir.path(), SCRIPT)?;
    let provider = ScriptedProvider::load(&path, 32_000)?;
    for _ in 0..2 {
        collect(provider.stream(&ModelRequest::default(), CancellationToken::new())).await?;
    }
    let error = collect(provider.stream(&ModelRequest::default(), CancellationToken::new()))
        .await
        .err();
    match &error {
        Some(ModelError::ScriptExhausted {
            path: p,
            turn: 3,
            available: 2,
        }) => assert_eq!(p, &path),
        other => anyhow::bail!("expected ScriptExhausted, got {other:?}"),
    }
    let message = error.map(|e| e.to_string()).unwrap_or_default();
    assert_eq!(
        message,
        format!("model script {} has no turn 3: it holds 2", path.display())
    );
    Ok(())
}

#[tokio::test]
async fn a_cancelled_call_consumes_no_turn() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let provider = ScriptedProvider::load(&write(dir.path(), SCRIPT)?, 32_000)?;
    let cancel = CancellationToken::new();
    cancel.cancel();
    let result = collect(provider.stream(&ModelRequest::default(), cancel)).await;
    assert!(matches!(result, Err(ModelError::Cancelled)), "{result:?}");
    assert_eq!(provider.remaining(), 2);
    Ok(())
}

#[test]
fn malformed_scripts_are_refused_with_their_path() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    for bad in [
        r#"{"turns": [{"text": "unterminated}]}"#,
        r#"{"turns": [{"text": "typo", "toolcalls": []}]}"#,
        r#"{"turns": [{"tool_calls": [{"arguments": {}}]}]}"#,
        r#"{"turns": [{"tool_calls": [{"name": " "}]}]}"#,
        r#"{"steps": []}"#,
    ] {
        let path = write(dir.path(), bad)?;
        match ScriptedProvider::load(&path, 1000) {
            Err(error @ ModelError::ScriptInvalid { .. }) => {
                assert_eq!(
                    error.to_string(),
                    format!("model script {} is malformed", path.display()),
                    "{bad}"
                );
                assert!(std::error::Error::source(&error).is_some(), "{bad}");
            }
            other => anyhow::bail!("{bad}: expected ScriptInvalid, got {other:?}"),
        }
    }
    let missing = dir.path().join("missing.json");
    let result = ScriptedProvider::load(&missing, 1000);
    assert!(
        matches!(&result, Err(ModelError::ScriptRead { path, .. }) if path == &missing),
        "{result:?}"
    );
    Ok(())
}
