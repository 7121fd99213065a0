//! Starting commands without fork: one thread, the spawner, starts every
//! command on pipes with a vfork of our own ([`VforkSpawner`]:
//! `clone(CLONE_VM|CLONE_VFORK)` onto a small stack, as glibc's
//! posix_spawn does), so the agent's address space is never copied.
//! gVisor's sentry pays for each new address space: a fork then exec costs
//! it two, a spawn one. The spawner, the only code that uses or changes the
//! agent's working directory (everything else resolves from absolute paths
//! or fds):
//! - holds the commands' seccomp filter ([`CommandFilter`]) on its own
//!   thread, installed once when it starts: filters survive clone and
//!   execve, so every command gets exactly the filter it used to install
//!   between fork and exec, and no other thread of the agent has it (the
//!   agent needs openat2). Failing to install it fails the start;
//! - moves to the command's directory with fchdir on the fd resolved
//!   beneath the workspace (no path is looked up twice), which the vfork
//!   child shares; a command in the workspace root (most are) resolves
//!   nothing, and needs no fchdir when the last one ran there too;
//! - looks the program up on the command's PATH as execvp would, running
//!   a file the kernel cannot execute (ENOEXEC) with /bin/sh as execvp does.
//!
//! Why not glibc's posix_spawn (through std): under gVisor (ptrace platform,
//! counted with `runsc --strace`, 20 execs of `true`) its vfork child made
//! 128 system calls before its execve, 121 of them `rt_sigaction`: glibc
//! (2.36) gets and sets every signal's disposition in the child, whatever
//! the handler is, because the child shares the agent's memory until
//! execve, and each is a trapped call there (warm create -> first exec
//! measured 14.8-17.2 ms against a floor of 15 ms). Our child resets to
//! SIG_DFL only the signals whose disposition is not SIG_DFL, read once
//! when the spawner starts: std's SIGSEGV and SIGBUS handlers, SIGPIPE
//! (ignored by std), glibc's signal 33 (SIGCHLD has no handler: it is
//! blocked and read from a signalfd, `super::child`). Then setpgid(0, 0),
//! dup3 of stdin (a pipe or /dev/null), stdout and stderr, an empty signal
//! mask and execve: about a dozen calls. A handler the agent installed
//! after the spawner started would not be reset in a child (the window is
//! the few calls between the child's unmasking and its execve, which
//! resets handlers anyway); the agent installs none later: keep it so.
//! The child's exit is read by pid, not by tokio (`super::child`). The
//! figures are in docs/architecture.md.
//!
//! A command on a pseudo-terminal is the one exception: it must call setsid
//! and take the terminal as its controlling one (TIOCSCTTY) between fork
//! and exec, which the vfork path does not do, so it takes std's fork path with
//! that `pre_exec` hook ([`paddock_jail::pty::attach_before_exec`]). It is
//! still forked from this thread, so it inherits the filter and the
//! working directory exactly as a spawned command does; terminals are
//! interactive and rare, not on the path of tool calls.

use std::collections::BTreeMap;
use std::ffi::CString;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::Context;
use nix::errno::Errno;
use nix::fcntl::{FcntlArg, OFlag};
use nix::sys::signal::Signal;
use nix::unistd::AccessFlags;
use paddock_jail::CommandFilter;
use paddock_jail::spawn::VforkSpawner;
use paddock_proto::{ErrorCode, ErrorInfo};
use tokio::sync::{mpsc, oneshot};

use super::child::{Child, ChildExits};
use super::groups::kill_group;
use crate::error::bad_request;

/// Spawn requests waiting for the spawner; more wait for room.
const QUEUE: usize = 64;
/// The longest a request waits for the spawner's answer.
const SPAWN_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest the spawner may take to start (install its filter).
const START_TIMEOUT: Duration = Duration::from_secs(10);
/// execvp's search path when the command's environment has no PATH.
const DEFAULT_PATH: &str = "/bin:/usr/bin";
/// What execvp runs a file with that the kernel cannot execute.
const SHELL: &str = "/bin/sh";

