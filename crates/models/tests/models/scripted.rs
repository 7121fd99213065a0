//! The scripted provider: turns consumed in order, clear errors.

use crate::support;

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

#[tokio::test]
async fn a_turn_with_delta_ms_streams_its_text_and_arguments_in_pieces() -> anyhow::Result<()> {
    let dir = tempfile::tempdir()?;
    let script = r#"{"turns": [{"text": "one two three", "delta_ms": 40, "tool_calls": [
        {"name": "run_command", "arguments": {"command": "echo a long enough command"}}
    ]}]}"#;
    let provider = ScriptedProvider::load(&write(dir.path(), script)?, 32_000)?;
    let started = std::time::Instant::now();
    let mut stream = provider.stream(&ModelRequest::default(), CancellationToken::new());
    let mut texts = Vec::new();
    let mut arguments = Vec::new();
    let mut first_text_at = None;
    let mut last_text_at = None;
    let mut calls = Vec::new();
    while let Some(event) = futures_util::StreamExt::next(&mut stream).await {
        match event? {
            ModelEvent::TextDelta { text } => {
                first_text_at.get_or_insert(started.elapsed());
                last_text_at = Some(started.elapsed());
                texts.push(text);
            }
            ModelEvent::ToolCallDelta { json, .. } => arguments.push(json),
            ModelEvent::ToolCall(call) => calls.push(call),
            _ => {}
        }
    }
    assert_eq!(texts, ["one ", "two ", "three"]);
    let (first, last) = (
        first_text_at.unwrap_or_default(),
        last_text_at.unwrap_or_default(),
    );
    assert!(
        last - first >= std::time::Duration::from_millis(70),
        "the pieces came {:?} apart",
        last - first
    );
    assert!(arguments.len() > 1, "{arguments:?}");
    assert!(arguments.iter().all(|piece| piece.chars().count() <= 16));
    let joined: String = arguments.concat();
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&joined)?,
        json!({"command": "echo a long enough command"})
    );
    assert_eq!(calls.len(), 1);
    Ok(())
}
