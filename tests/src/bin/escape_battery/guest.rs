//! No command may read or impersonate the guest: the processes that serve
//! the host's protocol (the agent) or hold what it was handed (the init,
//! PID 1, which reaps) must not open to a command through /proc, neither
//! their descriptors (the host's frames, a user's stdin), nor their memory,
//! nor their environment, and no command may trace them.
//!
//! The guest's processes are PID 1, every ancestor of this battery (its
//! parent is the agent that started it) and every process whose `argv[0]` is
//! the guest binary. Each probe is harmless even where it gets through: a
//! descriptor opened is closed unread, memory is opened but not read, and
//! the forged frame carries a request id the host never uses, so the host
//! drops it (it is still a frame the host had to read as the guest's).

use std::collections::BTreeSet;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsFd;
use std::os::unix::fs::OpenOptionsExt;

use paddock_proto::{Event, GuestFrame, GuestMessage, OutputStream, encode_frame};

use crate::Battery;
use crate::child::{Outcome, errno_name, in_child};

/// The guest binary's name: its `argv[0]` ends with it on every backend.
const GUEST_BINARY: &str = "paddock-guest";

/// A process of the guest, and why the battery takes it for one.
#[derive(Debug, Clone)]
struct GuestProcess {
    pid: u32,
    role: String,
}

pub fn run(b: &mut Battery) {
    let processes = guest_processes();
    b.control("find the guest's processes", || {
        let listed: Vec<String> = processes.iter().map(|p| p.role.clone()).collect();
        // PID 1 and the parent that started the battery, at the least.
        (processes.len() >= 2, listed.join(", "))
    });
    for p in &processes {
        let who = &p.role;
        b.probe(&format!("open the guest's /proc/PID/fd/* ({who})"), || {
            open_fds(p.pid)
        });
        b.probe(
            &format!("write a forged frame to the guest's fds ({who})"),
            || forge_frames(p.pid),
        );
        b.probe(&format!("open the guest's /proc/PID/mem ({who})"), || {
            open_mem(p.pid)
        });
        b.probe(
            &format!("read the guest's /proc/PID/environ ({who})"),
            || read_environ(p.pid),
        );
        b.probe(&format!("ptrace(PTRACE_SEIZE) the guest ({who})"), || {
            seize(p.pid)
        });
    }
}

/// PID 1, the ancestors of this process, and every process running the
/// guest binary, each once.
fn guest_processes() -> Vec<GuestProcess> {
    let own = std::process::id();
    let mut seen = BTreeSet::new();
    let mut found = Vec::new();
    let mut add = |pid: u32, role: String, found: &mut Vec<GuestProcess>| {
        if pid != own && pid != 0 && seen.insert(pid) {
            found.push(GuestProcess { pid, role });
        }
    };
    add(1, format!("PID 1: pid 1, {}", command_of(1)), &mut found);
    let mut pid = own;
    let mut role = "the battery's parent";
    while let Some(parent) = parent_of(pid) {
        if parent == 0 || parent == pid {
            break;
        }
        add(
            parent,
            format!("{role}: pid {parent}, {}", command_of(parent)),
            &mut found,
        );
        role = "an ancestor";
        pid = parent;
    }
    if let Ok(entries) = fs::read_dir("/proc") {
        for entry in entries.flatten() {
            let Some(pid) = entry.file_name().to_str().and_then(|n| n.parse().ok()) else {
                continue;
            };
            let argv0 = command_of(pid);
            if argv0.rsplit('/').next() == Some(GUEST_BINARY) {
                add(
                    pid,
                    format!("the guest binary: pid {pid}, {argv0}"),
                    &mut found,
                );
            }
        }
    }
    found
}

/// The ppid field of /proc/PID/stat (the 2nd after the command name).
fn parent_of(pid: u32) -> Option<u32> {
    let stat = fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let after = &stat[stat.rfind(')')? + 1..];
    after.split_whitespace().nth(1)?.parse().ok()
}

/// `argv[0]` of a process ("?" when its cmdline cannot be read).
fn command_of(pid: u32) -> String {
    let cmdline = fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    let argv0 = cmdline.split(|b| *b == 0).next().unwrap_or_default();
    if argv0.is_empty() {
        "?".to_owned()
    } else {
        String::from_utf8_lossy(argv0).into_owned()
    }
}

