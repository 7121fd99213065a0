//! The reference lines of the snapshot benchmarks: the host's GNU tar and
//! zstd CLI on the same workspace, in the same run.

use std::fs;
use std::path::Path;
use std::process::Command;

use anyhow::{Result, ensure};

/// Fails with the package to install when `tar` or `zstd` is missing.
pub fn require_tools() -> Result<()> {
    for tool in ["tar", "zstd"] {
        let found = Command::new(tool).arg("--version").output().is_ok();
        ensure!(found, "`{tool}` is missing: apt-get install {tool}");
    }
    Ok(())
}

/// `tar -cf - . | zstd -T0 -3` of `workspace` into `archive`.
pub fn pack(workspace: &Path, archive: &Path) -> Result<()> {
    shell(
        "tar -C \"$1\" -cf - . | zstd -q -T0 -3 -f -o \"$2\"",
        &[workspace, archive],
    )
}

/// `zstd -dc | tar -x` of `archive` into the new directory `dir`.
pub fn unpack(archive: &Path, dir: &Path) -> Result<()> {
    fs::create_dir(dir)?;
    shell("zstd -q -dc \"$1\" | tar -xf - -C \"$2\"", &[archive, dir])
}

fn shell(script: &str, args: &[&Path]) -> Result<()> {
    let status = Command::new("bash")
        .args(["-o", "pipefail", "-c", script, "bench"])
        .args(args)
        .status()?;
    ensure!(status.success(), "`{script}` failed: {status}");
    Ok(())
}
