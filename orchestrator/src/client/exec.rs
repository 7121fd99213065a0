//! `paddock sandbox exec ID -- CMD`: streams the command's output as it comes
//! (SSE, base64 so bytes pass through exactly) and exits with its code.

use std::io::{Read, Write};

use anyhow::{Context, bail};
use futures_util::StreamExt;
use paddock_api::http::{ErrorBody, OutputChunk};
use paddock_api::service::commands::ExecCommand;
use paddock_api::service::{ExecResult, ExitView};
use paddock_api::text::Encoding;
use reqwest::Method;

use super::{ApiClient, ServerError, encode_path, print_json};
use crate::cli::ExecArgs;
use crate::logging;
use crate::sandbox::exit::{self, EXIT_TIMED_OUT};

pub async fn exec(client: &ApiClient, args: ExecArgs) -> anyhow::Result<u8> {
    match stream_or_json(client, args).await {
        Err(err) => match err.downcast_ref::<ServerError>().and_then(|e| {
            exit::refused_by_server(&e.code, &e.message).map(|code| (code, &e.message))
        }) {
            // Not found, not executable, a bad cwd: the codes of `sandbox run`.
            Some((code, message)) => {
                logging::note(format_args!("paddock: {message}"));
                Ok(code)
            }
            None => Err(err),
        },
        ok => ok,
    }
}

async fn stream_or_json(client: &ApiClient, args: ExecArgs) -> anyhow::Result<u8> {
    let mut body = ExecCommand {
        argv: args.command,
        env: args.env.into_iter().collect(),
        cwd: args.cwd,
        timeout_ms: args.timeout,
        ..ExecCommand::default()
    };
    if args.stdin {
        let mut data = Vec::new();
        std::io::stdin()
            .read_to_end(&mut data)
            .context("reading stdin")?;
        body.stdin_base64 = Some(base64_encode(&data));
    }
    let url = format!("/v1/sandboxes/{}/exec", encode_path(&args.id));
    if args.json {
        let result: ExecResult = client
            .answer(client.request(Method::POST, &url).json(&body))
            .await?;
        print_json(&result)?;
        note_exit(&result.exit);
        return Ok(exit_code(&result.exit));
    }
    body.output_encoding = Encoding::Base64;
    let response = client
        .send(
            client
                .request(Method::POST, &url)
                .header(reqwest::header::ACCEPT, "text/event-stream")
                .json(&body),
        )
        .await?;
    let mut stream = response.bytes_stream();
    let mut buffer: Vec<u8> = Vec::new();
    while let Some(chunk) = stream.next().await {
        buffer.extend_from_slice(&chunk.context("reading the output stream")?);
        while let Some(end) = find(&buffer, b"\n\n") {
            let block: Vec<u8> = buffer.drain(..end + 2).collect();
            if let Some(code) = handle_event(&String::from_utf8_lossy(&block))? {
                return Ok(code);
            }
        }
    }
    bail!("the server closed the stream before the command exited")
}

/// Writes one SSE event's output; answers the exit code at the end.
fn handle_event(block: &str) -> anyhow::Result<Option<u8>> {
    let mut event = "";
    let mut data = String::new();
    for line in block.lines() {
        if let Some(v) = line.strip_prefix("event:") {
            event = v.trim();
        } else if let Some(v) = line.strip_prefix("data:") {
            data.push_str(v.strip_prefix(' ').unwrap_or(v));
        }
    }
    if event.is_empty() {
        return Ok(None); // a keep-alive comment
    }
    match event {
        "stdout" | "stderr" => {
            let chunk: OutputChunk = serde_json::from_str(&data).context("an unreadable event")?;
            let bytes = base64_decode(&chunk.data)?;
            if event == "stdout" {
                let mut out = std::io::stdout().lock();
                out.write_all(&bytes)?;
                out.flush()?;
            } else {
                std::io::stderr().write_all(&bytes)?;
            }
            Ok(None)
        }
        "exit" => {
            let exit: ExitView = serde_json::from_str(&data).context("an unreadable event")?;
            note_exit(&exit);
            Ok(Some(exit_code(&exit)))
        }
        "error" => Err(match serde_json::from_str::<ErrorBody>(&data) {
            Ok(body) => ServerError::from_body(None, body),
            Err(_) => ServerError {
                status: None,
                code: "error".to_owned(),
                message: "the command failed".to_owned(),
            },
        }
        .into()),
        _ => Ok(None),
    }
}

/// Says on stderr what the exit code alone does not, as `sandbox run` does.
fn note_exit(exit: &ExitView) {
    if exit.timed_out {
        logging::note(format_args!(
            "paddock: the command ran past its timeout and was killed"
        ));
    }
    if exit.truncated {
        logging::note(format_args!(
            "paddock: the output went past the server's cap; the rest was dropped"
        ));
    }
    if exit.oom_killed {
        logging::note(format_args!(
            "paddock: {}",
            crate::sandbox::exit::oom_sentence(None, "--memory when creating the sandbox")
        ));
    }
}

/// The exit code, 128 + the signal, or 124 when the timeout killed it.
pub(crate) fn exit_code(exit: &ExitView) -> u8 {
    if exit.timed_out {
        return EXIT_TIMED_OUT;
    }
    match (exit.exit_code, exit.signal) {
        (Some(code), _) => u8::try_from(code & 0xff).unwrap_or(1),
        (None, Some(signal)) => u8::try_from(128 + i64::from(signal)).unwrap_or(255),
        (None, None) => crate::EXIT_PADDOCK_FAILED,
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

pub(crate) fn base64_encode(bytes: &[u8]) -> String {
    use base64::Engine as _;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

pub(crate) fn base64_decode(text: &str) -> anyhow::Result<Vec<u8>> {
    use base64::Engine as _;
    Ok(base64::engine::general_purpose::STANDARD.decode(text)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exit_codes_follow_the_shell() {
        let exit = |exit_code, signal, timed_out| ExitView {
            exit_code,
            signal,
            timed_out,
            ..ExitView::default()
        };
        assert_eq!(exit_code(&exit(Some(3), None, false)), 3);
        assert_eq!(exit_code(&exit(None, Some(9), false)), 137);
        assert_eq!(exit_code(&exit(None, Some(9), true)), 124);
        assert_eq!(
            exit_code(&exit(None, None, false)),
            crate::EXIT_PADDOCK_FAILED
        );
    }

    #[test]
    fn an_exit_event_ends_the_stream() {
        // the data as the server writes it: an ExitView
        let exit = ExitView {
            exit_code: Some(5),
            ..ExitView::default()
        };
        let block = format!(
            "event: exit\ndata: {}\n\n",
            serde_json::to_string(&exit).unwrap()
        );
        assert_eq!(handle_event(&block).unwrap(), Some(5));
        // an exit event that is not an ExitView is an error, not a guess
        assert!(handle_event("event: exit\ndata: {\"exit_code\":5}\n\n").is_err());
        assert_eq!(handle_event(":keep-alive\n\n").unwrap(), None);
        assert!(
            handle_event(
                "event: error\ndata: {\"error\":{\"code\":\"x\",\"message\":\"gone\"}}\n\n"
            )
            .is_err()
        );
    }
}