/// One command to start, fully decided by the caller.
#[derive(Debug)]
pub struct Launch {
    /// As the host gave it: a path, or a name looked up on PATH.
    pub program: String,
    pub args: Vec<String>,
    /// The whole environment (PATH in it is where `program` is looked up).
    pub env: BTreeMap<String, String>,
    pub streams: Streams,
    pub cwd: WorkDir,
}

/// A command's working directory.
#[derive(Debug)]
pub enum WorkDir {
    /// The workspace root (the spawner holds its own descriptor of it).
    Root,
    /// A directory resolved beneath the workspace.
    Beneath(OwnedFd),
}

/// What a command's stdin, stdout and stderr are.
#[derive(Debug)]
pub enum Streams {
    /// Pipes for stdout and stderr (and stdin, or /dev/null), in a process
    /// group of its own.
    Pipes { piped_stdin: bool },
    /// All three on a pseudo-terminal's slave, the command a session leader
    /// with it as controlling terminal (so also its own process group).
    Terminal { slave: OwnedFd },
}

struct Job {
    launch: Launch,
    reply: oneshot::Sender<Result<Child, ErrorInfo>>,
}

/// The handle requests spawn through.
#[derive(Debug, Clone)]
pub struct Spawner {
    jobs: mpsc::Sender<Job>,
}

impl std::fmt::Debug for Job {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Job").field("launch", &self.launch).finish()
    }
}

impl Spawner {
    /// Starts the spawner thread; its children belong to `runtime` (their
    /// pipes and exits are watched there; SIGCHLD must be blocked already,
    /// see [`ChildExits::block`]) and start in `root` unless told
    /// otherwise. With `filter`, the thread installs it on itself first,
    /// and an error installing it is this function's error.
    pub fn start(
        runtime: tokio::runtime::Handle,
        filter: Option<CommandFilter>,
        root: OwnedFd,
    ) -> anyhow::Result<Self> {
        let exits = {
            let _runtime = runtime.enter();
            ChildExits::watch().context("watching SIGCHLD through a signalfd")?
        };
        let (jobs, queue) = mpsc::channel(QUEUE);
        let (started, ready) = std::sync::mpsc::sync_channel(1);
        std::thread::Builder::new()
            .name("spawner".to_owned())
            .spawn(move || {
                let own = Own::new(root, exits);
                let installed = filter
                    .as_ref()
                    .map_or(Ok(()), CommandFilter::apply)
                    .context("installing the command filter on the spawner thread");
                let ready = own.and_then(|own| installed.map(|()| own));
                let (answer, own) = match ready {
                    Ok(own) => (Ok(()), Some(own)),
                    Err(e) => (Err(e), None),
                };
                // The starter waits for this answer (or gave up: then it fails).
                let _ = started.send(answer);
                if let Some(own) = own {
                    serve(&runtime, queue, own);
                }
            })
            .context("starting the spawner thread")?;
        ready
            .recv_timeout(START_TIMEOUT)
            .context("the spawner thread did not start")??;
        Ok(Self { jobs })
    }

    /// Starts `launch` and hands back the child.
    pub async fn spawn(&self, launch: Launch) -> Result<Child, ErrorInfo> {
        let program = launch.program.clone();
        let gone = || {
            ErrorInfo::new(
                ErrorCode::SpawnFailed,
                format!("{program}: the spawner stopped"),
            )
        };
        let (reply, answer) = oneshot::channel();
        self.jobs
            .send(Job { launch, reply })
            .await
            .map_err(|_| gone())?;
        match tokio::time::timeout(SPAWN_TIMEOUT, answer).await {
            Ok(Ok(result)) => result,
            Ok(Err(_)) => Err(gone()),
            Err(_) => Err(ErrorInfo::new(
                ErrorCode::SpawnFailed,
                format!("{program}: not started within {SPAWN_TIMEOUT:?}"),
            )),
        }
    }
}

