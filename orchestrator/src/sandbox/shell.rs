//! `paddock sandbox shell`: a shell on a pseudo-terminal in a sandbox, with
//! this terminal raw while attached and restored on every way out.

mod link;
mod raw;

use std::io::Write;
use std::time::Duration;

use anyhow::Context;
use paddock_core::sandbox::SandboxSpec;
use paddock_proto::{ExecSpec, PtySize, StdinMode};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

use self::link::{Link, Step};
use self::raw::RawMode;
use super::signals::TermSignals;
use super::stdin::read_on_a_thread;
use crate::cli::ShellArgs;
use crate::client::ApiClient;
use crate::owners::{self, Role};

/// Size of a terminal when ours has none (stdout is not a terminal).
const DEFAULT_SIZE: PtySize = PtySize { rows: 24, cols: 80 };
/// Bytes of typed input sent at once.
const INPUT_CHUNK: usize = 16 << 10;
/// Output steps buffered between the reader task and the screen.
const OUTPUT_QUEUE: usize = 16;
/// The default program: bash where the sandbox has it, else sh.
const DEFAULT_SHELL: &str = "command -v bash >/dev/null 2>&1 && exec bash -i; exec sh -i";

pub async fn shell(args: ShellArgs) -> anyhow::Result<u8> {
    let size = window_size().unwrap_or(DEFAULT_SIZE);
    let spec = shell_spec(&args, size);
    match &args.id {
        Some(id) => {
            let api = ApiClient::from_args(&args.server, "sandbox shell ID")?;
            let link = match args.attach {
                Some(handle) => Link::attach_remote(api, id, handle).await?,
                None => Link::start_remote(api, id, &spec).await?,
            };
            if args.attach.is_some() {
                // The window may have changed while away.
                link.resize(size).await?;
            }
            attached(link).await
        }
        None => {
            let placement = owners::claim(
                Role::Sandbox,
                "sandbox shell",
                &args.backend,
                &std::env::temp_dir(),
            )?;
            let backend = crate::backend::connect(
                &args.backend,
                paddock_egress::EgressConfig::default(),
                None,
                None,
                &placement,
            )
            .await?;
            if let Some(dir) = &args.workspace
                && !dir.is_dir()
            {
                anyhow::bail!("--workspace {}: not a directory", dir.display());
            }
            let sandbox = backend
                .create(SandboxSpec {
                    workspace: args.workspace.clone(),
                    ..SandboxSpec::default()
                })
                .await
                .context("creating the sandbox")?;
            let result = match Link::start_local(sandbox.guest(), spec).await {
                Ok(link) => attached(link).await,
                Err(err) => Err(err),
            };
            let destroyed = sandbox.destroy().await;
            let code = result?;
            destroyed.context("destroying the sandbox")?;
            Ok(code)
        }
    }
}

fn shell_spec(args: &ShellArgs, size: PtySize) -> ExecSpec {
    let (argv, shell) = if args.command.is_empty() {
        (Vec::new(), Some(DEFAULT_SHELL.to_owned()))
    } else {
        (args.command.clone(), None)
    };
    ExecSpec {
        argv,
        shell,
        cwd: args.cwd.clone(),
        env: args.env.iter().cloned().collect(),
        stdin: StdinMode::Stream,
        timeout_ms: None,
        output_cap: None,
        pty: Some(size),
    }
}

/// The size of the terminal our stdout is, when it is one.
fn window_size() -> Option<PtySize> {
    let (rows, cols) = paddock_jail::pty::size(std::io::stdout()).ok()?;
    PtySize { rows, cols }.check().ok()
}

/// Pumps keys to the shell and its screen to ours until it exits (its exit
/// code) or we are told to leave (128 + the signal).
async fn attached(link: Link) -> anyhow::Result<u8> {
    // Raw only once the shell runs, and restored by the guard's drop on
    // every return below (and on unwinding).
    let _raw = RawMode::enter().context("putting the terminal in raw mode")?;
    let mut keys = read_on_a_thread(INPUT_CHUNK);
    let mut winch = signal(SignalKind::window_change()).context("watching window resizes")?;
    let mut leave = TermSignals::install().context("installing signal handlers")?;
    let (tx, mut screen) = mpsc::channel(OUTPUT_QUEUE);
    let reader = tokio::spawn(link.clone().read_into(tx));
    let mut keys_open = true;
    let mut stdout = std::io::stdout();
    let code = loop {
        tokio::select! {
            step = screen.recv() => match step {
                Some(Step::Output(data)) => {
                    stdout.write_all(&data).context("writing to the terminal")?;
                    stdout.flush().context("writing to the terminal")?;
                }
                Some(Step::Exited(code)) => break code,
                Some(Step::Failed(err)) => { reader.abort(); return Err(err); }
                None => anyhow::bail!("the shell's output stream ended"),
            },
            key = keys.recv(), if keys_open => match key {
                Some(data) if !data.is_empty() => link.write(&data).await?,
                // Our input ended (a pipe): the shell goes on until it exits.
                _ => keys_open = false,
            },
            _ = winch.recv() => {
                if let Some(size) = window_size() {
                    link.resize(size).await?;
                }
            },
            signal = leave.recv() => {
                reader.abort();
                link.left().await;
                break 128 + u8::try_from(signal).unwrap_or(0);
            },
        }
    };
    reader.abort();
    // What the shell printed last is on screen before the terminal is restored.
    let _ = tokio::time::timeout(Duration::from_millis(100), async { stdout.flush() }).await;
    Ok(code)
}
