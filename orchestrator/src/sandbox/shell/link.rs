//! The terminal process a shell talks to: on a server (the processes
//! routes, its screen as server-sent events) or in a sandbox of this host
//! (the guest protocol directly).

use std::sync::Arc;
use std::time::Duration;

use anyhow::{Context, bail};
use paddock_api::http::{ProcessList, TerminalOutput};
use paddock_api::service::commands::{ResizeTerminal, StartProcess, WriteStdin};
use paddock_api::service::{ExitView, ProcessView};
use paddock_core::sandbox::GuestOps;
use paddock_proto::{ExecSpec, PtySize};
use reqwest::Method;
use tokio::sync::mpsc;

use crate::client::sse::EventSource;
use crate::client::{ApiClient, base64_decode, base64_encode, exit_code};

/// Output bytes one local read takes at most.
const READ_CHUNK: u64 = 64 << 10;
/// How long one local read waits at the end of the output.
const READ_WAIT_MS: u64 = 10_000;
/// A dropped event stream is reopened (from where it stopped) this often
/// in a row before the shell gives up on the server.
const RECONNECTS: u32 = 3;
const RECONNECT_PAUSE: Duration = Duration::from_millis(500);

#[derive(Debug, Clone)]
pub enum Link {
    Remote {
        api: ApiClient,
        /// `/v1/sandboxes/{id}/processes/{handle}`.
        path: String,
    },
    Local {
        guest: Arc<dyn GuestOps>,
        handle: u64,
    },
}

/// What the shell's side did next.
#[derive(Debug)]
pub enum Step {
    Output(Vec<u8>),
    /// Its exit code, shell style.
    Exited(u8),
    Failed(anyhow::Error),
}

impl Link {
    pub async fn start_remote(api: ApiClient, id: &str, spec: &ExecSpec) -> anyhow::Result<Self> {
        let processes = format!("/v1/sandboxes/{id}/processes");
        let body = StartProcess {
            argv: spec.argv.clone(),
            shell: spec.shell.clone(),
            cwd: spec.cwd.clone(),
            env: spec.env.clone(),
            timeout_ms: None,
            pty: spec.pty,
        };
        let started: ProcessView = api
            .answer(api.request(Method::POST, &processes).json(&body))
            .await?;
        let handle = started.handle;
        Ok(Self::Remote {
            api,
            path: format!("{processes}/{handle}"),
        })
    }

    /// A running terminal process the server already has.
    pub async fn attach_remote(api: ApiClient, id: &str, handle: u64) -> anyhow::Result<Self> {
        let processes = format!("/v1/sandboxes/{id}/processes");
        let list: ProcessList = api.answer(api.request(Method::GET, &processes)).await?;
        let found = list.processes.into_iter().find(|p| p.handle == handle);
        match found {
            None => bail!("sandbox {id} has no process {handle}"),
            Some(p) if !p.pty => {
                bail!("process {handle} has no terminal (it was not started by `sandbox shell`)")
            }
            Some(_) => Ok(Self::Remote {
                api,
                path: format!("{processes}/{handle}"),
            }),
        }
    }

    pub async fn start_local(guest: Arc<dyn GuestOps>, spec: ExecSpec) -> anyhow::Result<Self> {
        let handle = guest
            .process_start(spec)
            .await
            .context("starting the shell")?
            .handle;
        Ok(Self::Local { guest, handle })
    }

    pub async fn write(&self, data: &[u8]) -> anyhow::Result<()> {
        match self {
            Self::Remote { api, path } => {
                let body = WriteStdin {
                    data: None,
                    data_base64: Some(base64_encode(data)),
                    eof: false,
                };
                api.send(
                    api.request(Method::POST, &format!("{path}/stdin"))
                        .json(&body),
                )
                .await?;
            }
            Self::Local { guest, handle } => guest
                .process_write(*handle, data, false)
                .await
                .context("typing into the shell")?,
        }
        Ok(())
    }