fn serve(runtime: &tokio::runtime::Handle, mut queue: mpsc::Receiver<Job>, mut own: Own) {
    while let Some(Job { launch, reply }) = queue.blocking_recv() {
        let result = launch_one(runtime, &mut own, launch);
        // The requester gave up (timed out): nothing will watch the child.
        if let Err(Ok(child)) = reply.send(result)
            && let Ok(pid) = i32::try_from(child.id())
        {
            kill_group(pid, Signal::SIGKILL);
        }
    }
}

/// What the spawner's own vfork path keeps from one command to the next.
struct Own {
    vfork: VforkSpawner,
    /// The stdin of a command whose stdin is not piped.
    null: OwnedFd,
    /// The workspace root, where most commands run.
    root: OwnedFd,
    /// Whether the process's working directory is `root` now: a command
    /// there then needs no fchdir (each is a trapped call under gVisor,
    /// and only this thread changes the working directory).
    at_root: bool,
    /// Where children's exits are seen.
    exits: ChildExits,
}

impl Own {
    /// Made on the spawner thread once the agent installed what it installs
    /// (std's SIGSEGV and SIGBUS handlers, SIGPIPE ignored; SIGCHLD is
    /// blocked and read from a signalfd, it has no handler), so the signals
    /// a child resets are all the agent's.
    fn new(root: OwnedFd, exits: ChildExits) -> anyhow::Result<Self> {
        let vfork = VforkSpawner::new().context("reading the signal dispositions")?;
        tracing::debug!(resets = ?vfork.resets(), "signals a command resets");
        let null = std::fs::File::open("/dev/null")
            .context("opening /dev/null")?
            .into();
        Ok(Self {
            vfork,
            null,
            root,
            at_root: false,
            exits,
        })
    }
}

impl Own {
    /// Makes `cwd` the process's working directory.
    fn enter(&mut self, cwd: &WorkDir) -> nix::Result<()> {
        match cwd {
            WorkDir::Root if self.at_root => Ok(()),
            WorkDir::Root => {
                nix::unistd::fchdir(&self.root)?;
                self.at_root = true;
                Ok(())
            }
            WorkDir::Beneath(dir) => {
                // Not at the root any more, even if this fchdir fails halfway.
                self.at_root = false;
                nix::unistd::fchdir(dir)
            }
        }
    }
}

fn launch_one(
    runtime: &tokio::runtime::Handle,
    own: &mut Own,
    launch: Launch,
) -> Result<Child, ErrorInfo> {
    let Launch {
        program,
        args,
        env,
        streams,
        cwd,
    } = launch;
    own.enter(&cwd).map_err(|errno| {
        ErrorInfo::new(
            ErrorCode::SpawnFailed,
            format!(
                "{program}: entering its working directory: {}",
                errno.desc()
            ),
        )
    })?;
    drop(cwd);
    let path = resolve(&program, env.get("PATH").map(String::as_str))?;
    let _runtime = runtime.enter();
    match streams {
        Streams::Pipes { piped_stdin } => {
            spawn_piped(own, &program, &path, &args, &env, piped_stdin)
                .map_err(|e| spawn_error(&program, &e))
        }
        Streams::Terminal { slave } => {
            let starting = own.exits.before_start();
            let spawned = spawn_forked(&program, &path, &args, &env, &slave);
            // Our copy of the slave closes here (the child has its own): the
            // master sees the terminal's end only when no copy is left.
            drop(slave);
            let child = spawned.map_err(|e| spawn_error(&program, &e))?;
            let pid = i32::try_from(child.id()).map_err(|_| {
                ErrorInfo::new(
                    ErrorCode::SpawnFailed,
                    format!("{program}: pid out of range"),
                )
            })?;
            // Dropping std's handle neither waits nor kills: the reap does.
            Ok(Child::on_terminal(starting.started(pid)))
        }
    }
}

