//! The initramfs every sandbox VM boots: the image's, with the host's
//! static guest appended as a cpio archive of its own at
//! /opt/paddock/paddock-guest (the kernel unpacks concatenated archives,
//! each starting 4-byte aligned). The guest is so in the VM's memory, not on
//! a share: QEMU refuses to save a VM while a 9p export is mounted in it.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

/// Where the guest lands in the VM (the image's init execs it).
const GUEST_PATH: &str = "opt/paddock/paddock-guest";
const TRAILER: &str = "TRAILER!!!";
/// `newc`: ASCII header, no checksum.
const MAGIC: &str = "070701";
const HEADER_LEN: u64 = 110;
/// A regular file, rwxr-xr-x.
const GUEST_MODE: u32 = 0o100_755;

fn pad4(len: u64) -> u64 {
    len.next_multiple_of(4)
}

/// The bytes of one `newc` entry before its data (header, name, padding).
fn entry_header(name: &str, mode: u32, size: u64, mtime: u64, ino: u32) -> Vec<u8> {
    let name_len = name.len() + 1;
    let fields = [
        u64::from(ino),
        u64::from(mode),
        0,
        0,
        1,
        mtime,
        size,
        0,
        0,
        0,
        0,
        name_len as u64,
        0,
    ];
    let mut out = MAGIC.as_bytes().to_vec();
    for field in fields {
        // newc fields are 32 bits; the guest binary and times fit.
        out.extend_from_slice(format!("{:08x}", field & 0xffff_ffff).as_bytes());
    }
    out.extend_from_slice(name.as_bytes());
    out.push(0);
    out.resize(pad4(HEADER_LEN + name_len as u64) as usize, 0);
    out
}

/// The appended archive's length for a guest of `size` bytes.
fn archive_len(size: u64) -> u64 {
    let entry = pad4(HEADER_LEN + GUEST_PATH.len() as u64 + 1) + pad4(size);
    entry + pad4(HEADER_LEN + TRAILER.len() as u64 + 1)
}

/// `<dir>/initrd.img`: `base` then the guest, made again when either is
/// newer or the length is not the one they make. Atomic: a VM starting
/// meanwhile reads the previous one whole.
pub(super) fn stage(base: &Path, guest: &Path, dir: &Path) -> std::io::Result<PathBuf> {
    let target = dir.join("initrd.img");
    let base_meta = std::fs::metadata(base)?;
    let guest_meta = std::fs::metadata(guest)?;
    let guest_size = guest_meta.len();
    if guest_size > u64::from(u32::MAX) {
        return Err(std::io::Error::other(format!(
            "{} is larger than a cpio archive holds",
            guest.display()
        )));
    }
    let expected = pad4(base_meta.len()) + archive_len(guest_size);
    if let Ok(staged) = std::fs::metadata(&target)
        && staged.len() == expected
        && staged.modified()? >= base_meta.modified()?
        && staged.modified()? >= guest_meta.modified()?
    {
        return Ok(target);
    }
    let staging = tempfile::Builder::new()
        .prefix(".initrd.")
        .tempfile_in(dir)?;
    {
        let mut out = BufWriter::new(staging.as_file());
        std::io::copy(&mut File::open(base)?, &mut out)?;
        let padding = pad4(base_meta.len()) - base_meta.len();
        out.write_all(&vec![0; padding as usize])?;
        let mtime = guest_meta
            .modified()?
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        out.write_all(&entry_header(GUEST_PATH, GUEST_MODE, guest_size, mtime, 1))?;
        let copied = std::io::copy(&mut File::open(guest)?, &mut out)?;
        if copied != guest_size {
            return Err(std::io::Error::other(format!(
                "{} changed while it was staged",
                guest.display()
            )));
        }
        out.write_all(&vec![0; (pad4(guest_size) - guest_size) as usize])?;
        out.write_all(&entry_header(TRAILER, 0, 0, 0, 0))?;
        out.flush()?;
    }
    // World-readable: QEMU reads it after dropping to the workspace owner.
    std::fs::set_permissions(staging.path(), std::fs::Permissions::from_mode(0o644))?;
    staging.persist(&target).map_err(|e| e.error)?;
    Ok(target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_guest_is_appended_aligned_and_cpio_reads_it_back() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("base.img");
        let guest = dir.path().join("guest");
        std::fs::write(&base, b"12345").unwrap();
        std::fs::write(&guest, b"#!/bin/sh\necho hi\n").unwrap();
        let out = tempfile::tempdir().unwrap();
        let staged = stage(&base, &guest, out.path()).unwrap();
        let bytes = std::fs::read(&staged).unwrap();
        assert_eq!(&bytes[..5], b"12345");
        assert_eq!(&bytes[5..8], &[0, 0, 0]);
        assert_eq!(&bytes[8..14], MAGIC.as_bytes());
        assert_eq!(bytes.len() as u64, 8 + archive_len(19));
        // the archive as the system's cpio reads it (when it is installed)
        if let Ok(listed) = std::process::Command::new("cpio")
            .args(["-itv", "--quiet"])
            .stdin(
                File::open(&staged)
                    .map(|mut f| {
                        use std::io::{Seek, SeekFrom};
                        f.seek(SeekFrom::Start(8)).unwrap();
                        f
                    })
                    .unwrap(),
            )
            .output()
        {
            let listed = String::from_utf8_lossy(&listed.stdout);
            assert!(listed.contains("-rwxr-xr-x"), "{listed}");
            assert!(listed.contains(GUEST_PATH), "{listed}");
        }
        // current: kept as it is
        let before = std::fs::metadata(&staged).unwrap().modified().unwrap();
        stage(&base, &guest, out.path()).unwrap();
        assert_eq!(
            std::fs::metadata(&staged).unwrap().modified().unwrap(),
            before
        );
        // a new guest of another size: made again
        std::fs::write(&guest, b"#!/bin/sh\necho a longer guest\n").unwrap();
        let again = std::fs::read(stage(&base, &guest, out.path()).unwrap()).unwrap();
        assert_eq!(again.len() as u64, 8 + archive_len(31));
    }
}
