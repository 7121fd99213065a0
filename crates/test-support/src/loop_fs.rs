//! A small file system of its own for tests that fill a disk: an ext4 image
//! in a temporary directory, loop-mounted, filled to its last block with a
//! ballast file and freed again. Needs root and loop devices; without them
//! [`LoopFs::mount_or_skip`] says why and the test reports itself skipped,
//! unless `PADDOCK_REQUIRE_LOOP=1` (scripts/test.sh sets it), which makes
//! that a failure (the rule of `require.rs`).
//!
//! Plain std and `mount`/`umount`/`mkfs.ext4` commands only, so crates
//! below this one (the store's tests) can include the file by path, beside
//! `require.rs` as its sibling module.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};

/// A mounted ext4 file system of a few MiB; unmounted on drop.
#[derive(Debug)]
pub struct LoopFs {
    /// Holds the image and the mount point; removed after the unmount.
    _dir: tempfile::TempDir,
    mount: PathBuf,
}

impl LoopFs {
    /// Mounts a fresh `mib` MiB ext4 file system (no blocks reserved for
    /// root), or answers why it cannot: `Ok(None)` after printing
    /// `SKIPPED: {what}: {reason}`, or an error when
    /// `PADDOCK_REQUIRE_LOOP=1`.
    pub fn mount_or_skip(what: &str, mib: u64) -> Result<Option<LoopFs>> {
        match Self::mount(mib) {
            Ok(fs) => Ok(Some(fs)),
            Err(err) => {
                super::require::skip_or_fail(
                    super::require::Need::Loop,
                    what,
                    &format!("a loop file system cannot be mounted: {err:#}"),
                )?;
                Ok(None)
            }
        }
    }

    fn mount(mib: u64) -> Result<LoopFs> {
        let dir = tempfile::Builder::new()
            .prefix("paddock-loopfs")
            .tempdir()?;
        let image = dir.path().join("image");
        File::create(&image)?.set_len(mib << 20)?;
        run(Command::new("mkfs.ext4")
            .args(["-q", "-F", "-m", "0", "-b", "4096"])
            .arg(&image))?;
        let mount = dir.path().join("mnt");
        std::fs::create_dir(&mount)?;
        run(Command::new("mount")
            .args(["-o", "loop"])
            .arg(&image)
            .arg(&mount))?;
        Ok(LoopFs { _dir: dir, mount })
    }

    /// Where the file system is mounted.
    pub fn path(&self) -> &Path {
        &self.mount
    }

    fn ballast(&self) -> PathBuf {
        self.mount.join("ballast")
    }

    /// Fills the file system to its last block; answers the bytes added.
    pub fn fill(&self) -> Result<u64> {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.ballast())
            .context("opening the ballast")?;
        let mut written = 0u64;
        for chunk in [1usize << 20, 4096, 512, 1] {
            let bytes = vec![0u8; chunk];
            while file.write_all(&bytes).is_ok() {
                written += chunk as u64;
            }
        }
        // what ext4 accepted into its cache is on the disk, blocks taken
        let _ = file.sync_all();
        Ok(written)
    }

    /// Removes the ballast: the space is free again.
    pub fn free(&self) -> Result<()> {
        match std::fs::remove_file(self.ballast()) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(e).context("removing the ballast"),
        }
    }

    /// Bytes still free on the file system.
    pub fn free_bytes(&self) -> Result<u64> {
        let out = Command::new("df")
            .args(["--output=avail", "-B1"])
            .arg(&self.mount)
            .output()?;
        let text = String::from_utf8_lossy(&out.stdout);
        text.lines()
            .nth(1)
            .and_then(|l| l.trim().parse().ok())
            .with_context(|| format!("df said {text:?}"))
    }
}

impl Drop for LoopFs {
    fn drop(&mut self) {
        // lazily: a process that still holds a file there lets go later
        // then `_dir` (the image, the mount point) is removed
        let _ = Command::new("umount").arg("-l").arg(&self.mount).status();
    }
}

fn run(command: &mut Command) -> Result<()> {
    let out = command
        .output()
        .with_context(|| format!("running {command:?}"))?;
    if !out.status.success() {
        bail!(
            "{command:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}