/// Runs `spawn` with `path`, and a file the kernel cannot execute again
/// with /bin/sh as execvp does: `spawn(file, leading arguments)`.
fn with_shell_fallback<T>(
    path: &Path,
    mut spawn: impl FnMut(&Path, &[&str]) -> io::Result<T>,
) -> io::Result<T> {
    match spawn(path, &[]) {
        Err(e) if e.raw_os_error() == Some(Errno::ENOEXEC as i32) => {
            let script = path.to_string_lossy();
            spawn(Path::new(SHELL), &[&script])
        }
        other => other,
    }
}

/// A command on pipes, started with our own vfork (see the module doc).
fn spawn_piped(
    own: &mut Own,
    program: &str,
    path: &Path,
    args: &[String],
    env: &BTreeMap<String, String>,
    piped_stdin: bool,
) -> io::Result<Child> {
    let c = |s: &[u8]| {
        CString::new(s).map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "a NUL byte"))
    };
    let envp = env
        .iter()
        .map(|(k, v)| c(format!("{k}={v}").as_bytes()))
        .collect::<io::Result<Vec<_>>>()?;
    let pipe = || nix::unistd::pipe2(OFlag::O_CLOEXEC).map_err(io::Error::from);
    let (out_read, out_write) = pipe()?;
    let (err_read, err_write) = pipe()?;
    let stdin = if piped_stdin { Some(pipe()?) } else { None };
    let starting = own.exits.before_start();
    let pid = with_shell_fallback(path, |file, leading| {
        let argv0 = if leading.is_empty() { program } else { SHELL };
        let argv = std::iter::once(argv0)
            .chain(leading.iter().copied())
            .chain(args.iter().map(String::as_str))
            .map(|a| c(a.as_bytes()))
            .collect::<io::Result<Vec<_>>>()?;
        let input = stdin
            .as_ref()
            .map_or(own.null.as_fd(), |(read, _)| read.as_fd());
        own.vfork.spawn(
            &c(file.as_os_str().as_bytes())?,
            &argv,
            &envp,
            [input, out_write.as_fd(), err_write.as_fd()],
        )
    })?;
    // The child's ends close here: the parent's see its end of output.
    drop((out_write, err_write));
    let reap = starting.started(pid);
    let nonblocking = |fd: &OwnedFd| {
        nix::fcntl::fcntl(fd, FcntlArg::F_SETFL(OFlag::O_NONBLOCK)).map_err(io::Error::from)
    };
    let input = match stdin {
        Some((_read, write)) => {
            nonblocking(&write)?;
            Some(tokio::net::unix::pipe::Sender::from_owned_fd_unchecked(
                write,
            )?)
        }
        None => None,
    };
    let receiver = |fd: OwnedFd| {
        nonblocking(&fd)?;
        tokio::net::unix::pipe::Receiver::from_owned_fd_unchecked(fd)
    };
    let (stdout, stderr) = (receiver(out_read)?, receiver(err_read)?);
    Ok(Child::spawned(reap, input, stdout, stderr))
}

/// A command on a terminal, forked by std with the `pre_exec` hook.
fn spawn_forked(
    program: &str,
    path: &Path,
    args: &[String],
    env: &BTreeMap<String, String>,
    slave: &OwnedFd,
) -> io::Result<std::process::Child> {
    with_shell_fallback(path, |file, leading| {
        let mut command = Command::new(file);
        command
            .arg0(if leading.is_empty() { program } else { SHELL })
            .args(leading)
            .args(args)
            .env_clear()
            .envs(env);
        let end = || slave.try_clone().map(Stdio::from);
        command.stdin(end()?).stdout(end()?).stderr(end()?);
        // setsid makes it its own process group, as the pipe path's setpgid
        // does, so signals and kills reach the same group.
        paddock_jail::pty::attach_before_exec(&mut command);
        command.spawn()
    })
}

