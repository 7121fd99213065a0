//! `paddock sandbox shell` driven through a real pseudo-terminal, as a
//! person's terminal would: raw mode while attached (Ctrl-C reaches the
//! sandbox's shell), the window size at start and on SIGWINCH, the shell's
//! exit code, the terminal restored on exit and on SIGTERM, and `--attach`
//! coming back to a shell left running with its scrollback; on a server and
//! on this host. Needs root and `paddock-guest` built next to `paddock`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::fs::File;
use std::io::{Read, Write};
use std::os::fd::OwnedFd;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use common::{PADDOCK, ServerProcess, unique};
use nix::sys::termios::{LocalFlags, tcgetattr};

/// The CLI on the slave side of a terminal we hold the master of.
struct OnPty {
    child: Child,
    master: File,
    /// Our copy of the slave, to read the terminal's settings.
    slave: OwnedFd,
    output: mpsc::Receiver<Vec<u8>>,
    screen: String,
}

impl OnPty {
    fn spawn(mut command: Command, rows: u16, cols: u16) -> Result<Self> {
        let pair = paddock_jail::pty::open(rows, cols)?;
        command
            .stdin(Stdio::from(pair.slave.try_clone()?))
            .stdout(Stdio::from(pair.slave.try_clone()?))
            .stderr(Stdio::from(pair.slave.try_clone()?));
        // Its own session with this terminal as the controlling one, so the
        // kernel's SIGWINCH reaches it.
        paddock_jail::pty::attach_before_exec(&mut command);
        let child = command.spawn()?;
        let mut reader = File::from(pair.master.try_clone()?);
        let (tx, output) = mpsc::channel();
        std::thread::spawn(move || {
            let mut buf = [0u8; 4096];
            while let Ok(n) = reader.read(&mut buf) {
                if n == 0 || tx.send(buf[..n].to_vec()).is_err() {
                    break;
                }
            }
        });
        Ok(Self {
            child,
            master: File::from(pair.master),
            slave: pair.slave,
            output,
            screen: String::new(),
        })
    }

    fn canonical(&self) -> bool {
        tcgetattr(&self.slave)
            .map(|t| {
                t.local_flags
                    .contains(LocalFlags::ICANON | LocalFlags::ECHO)
            })
            .unwrap_or(false)
    }

