//! `paddock serve` started by a scenario test or a bench: on a free port of
//! 127.0.0.1, as its own node with its own data directory, and never with
//! the caller's data directory, database or config from the environment.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use anyhow::{Context, bail};

/// The `paddock serve` command of `node` with its data under `data_dir`
/// and `tokens` as its `PADDOCK_TOKENS` (`tenant:token,...`); add the
/// rest (a `--config`, options, stderr) and start it with [`spawn`].
pub fn command(node: &str, data_dir: &Path, tokens: &str) -> Command {
    let mut command = Command::new(crate::bins::paddock());
    command
        .args(["serve", "--listen", "127.0.0.1:0", "--node", node])
        .arg("--data-dir")
        .arg(data_dir)
        .env("PADDOCK_TOKENS", tokens)
        .env_remove("PADDOCK_DATA_DIR")
        .env_remove("PADDOCK_DATABASE_URL")
        .env_remove("PADDOCK_CONFIG")
        .stdin(Stdio::null());
    command
}

/// Starts a `paddock serve` command and waits for its first line on
/// stdout, which names its address: the server and its URL.
pub fn spawn(mut command: Command) -> anyhow::Result<(Child, String)> {
    let mut child = command
        .stdout(Stdio::piped())
        .spawn()
        .context("starting paddock serve")?;
    let stdout = child.stdout.take().context("paddock serve has no stdout")?;
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .context("reading paddock serve's address")?;
    match line.split_whitespace().find(|w| w.starts_with("http://")) {
        Some(url) => Ok((child, url.to_owned())),
        None => {
            let _ = child.kill();
            let _ = child.wait();
            bail!("paddock serve printed no address: {line:?}")
        }
    }
}