/// Where execvp would find `program`: itself when it has a slash, else the
/// first executable regular file named so in a PATH entry (an empty entry
/// is the working directory). A file found but not executable makes the
/// answer "permission denied" when nothing later is found.
pub fn resolve(program: &str, path: Option<&str>) -> Result<PathBuf, ErrorInfo> {
    if program.is_empty() {
        return Err(bad_request("empty command"));
    }
    if program.contains('\0') {
        return Err(bad_request(format!(
            "{program:?}: invalid command (it holds a NUL byte)"
        )));
    }
    if program.contains('/') {
        return Ok(PathBuf::from(program));
    }
    let mut denied = false;
    for dir in path.unwrap_or(DEFAULT_PATH).split(':') {
        let candidate = Path::new(if dir.is_empty() { "." } else { dir }).join(program);
        if !std::fs::metadata(&candidate).is_ok_and(|m| m.is_file()) {
            continue;
        }
        match nix::unistd::access(&candidate, AccessFlags::X_OK) {
            Ok(()) => return Ok(candidate),
            Err(_) => denied = true,
        }
    }
    Err(ErrorInfo::new(
        ErrorCode::SpawnFailed,
        if denied {
            format!("{program}: permission denied")
        } else {
            format!("{program}: command not found")
        },
    ))
}

fn spawn_error(program: &str, err: &io::Error) -> ErrorInfo {
    match err.kind() {
        io::ErrorKind::NotFound => ErrorInfo::new(
            ErrorCode::SpawnFailed,
            format!("{program}: command not found"),
        ),
        io::ErrorKind::PermissionDenied => ErrorInfo::new(
            ErrorCode::SpawnFailed,
            format!("{program}: permission denied"),
        ),
        io::ErrorKind::InvalidInput => bad_request(format!(
            "{program}: invalid command, argument or environment ({err})"
        )),
        _ => ErrorInfo::new(ErrorCode::SpawnFailed, format!("{program}: {err}")),
    }
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    fn file(dir: &Path, name: &str, mode: u32) {
        let path = dir.join(name);
        std::fs::write(&path, "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    }

    fn message(result: Result<PathBuf, ErrorInfo>) -> String {
        result.unwrap_err().message
    }

    #[test]
    fn lookup_takes_the_first_executable_file_on_path() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        std::fs::create_dir(a.path().join("tool")).unwrap();
        file(b.path(), "tool", 0o755);
        let path = format!("{}:{}", a.path().display(), b.path().display());
        assert_eq!(resolve("tool", Some(&path)).unwrap(), b.path().join("tool"));
    }

    #[test]
    fn lookup_skips_a_file_that_is_not_executable() {
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        file(a.path(), "tool", 0o644);
        file(b.path(), "tool", 0o755);
        let path = format!("{}:{}", a.path().display(), b.path().display());
        assert_eq!(resolve("tool", Some(&path)).unwrap(), b.path().join("tool"));
        // Unless running as root, which may execute any file with an x bit.
        if !nix::unistd::geteuid().is_root() {
            assert_eq!(
                message(resolve("tool", Some(&a.path().display().to_string()))),
                "tool: permission denied"
            );
        }
    }

    #[test]
    fn lookup_reports_a_missing_command() {
        let a = tempfile::tempdir().unwrap();
        assert_eq!(
            message(resolve("nope", Some(&a.path().display().to_string()))),
            "nope: command not found"
        );
        assert_eq!(message(resolve("", None)), "empty command");
        assert!(message(resolve("a\0b", None)).contains("NUL"));
    }

    #[test]
    fn a_program_with_a_slash_is_not_looked_up() {
        assert_eq!(
            resolve("./build.sh", Some("/nowhere")).unwrap(),
            PathBuf::from("./build.sh")
        );
        assert_eq!(resolve("/bin/sh", None).unwrap(), PathBuf::from("/bin/sh"));
    }
}