    /// Waits until the CLI put the terminal in raw mode (it is attached).
    fn wait_raw(&self) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(60);
        while self.canonical() {
            if Instant::now() > deadline {
                bail!("the terminal never went raw");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }

    fn type_in(&mut self, keys: &str) -> Result<()> {
        self.master.write_all(keys.as_bytes())?;
        Ok(())
    }

    fn until(&mut self, needle: &str) -> Result<()> {
        let deadline = Instant::now() + Duration::from_secs(30);
        while !self.screen.contains(needle) {
            let left = deadline.saturating_duration_since(Instant::now());
            match self.output.recv_timeout(left) {
                Ok(bytes) => self.screen.push_str(&String::from_utf8_lossy(&bytes)),
                Err(_) => bail!("no {needle:?} on the screen: {:?}", self.screen),
            }
        }
        Ok(())
    }

    fn wait(&mut self) -> Result<i32> {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if let Some(status) = self.child.try_wait()? {
                return Ok(status.code().unwrap_or_else(|| {
                    128 + std::os::unix::process::ExitStatusExt::signal(&status).unwrap_or(0)
                }));
            }
            if Instant::now() > deadline {
                let _ = self.child.kill();
                bail!("paddock sandbox shell did not exit: {:?}", self.screen);
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn paddock(server: Option<(&ServerProcess, &str)>, args: &[&str]) -> Command {
    let mut command = Command::new(PADDOCK);
    command
        .args(args)
        .env_remove("PADDOCK_SERVER")
        .env_remove("PADDOCK_TOKEN")
        .env("TERM", "xterm");
    if let Some((server, token)) = server {
        command
            .env("PADDOCK_SERVER", &server.url)
            .env("PADDOCK_TOKEN", token);
    }
    command
}

#[test]
fn a_shell_on_a_servers_sandbox_through_a_real_terminal() -> Result<()> {
    let root = tempfile::tempdir()?;
    let token = format!("shell-token-{}", unique("t"));
    let server = ServerProcess::start(
        &root.path().join("server-data"),
        &unique("shell"),
        &format!("cli:{token}"),
    )?;
    let on = Some((&server, token.as_str()));
    let created = paddock(on, &["sandbox", "create"]).output()?;
    assert!(created.status.success(), "{created:?}");
    let id = String::from_utf8(created.stdout)?.trim().to_owned();

    let mut term = OnPty::spawn(paddock(on, &["sandbox", "shell", &id]), 24, 80)?;
    assert!(term.canonical());
    term.wait_raw()?;
    // Raw: Enter is a CR, which the sandbox's terminal turns into a newline.
    term.type_in("stty size; echo MARK-$((20+22))\r")?;
    term.until("MARK-42")?;
    assert!(term.screen.contains("24 80"), "{:?}", term.screen);

    // Our window changes: the CLI gets SIGWINCH and resizes the shell's.
    paddock_jail::pty::resize(&term.master, 30, 100)?;
    std::thread::sleep(Duration::from_millis(300));
    term.type_in("stty size\r")?;
    term.until("30 100")?;

    // Ctrl-C interrupts the sandbox's command, not the CLI.
    term.type_in("sleep 30\r")?;
    std::thread::sleep(Duration::from_millis(500));
    term.type_in("\u{3}")?;
    term.type_in("echo AFTER-$((1+1))\r")?;
    term.until("AFTER-2")?;

    term.type_in("exit 7\r")?;
    assert_eq!(term.wait()?, 7, "{:?}", term.screen);
    assert!(term.canonical(), "the terminal was left raw");

    // SIGTERM to the CLI: it leaves (the terminal restored), the shell stays.
    let mut term = OnPty::spawn(paddock(on, &["sandbox", "shell", &id]), 24, 80)?;
    term.wait_raw()?;
    term.type_in("echo BEFORE-$((3+3))\r")?;
    term.until("BEFORE-6")?;
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(i32::try_from(term.child.id())?),
        nix::sys::signal::Signal::SIGTERM,
    )?;
    assert_eq!(term.wait()?, 128 + 15);
    assert!(term.canonical(), "SIGTERM left the terminal raw");

    let listed = paddock(on, &["process", "ls", &id, "--json"]).output()?;
    let listed: serde_json::Value = serde_json::from_slice(&listed.stdout)?;
    let shell = listed["processes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["running"] == true && p["pty"] == true)
        .expect("the left shell is still running")
        .clone();
    let handle = shell["handle"].to_string();

    // --attach comes back to it, with what it printed before.
    let mut term = OnPty::spawn(
        paddock(on, &["sandbox", "shell", &id, "--attach", &handle]),
        24,
        80,
    )?;
    term.wait_raw()?;
    term.until("BEFORE-6")?;
    term.type_in("exit 3\r")?;
    assert_eq!(term.wait()?, 3, "{:?}", term.screen);
    assert!(term.canonical());
    drop(server);
    Ok(())
}

#[test]
fn a_shell_in_a_fresh_sandbox_on_this_host() -> Result<()> {
    let workspace = tempfile::tempdir()?;
    std::fs::write(workspace.path().join("hello.txt"), "from the host\n")?;
    let ws = workspace.path().to_string_lossy().into_owned();
    let mut term = OnPty::spawn(
        paddock(None, &["sandbox", "shell", "--workspace", &ws]),
        40,
        120,
    )?;
    term.wait_raw()?;
    term.type_in("stty size; cat hello.txt\r")?;
    term.until("from the host")?;
    assert!(term.screen.contains("40 120"), "{:?}", term.screen);
    term.type_in("exit 4\r")?;
    assert_eq!(term.wait()?, 4, "{:?}", term.screen);
    assert!(term.canonical());
    Ok(())
}
