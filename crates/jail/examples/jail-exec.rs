//! End-to-end smoke tool for the jail:
//!
//! ```text
//! jail-exec --workspace DIR [--read-only | --writable PATH...] [--network none] [--id ID]
//!           [--allow cgroups,landlock,seccomp,idmapped_workspace]
//!           [--memory BYTES] [--pids N] [--cpu-millis N] [--rootfs DIR]
//!           [--print-enforcement] -- CMD [ARGS...]
//! jail-exec --cleanup ID      (remove_sandbox_cgroups("paddock", ID))
//! jail-exec --probe           (probe_host() as JSON)
//! ```
//!
//! Calls `paddock_jail::enter`, installs the `CommandFilter` the guest puts
//! on the commands it runs, then execs CMD inside the sandbox (cwd
//! /workspace, PATH set). Exits with CMD's status (128 + signal if killed).

use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, bail};
use paddock_jail::{JailSpec, JailTier, enter};
use paddock_proto::{DowngradeLayer, NetworkPolicy, SandboxPolicy};

const PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

fn main() {
    match run() {
        Ok(never) => match never {},
        Err(e) => {
            eprintln!("jail-exec: {e:#}");
            std::process::exit(125);
        }
    }
}

fn run() -> anyhow::Result<std::convert::Infallible> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--cleanup") => {
            let id = args.get(1).context("--cleanup needs a sandbox id")?;
            paddock_jail::remove_sandbox_cgroups("paddock", id)?;
            std::process::exit(0);
        }
        Some("--probe") => {
            println!(
                "{}",
                serde_json::to_string_pretty(&paddock_jail::probe_host())?
            );
            std::process::exit(0);
        }
        _ => {}
    }
    let (spec, print, command) = parse(args)?;
    let enforcement = enter(&spec).context("entering the sandbox")?;
    if print {
        eprintln!("{}", serde_json::to_string_pretty(&enforcement)?);
    }
    paddock_jail::CommandFilter::new()?
        .apply()
        .context("installing the command filter")?;
    let err = Command::new(&command[0])
        .args(&command[1..])
        .env_clear()
        .env("PATH", PATH)
        .env("HOME", "/tmp")
        .current_dir("/workspace")
        .exec();
    Err(err).with_context(|| format!("executing {}", command[0]))
}

fn parse(args: Vec<String>) -> anyhow::Result<(JailSpec, bool, Vec<String>)> {
    let mut spec = JailSpec {
        sandbox_id: format!("jail-exec-{}", std::process::id()),
        policy: SandboxPolicy::default(),
        workspace_quota: None,
        tier: JailTier {
            workspace: PathBuf::new(),
            netns: None,
            egress_env: Vec::new(),
            secrets: Vec::new(),
            egress_ca: None,
            id_mapping: None,
            id_pool: None,
            temporary_workspace: false,
            rootfs: None,
            volume_dirs: Vec::new(),
            cgroup_parent: "paddock".into(),
        },
    };
    let mut print = false;
    let mut it = args.into_iter();
    while let Some(arg) = it.next() {
        let mut value = || it.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--workspace" => spec.tier.workspace = value()?.into(),
            "--read-only" => spec.policy.read_only = true,
            "--writable" => spec.policy.writable_paths.push(value()?),
            "--network" => {
                spec.policy.network = match value()?.as_str() {
                    "none" => NetworkPolicy::None,
                    other => bail!(
                        "network {other}: only none here (egress needs the host's proxy: \
                         use paddock sandbox run --network)"
                    ),
                }
            }
            "--id" => spec.sandbox_id = value()?,
            "--rootfs" => spec.tier.rootfs = Some(value()?.into()),
            "--memory" => spec.policy.limits.memory_bytes = Some(value()?.parse()?),
            "--pids" => spec.policy.limits.pids = Some(value()?.parse()?),
            "--cpu-millis" => spec.policy.limits.cpu_millis = Some(value()?.parse()?),
            "--allow" => {
                for layer in value()?.split(',') {
                    let layer: DowngradeLayer = serde_json::from_value(layer.into())
                        .with_context(|| format!("unknown layer {layer}"))?;
                    spec.policy.allow_downgrade.insert(layer);
                }
            }
            "--print-enforcement" => print = true,
            "--" => {
                let command: Vec<String> = it.collect();
                if spec.tier.workspace.as_os_str().is_empty() || command.is_empty() {
                    bail!("usage: jail-exec --workspace DIR [options] -- CMD [ARGS...]");
                }
                return Ok((spec, print, command));
            }
            other => bail!("unknown option {other}"),
        }
    }
    bail!("usage: jail-exec --workspace DIR [options] -- CMD [ARGS...]")
}
