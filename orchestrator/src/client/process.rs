//! `paddock process start|ls|output|stdin|signal` against a server: the
//! background-process routes of a sandbox, one request each (`output
//! --follow` polls until the process exits).

use std::io::{Read, Write};
use std::time::Duration;

use anyhow::Context;
use paddock_api::http::ProcessList;
use paddock_api::service::commands::{SendSignal, SignalName, StartProcess, WriteStdin};
use paddock_api::service::{ProcessOutputView, ProcessView};
use reqwest::Method;

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
            let body = StartProcess {
                argv: command,
                cwd,
                env: env.into_iter().collect(),
                timeout_ms: timeout,
                ..StartProcess::default()
            };
            let started: ProcessView = client
                .answer(client.request(Method::POST, &processes(&id)).json(&body))
                .await?;
            if json {
                print_json(&started)?;
            } else {
                println!("{}", started.handle);
            }
            Ok(0)
        }
        ProcessCommand::Ls { id, json } => {
            let list: ProcessList = client
                .answer(client.request(Method::GET, &processes(&id)))
                .await?;
            if json {
                print_json(&list)?;
                return Ok(0);
            }
            let all = list.processes;
            if all.is_empty() {
                println!("no processes");
                return Ok(0);
            }
            println!("{:<7}  {:<7}  {:<12}  COMMAND", "HANDLE", "PID", "STATE");
            for p in &all {
                let state = if p.running {
                    "running".to_owned()
                } else {
                    format!("exited {}", exit_of(p.exit.as_ref()))
                };
                // The handle and pid unpadded, as this line has always printed them.
                println!(
                    "{}  {}  {:<12}  {}",
                    p.handle,
                    p.pid,
                    state,
                    printable(&p.command.join(" "))
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
            let body = WriteStdin {
                data: None,
                data_base64: Some(base64_encode(&data)),
                eof,
            };
            let path = format!("{}/{handle}/stdin", processes(&id));
            client
                .send(client.request(Method::POST, &path).json(&body))
                .await?;
            Ok(0)
        }
        ProcessCommand::Signal { id, handle, signal } => {
            let signal = match signal.parse::<i32>() {
                Ok(number) => SignalName::Number(number),
                Err(_) => SignalName::Name(signal),
            };
            let path = format!("{}/{handle}/signal", processes(&id));
            client
                .send(
                    client
                        .request(Method::POST, &path)
                        .json(&SendSignal { signal }),
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
        let page: ProcessOutputView = client
            .answer(client.request(Method::GET, &path).query(&query))
            .await?;
        if page.dropped > offset {
            eprintln!(
                "paddock: output before byte {} is no longer kept",
                page.offset
            );
        }
        let bytes = base64_decode(&page.data)?;
        stdout.write_all(&bytes)?;
        stdout.flush()?;
        let next = page.next_offset;
        if !follow {
            return Ok(0);
        }
        if !page.running && next == offset {
            return Ok(exit_of(page.exit.as_ref()));
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

/// The exit code of a process that ended (125 for one with no exit).
fn exit_of(exit: Option<&paddock_api::service::ExitView>) -> u8 {
    exit.map_or(crate::EXIT_PADDOCK_FAILED, exit_code)
}

fn processes(id: &str) -> String {
    format!("/v1/sandboxes/{}/processes", encode_path(id))
}
