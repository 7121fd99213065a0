//! `paddock process start|ls|output|stdin|signal` against a server: the
//! background-process routes of a sandbox, one request each (`output
//! --follow` polls until the process exits).

use std::io::{Read, Write};
use std::time::Duration;

use anyhow::Context;
use reqwest::Method;
use serde_json::{Value, json};

use super::exec::{base64_decode, base64_encode, exit_code};
use super::{ApiClient, encode_path, print_json};
use crate::cli::ProcessCommand;
use crate::printable::printable;
use crate::sandbox::signals::TermSignals;

/// How often `output --follow` asks for more.
const FOLLOW_POLL: Duration = Duration::from_millis(200);
/// Exit code of `output --follow` stopped by a signal (128 + SIGINT).
const EXIT_INTERRUPTED: u8 = 130;

pub async fn process(client: &ApiClient, command: ProcessCommand) -> anyhow::Result<u8> {
    match command {
        ProcessCommand::Start {
            id,
            cwd,
            env,
            timeout,
            json,
            command,
        } => {
            let body = json!({
                "argv": command,
                "cwd": cwd,
                "env": env.into_iter().collect::<std::collections::BTreeMap<_, _>>(),
                "timeout_ms": timeout,
            });
            let started = client
                .json(client.request(Method::POST, &processes(&id)).json(&body))
                .await?;
            if json {
                print_json(&started)?;
            } else {
                println!("{}", started["handle"]);
            }
            Ok(0)
        }
        ProcessCommand::Ls { id, json } => {
            let list = client
                .json(client.request(Method::GET, &processes(&id)))
                .await?;
            if json {
                print_json(&list)?;
                return Ok(0);
            }
            let all = list["processes"].as_array().cloned().unwrap_or_default();
            if all.is_empty() {
                println!("no processes");
                return Ok(0);
            }
            println!("{:<7}  {:<7}  {:<12}  COMMAND", "HANDLE", "PID", "STATE");
            for p in &all {
                let state = if p["running"].as_bool().unwrap_or(false) {
                    "running".to_owned()
                } else {
                    format!("exited {}", exit_code(&p["exit"]))
                };
                let command: Vec<&str> = p["command"]
                    .as_array()
                    .map(|c| c.iter().filter_map(Value::as_str).collect())
                    .unwrap_or_default();
                println!(
                    "{:<7}  {:<7}  {:<12}  {}",
                    p["handle"],
                    p["pid"],
                    state,
                    printable(&command.join(" "))
                );
            }
            Ok(0)
        }
        ProcessCommand::Output {
            id,
            handle,
            offset,
            follow,
        } => output(client, &id, handle, offset, follow).await,
        ProcessCommand::Stdin {
            id,
            handle,
            input,
            eof,
        } => {
            let mut data = Vec::new();
            match &input {
                Some(file) => {
                    data = std::fs::read(file)
                        .with_context(|| format!("reading {}", file.display()))?;
                }
                None => {
                    std::io::stdin()
                        .read_to_end(&mut data)
                        .context("reading stdin")?;
                }
            }
            let body = json!({ "data_base64": base64_encode(&data), "eof": eof });
            let path = format!("{}/{handle}/stdin", processes(&id));
            client
                .send(client.request(Method::POST, &path).json(&body))
                .await?;
            Ok(0)
        }
        ProcessCommand::Signal { id, handle, signal } => {
            let signal = match signal.parse::<i32>() {
                Ok(number) => Value::from(number),
                Err(_) => Value::from(signal),
            };
            let path = format!("{}/{handle}/signal", processes(&id));
            client
                .send(
                    client
                        .request(Method::POST, &path)
                        .json(&json!({ "signal": signal })),
                )
                .await?;
            Ok(0)
        }
    }
}

/// Writes the output from `offset` on to stdout, exactly as captured; with
/// `follow`, until the process exits, then exits with its code.
async fn output(
    client: &ApiClient,
    id: &str,
    handle: u64,
    mut offset: u64,
    follow: bool,
) -> anyhow::Result<u8> {
    let path = format!("{}/{handle}/output", processes(id));
    let mut signals = if follow {
        Some(TermSignals::install()?)
    } else {
        None
    };
    let mut stdout = std::io::stdout();
    loop {
        let query = [
            ("offset", offset.to_string()),
            ("encoding", "base64".to_owned()),
        ];
        let page = client
            .json(client.request(Method::GET, &path).query(&query))
            .await?;
        if page["dropped"].as_u64().unwrap_or(0) > offset {
            eprintln!(
                "paddock: output before byte {} is no longer kept",
                page["offset"]
            );
        }
        let bytes = base64_decode(page["data"].as_str().unwrap_or_default())?;
        stdout.write_all(&bytes)?;
        stdout.flush()?;
        let next = page["next_offset"].as_u64().unwrap_or(offset);
        let running = page["running"].as_bool().unwrap_or(false);
        if !follow {
            return Ok(0);
        }
        if !running && next == offset {
            return Ok(exit_code(&page["exit"]));
        }
        offset = next;
        if !bytes.is_empty() {
            continue;
        }
        if let Some(signals) = signals.as_mut() {
            tokio::select! {
                () = tokio::time::sleep(FOLLOW_POLL) => {}
                _ = signals.recv() => return Ok(EXIT_INTERRUPTED),
            }
        }
    }
}

fn processes(id: &str) -> String {
    format!("/v1/sandboxes/{}/processes", encode_path(id))
}