    pub async fn resize(&self, size: PtySize) -> anyhow::Result<()> {
        match self {
            Self::Remote { api, path } => {
                let body = ResizeTerminal {
                    rows: size.rows,
                    cols: size.cols,
                };
                api.send(
                    api.request(Method::POST, &format!("{path}/resize"))
                        .json(&body),
                )
                .await?;
            }
            Self::Local { guest, handle } => guest
                .process_resize(*handle, size)
                .await
                .context("resizing the shell's terminal")?,
        }
        Ok(())
    }

    /// We leave without the shell exiting: a server's shell stays for a
    /// later `--attach`; a local one is hung up on (its sandbox goes next).
    pub async fn left(&self) {
        if let Self::Local { guest, handle } = self {
            let _ = guest.process_signal(*handle, libc::SIGHUP).await;
        }
    }

    /// Sends the shell's screen to `tx` until it exits or fails.
    pub async fn read_into(self, tx: mpsc::Sender<Step>) {
        let last = match self {
            Self::Remote { api, path } => remote_screen(&api, &path, &tx).await,
            Self::Local { guest, handle } => local_screen(&*guest, handle, &tx).await,
        };
        let _ = tx.send(last).await;
    }
}

async fn local_screen(guest: &dyn GuestOps, handle: u64, tx: &mpsc::Sender<Step>) -> Step {
    let mut offset = 0;
    loop {
        let out = match guest
            .process_follow(handle, offset, READ_CHUNK, READ_WAIT_MS)
            .await
        {
            Ok(out) => out,
            Err(err) => return Step::Failed(anyhow::Error::from(err).context("reading the shell")),
        };
        offset = out.next_offset;
        if !out.data.is_empty() {
            if tx.send(Step::Output(out.data)).await.is_err() {
                return Step::Exited(0);
            }
        } else if let Some(exit) = out.exit {
            return Step::Exited(u8::try_from(exit.shell_code() & 0xff).unwrap_or(1));
        }
    }
}

async fn remote_screen(api: &ApiClient, path: &str, tx: &mpsc::Sender<Step>) -> Step {
    let stream = format!("{path}/stream");
    // From 0: the first attach (or a reattach) shows the scrollback.
    let mut offset: u64 = 0;
    let mut failures = 0;
    loop {
        let result = follow(api, &stream, &mut offset, tx).await;
        match result {
            Ok(Some(step)) => return step,
            // The stream ended or broke midway: reopen where it stopped.
            Ok(None) | Err(_) if failures < RECONNECTS => {
                failures += 1;
                tokio::time::sleep(RECONNECT_PAUSE).await;
            }
            Ok(None) => {
                return Step::Failed(anyhow::anyhow!("the server ended the shell's stream"));
            }
            Err(err) => return Step::Failed(err),
        }
    }
}

/// One open stream: Some(last step) when the shell exited (or the screen is
/// gone), None when the stream ended first.
async fn follow(
    api: &ApiClient,
    stream: &str,
    offset: &mut u64,
    tx: &mpsc::Sender<Step>,
) -> anyhow::Result<Option<Step>> {
    let mut events = EventSource::open(api, stream, &[("offset", offset.to_string())]).await?;
    while let Some(frame) = events.next().await? {
        match frame.event.as_str() {
            "output" => {
                let output: TerminalOutput =
                    serde_json::from_str(&frame.data).context("an unreadable output event")?;
                let bytes = base64_decode(&output.data_base64)?;
                if let Some(next) = frame.id.as_deref().and_then(|id| id.parse().ok()) {
                    *offset = next;
                }
                if tx.send(Step::Output(bytes)).await.is_err() {
                    return Ok(Some(Step::Exited(0)));
                }
            }
            "exit" => {
                let code = serde_json::from_str::<ExitView>(&frame.data)
                    .map_or(crate::EXIT_PADDOCK_FAILED, |exit| exit_code(&exit));
                return Ok(Some(Step::Exited(code)));
            }
            _ => {}
        }
    }
    Ok(None)
}