/// The fd numbers listed in /proc/PID/fd, or why they cannot be listed.
fn fd_numbers(pid: u32) -> Result<Vec<u32>, String> {
    let entries =
        fs::read_dir(format!("/proc/{pid}/fd")).map_err(|e| format!("cannot list: {e}"))?;
    let mut fds: Vec<u32> = entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse().ok()))
        .collect();
    fds.sort_unstable();
    Ok(fds)
}

fn open_flags(write: bool) -> OpenOptions {
    let mut options = OpenOptions::new();
    options
        .read(!write)
        .write(write)
        // Never block on a pipe or a device, never take a terminal.
        .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY);
    options
}

fn os_error(e: &std::io::Error) -> String {
    e.raw_os_error()
        .map(errno_name)
        .unwrap_or_else(|| e.to_string())
}

/// Blocked when no descriptor of the process opens, for reading or for
/// writing, through its /proc/PID/fd link, but those that give nothing more
/// than a command has anyway: a file that opens by its own path as well
/// (/dev/null, /workspace), and the battery's own stdio, whose other ends
/// the agent holds (commands are one another's peers: each reaches the
/// others' stdio through their own /proc/PID/fd). Nothing opened is read
/// or written.
fn open_fds(pid: u32) -> (bool, String) {
    let fds = match fd_numbers(pid) {
        Ok(fds) => fds,
        Err(why) => return (true, why),
    };
    let own = own_stdio();
    let mut opened = Vec::new();
    let mut refused = Vec::new();
    let mut anyway = Vec::new();
    for fd in &fds {
        let path = format!("/proc/{pid}/fd/{fd}");
        let target = fs::read_link(&path)
            .map(|t| t.display().to_string())
            .unwrap_or_else(|e| format!("readlink {}", os_error(&e)));
        for (mode, write) in [("read", false), ("write", true)] {
            match open_flags(write).open(&path) {
                Ok(file) => match reachable_anyway(&file, &target, write, &own) {
                    Some(why) => anyway.push(format!("fd {fd} {mode} ({why})")),
                    None => opened.push(format!("fd {fd} ({target}) for {mode}")),
                },
                Err(e) => refused.push(format!("fd {fd} {mode}: {}", os_error(&e))),
            }
        }
    }
    if opened.is_empty() {
        (
            true,
            format!(
                "{} fds; refused: {}; opened, but a command has them anyway: {}",
                fds.len(),
                refused.join(", "),
                anyway.join(", ")
            ),
        )
    } else {
        (false, format!("OPENED {}", opened.join("; ")))
    }
}

/// Why a file opened through /proc gives a command nothing new: it is the
/// battery's own stdio, or its link names a path that opens in the same mode
/// to the same file. None: only the /proc link reaches it.
fn reachable_anyway(
    file: &File,
    target: &str,
    write: bool,
    own: &BTreeSet<(u64, u64)>,
) -> Option<&'static str> {
    let st = fstat(file).ok()?;
    let id = (st.st_dev, st.st_ino);
    if own.contains(&id) {
        return Some("the battery's own stdio");
    }
    if !target.starts_with('/') {
        return None;
    }
    let by_path = fstat(open_flags(write).open(target).ok()?).ok()?;
    ((by_path.st_dev, by_path.st_ino) == id).then_some("opens by its path too")
}

/// A frame of the guest's protocol (`paddock_proto::encode_frame`): stdout
/// output for a request id the host never hands out, so a host that reads
/// it drops it.
fn forged_frame() -> Vec<u8> {
    let header = GuestFrame {
        id: u64::MAX,
        message: GuestMessage::Event(Event::Output {
            stream: OutputStream::Stdout,
        }),
    };
    encode_frame(&header, b"forged by the escape battery").unwrap_or_default()
}

/// (dev, ino) of this process's own stdio: the agent holds the other ends of
/// the battery's pipes, and a frame written there would land in the report.
fn own_stdio() -> BTreeSet<(u64, u64)> {
    [
        std::io::stdin().as_fd(),
        std::io::stdout().as_fd(),
        std::io::stderr().as_fd(),
    ]
    .into_iter()
    .filter_map(|fd| fstat(fd).ok())
    .map(|st| (st.st_dev, st.st_ino))
    .collect()
}

