//! `paddock-escape-battery`: runs INSIDE a Paddock sandbox and tries every
//! escape the hardening must stop, then prints one JSON report
//! ([`paddock_tests::report::Report`]) on stdout. The host-side test
//! (tests/tests/escape_battery.rs) asserts every probe was blocked.
//!
//! Each probe is written so that even where it succeeds it harms nothing: it
//! opens files for writing but never writes them, passes arguments that stop
//! at the kernel's validation after the privilege check, and bounds every
//! bomb. It still refuses to run outside a sandbox (identity uid map) unless
//! `--allow-unsandboxed` is given.

// Test-only probe binary: issuing raw syscalls (mount, ptrace, kexec_load, ...)
// directly is the job of the modules allowed `unsafe` below; every block has a
// SAFETY note. The other modules stay under the workspace's deny.
#[allow(unsafe_code)]
mod cgroup;
#[allow(unsafe_code)]
mod child;
mod controls;
mod fs;
#[allow(unsafe_code)]
mod guest;
#[allow(unsafe_code)]
mod limits;
#[allow(unsafe_code)]
mod net;
mod procs;
mod scratch;
#[allow(unsafe_code)]
mod syscalls;
mod userns;

use std::net::IpAddr;
use std::path::PathBuf;

use clap::Parser;
use paddock_tests::report::{Control, Probe, Report};

#[derive(Debug, Parser)]
#[command(about = "Tries every sandbox escape and reports which were blocked")]
struct Args {
    /// Host path of a canary file that must not be readable (repeatable).
    #[arg(long)]
    canary: Vec<PathBuf>,
    /// Port of a TCP listener on the host that must not be reachable.
    #[arg(long)]
    tcp_port: Option<u16>,
    /// Other host addresses to try the port on (repeatable).
    #[arg(long)]
    host_addr: Vec<IpAddr>,
    /// Name of a host abstract unix socket that must not be reachable.
    #[arg(long)]
    abstract_socket: Option<String>,
    /// Command name (/proc/PID/comm) of a host process that must be invisible.
    #[arg(long)]
    host_process: Option<String>,
    /// The sandbox's configured pids limit.
    #[arg(long)]
    pids_limit: Option<u64>,
    /// The sandbox's configured memory limit in bytes.
    #[arg(long)]
    memory_limit: Option<u64>,
    /// Run only probes whose name contains this text.
    #[arg(long)]
    only: Option<String>,
    /// Leave out probes whose name contains this text (repeatable): a gVisor
    /// sandbox dies of the bombs, so those run in sandboxes of their own.
    #[arg(long)]
    skip: Vec<String>,
    /// Run even though this does not look like a sandbox (for debugging the battery).
    #[arg(long)]
    allow_unsandboxed: bool,
}

/// Collects results; skips probes that `--only` or `--skip` filter out.
#[derive(Debug, Default)]
pub struct Battery {
    report: Report,
    only: Option<String>,
    skip: Vec<String>,
}

impl Battery {
    fn selected(&self, name: &str) -> bool {
        self.only.as_deref().is_none_or(|o| name.contains(o))
            && !self.skip.iter().any(|s| name.contains(s.as_str()))
    }

    pub fn probe(&mut self, name: &str, attempt: impl FnOnce() -> (bool, String)) {
        if self.selected(name) {
            let (blocked, detail) = attempt();
            self.report.probes.push(Probe {
                name: name.to_string(),
                blocked,
                detail,
            });
        }
    }

    pub fn control(&mut self, name: &str, check: impl FnOnce() -> (bool, String)) {
        let (ok, detail) = check();
        self.report.controls.push(Control {
            name: name.to_string(),
            ok,
            detail,
        });
    }
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let (sandboxed, why) = controls::uid_map();
    if !sandboxed && !args.allow_unsandboxed {
        anyhow::bail!(
            "refusing to run: this does not look like a sandbox ({why}); \
             pass --allow-unsandboxed to run anyway"
        );
    }
    let mut b = Battery {
        report: Report::default(),
        only: args.only.clone(),
        skip: args.skip.clone(),
    };
    controls::run(&mut b);
    syscalls::run(&mut b);
    userns::run(&mut b);
    fs::run(&mut b, &args.canary);
    cgroup::run(&mut b);
    procs::run(&mut b, args.host_process.as_deref());
    guest::run(&mut b);
    net::run(
        &mut b,
        args.tcp_port,
        &args.host_addr,
        args.abstract_socket.as_deref(),
    );
    limits::run(&mut b, args.pids_limit, args.memory_limit);
    println!("{}", serde_json::to_string_pretty(&b.report)?);
    Ok(())
}