/// fstat, not statx: gVisor answers statx on /proc's links with EINVAL.
fn fstat(fd: impl AsFd) -> nix::Result<libc::stat> {
    nix::sys::stat::fstat(fd.as_fd())
}

/// Blocked when no pipe, socket or device (not a terminal) of the process
/// opens for writing and takes a whole forged frame. Regular files and
/// directories are never written; nor is what a command reaches anyway
/// (see [`open_fds`]: /dev/null, the battery's own stdio).
fn forge_frames(pid: u32) -> (bool, String) {
    let fds = match fd_numbers(pid) {
        Ok(fds) => fds,
        Err(why) => return (true, why),
    };
    let own = own_stdio();
    let frame = forged_frame();
    let mut written = Vec::new();
    let mut refused = Vec::new();
    for fd in &fds {
        let path = format!("/proc/{pid}/fd/{fd}");
        let mut file = match open_flags(true).open(&path) {
            Ok(file) => file,
            Err(e) => {
                refused.push(format!("fd {fd}: {}", os_error(&e)));
                continue;
            }
        };
        let Ok(st) = fstat(&file) else {
            continue;
        };
        let kind = st.st_mode & libc::S_IFMT;
        let channel_like = kind == libc::S_IFIFO
            || kind == libc::S_IFSOCK
            || (kind == libc::S_IFCHR && !nix::unistd::isatty(file.as_fd()).unwrap_or(false));
        let target = fs::read_link(&path)
            .map(|t| t.display().to_string())
            .unwrap_or_default();
        if !channel_like || reachable_anyway(&file, &target, true, &own).is_some() {
            continue;
        }
        match file.write(&frame) {
            Ok(n) => written.push(format!("fd {fd}: {n} of {} bytes", frame.len())),
            Err(e) => refused.push(format!("fd {fd} write: {}", os_error(&e))),
        }
    }
    if written.is_empty() {
        (true, format!("no fd took a frame: {}", refused.join("; ")))
    } else {
        (false, format!("FORGED A FRAME on {}", written.join("; ")))
    }
}

/// Blocked when /proc/PID/mem does not open (it is never read).
fn open_mem(pid: u32) -> (bool, String) {
    match File::open(format!("/proc/{pid}/mem")) {
        Ok(_mem) => (false, "OPENED for reading".to_owned()),
        Err(e) => (true, format!("open: {}", os_error(&e))),
    }
}

/// Blocked when /proc/PID/environ cannot be read, or holds nothing but
/// zeros (the guest overwrote its environment; the length still shows).
fn read_environ(pid: u32) -> (bool, String) {
    let read = File::open(format!("/proc/{pid}/environ")).and_then(|mut f| {
        let mut buf = Vec::new();
        f.read_to_end(&mut buf).map(|_| buf)
    });
    match read {
        Ok(buf) if buf.iter().all(|b| *b == 0) => {
            (true, format!("readable, but {} zero bytes", buf.len()))
        }
        Ok(buf) => {
            let set = buf.iter().filter(|b| **b != 0).count();
            (false, format!("READ {} bytes, {set} not zero", buf.len()))
        }
        Err(e) => (true, os_error(&e)),
    }
}

/// Blocked when PTRACE_SEIZE fails (it does not stop the tracee; the child
/// that seized exits at once, which detaches it).
fn seize(pid: u32) -> (bool, String) {
    let Ok(pid) = libc::pid_t::try_from(pid) else {
        return (true, "pid out of range".to_owned());
    };
    let outcome = in_child(|| {
        // SAFETY: integer arguments and null pointers; PTRACE_SEIZE neither
        // stops nor changes the tracee, and this child exits right after.
        let r = unsafe {
            libc::ptrace(
                libc::PTRACE_SEIZE,
                pid,
                std::ptr::null_mut::<libc::c_void>(),
                std::ptr::null_mut::<libc::c_void>(),
            )
        };
        if r < 0 {
            Err(crate::child::errno())
        } else {
            Ok(())
        }
    });
    match outcome {
        Outcome::Exited(0) => (false, "SEIZED".to_owned()),
        Outcome::Exited(e) => (true, format!("denied: {}", errno_name(e))),
        Outcome::Signaled(sig) => (true, format!("killed by signal {sig}")),
        other => (false, format!("{other:?}")),
    }
}
