//! `paddock-bench-checkpoint`: what a per-turn checkpoint and a rewind cost
//! on a ~200 MiB workspace (the snapshot benchmarks' shape: ~12,300 files),
//! beside a full snapshot and a full restore of the same workspace, in one
//! run. Not a test: it prints a table.
//!
//! - checkpoint: a turn changed one file; the capture hashes what changed
//!   stat, stores new content, and stores the manifest (what the run does
//!   minus the one row insert). Baseline: a full snapshot (tar + zstd into
//!   the blob store) of the same tree.
//! - rewind: back to the first checkpoint from a state where a few files
//!   changed, and from an emptied workspace (`rm -rf ./*`); only what
//!   differs is written. Baseline: a full restore of the snapshot into an
//!   empty directory.
//!
//!   cargo build --release -p paddock-tests --bin paddock-bench-checkpoint
//!   target/x86_64-unknown-linux-gnu/release/paddock-bench-checkpoint [--runs 5] [--dir DIR]

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Result;
use clap::Parser;
use paddock_bench_support::figures::{median, mib, timed};
use paddock_bench_support::workspace::{Shape, build as build_workspace};
use paddock_core::blob::BlobStore;
use paddock_snapshot::checkpoint::{CaptureOptions, Manifest, capture, restore};
use paddock_snapshot::{Limits, LocalBlobStore, PackOptions, UnpackOptions, pack, unpack};

const CHECKPOINT_FLOOR: Duration = Duration::from_millis(20);

#[derive(Debug, Parser)]
#[command(about = "Incremental checkpoint and rewind beside a full snapshot and restore")]
struct Args {
    /// Timed runs of each line (the median is printed).
    #[arg(long, default_value_t = 5)]
    runs: usize,
    /// Where the workspace and the blob store go (default: /dev/shm if
    /// present, else the temp dir).
    #[arg(long)]
    dir: Option<PathBuf>,
}

fn unlimited() -> Limits {
    Limits {
        max_files: u64::MAX,
        max_bytes: u64::MAX,
    }
}

/// What a run's checkpoint does: capture against the previous manifest,
/// then store the manifest.
fn checkpoint(
    root: &Path,
    previous: Option<&Manifest>,
    options: &CaptureOptions,
    blobs: &LocalBlobStore,
) -> Result<Manifest> {
    let (manifest, _) = capture(root, previous, options, Some(blobs))?;
    let mut writer = blobs.writer()?;
    std::io::Write::write_all(&mut writer, &manifest.to_bytes())?;
    writer.commit()?;
    Ok(manifest)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

fn main() -> Result<()> {
    let args = Args::parse();
    let base = args.dir.clone().unwrap_or_else(|| {
        let shm = PathBuf::from("/dev/shm");
        if shm.is_dir() {
            shm
        } else {
            std::env::temp_dir()
        }
    });
    let scratch = tempfile::Builder::new()
        .prefix("paddock-bench-ckpt-")
        .tempdir_in(&base)?;
    let workspace = scratch.path().join("workspace");
    let (files, bytes) = build_workspace(&workspace, Shape::FULL)?;
    println!(
        "workspace: {files} files, {:.1} MiB under {}, runs: {}",
        mib(bytes),
        base.display(),
        args.runs
    );
    let blobs = LocalBlobStore::open(scratch.path().join("blobs"))?;
    let options = CaptureOptions {
        excludes: Vec::new(),
        limits: unlimited(),
        disk_budget: None,
    };
    let pack_options = PackOptions {
        excludes: Vec::new(),
        limits: unlimited(),
        ..PackOptions::default()
    };
    let unpack_options = UnpackOptions {
        limits: unlimited(),
        max_file_bytes: u64::MAX,
        ..UnpackOptions::default()
    };
    // out of the racy window of the first capture
    std::thread::sleep(Duration::from_millis(300));

    // full snapshots (baseline) and the first, full checkpoint
    let mut snapshot_times = Vec::new();
    let mut snapshot_key = None;
    for _ in 0..args.runs {
        snapshot_times.push(timed(|| {
            let mut writer = blobs.writer()?;
            pack(&workspace, &pack_options, &mut writer)?;
            snapshot_key = Some(writer.commit()?.key);
            Ok(())
        })?);
    }
    let mut first = None;
    let first_time = timed(|| {
        first = Some(checkpoint(&workspace, None, &options, &blobs)?);
        Ok(())
    })?;
    let first = first.ok_or_else(|| anyhow::anyhow!("no first checkpoint"))?;

    // a turn that changed one file, then its checkpoint
    let changed = first
        .entries
        .keys()
        .find(|p| p.as_bytes().ends_with(b".rs") || p.as_bytes().ends_with(b".txt"))
        .cloned()
        .unwrap_or_else(|| "README.md".into());
    let mut previous = first.clone();
    let mut incremental_times = Vec::new();
    for run in 0..args.runs {
        fs::write(
            workspace.join(&changed),
            format!("changed in turn {run}\n").repeat(64),
        )?;
        incremental_times.push(timed(|| {
            previous = checkpoint(&workspace, Some(&previous), &options, &blobs)?;
            Ok(())
        })?);
    }
    let unchanged = timed(|| {
        checkpoint(&workspace, Some(&previous), &options, &blobs)?;
        Ok(())
    })?;

    // full restores (baseline)
    let snapshot_key = snapshot_key.ok_or_else(|| anyhow::anyhow!("no snapshot"))?;
    let mut restore_times = Vec::new();
    for run in 0..args.runs {
        let target = scratch.path().join(format!("restore-{run}"));
        restore_times.push(timed(|| {
            unpack(blobs.open(&snapshot_key)?.reader, &target, &unpack_options)?;
            Ok(())
        })?);
        fs::remove_dir_all(&target)?;
    }

    // rewinds to the first checkpoint: after a few files changed, and after rm -rf
    let mut few_times = Vec::new();
    let mut empty_times = Vec::new();
    let victims: Vec<paddock_proto::FsPath> = first
        .entries
        .iter()
        .filter(|(_, e)| matches!(e.node, paddock_snapshot::checkpoint::Node::File { .. }))
        .map(|(p, _)| p.clone())
        .step_by(1000)
        .collect();
    let mut current = previous.clone();
    for _ in 0..args.runs {
        for path in &victims {
            fs::write(workspace.join(path), b"overwritten by a bad turn\n")?;
        }
        let hint = current.clone();
        few_times.push(timed(|| {
            restore(&workspace, &first, Some(&hint), &options, &blobs)?;
            Ok(())
        })?);
        current = first.clone();
        for entry in fs::read_dir(&workspace)? {
            let path = entry?.path();
            if path.is_dir() {
                fs::remove_dir_all(&path)?;
            } else {
                fs::remove_file(&path)?;
            }
        }
        empty_times.push(timed(|| {
            restore(&workspace, &first, Some(&current), &options, &blobs)?;
            Ok(())
        })?);
    }

    let snapshot = median(&snapshot_times);
    let incremental = median(&incremental_times);
    let full_restore = median(&restore_times);
    let few = median(&few_times);
    let empty = median(&empty_times);
    println!();
    println!("{:<58} {:>10} {:>8}", "line", "median ms", "vs base");
    println!(
        "{:<58} {:>10.2} {:>8}",
        "full snapshot (tar+zstd into the blob store)",
        ms(snapshot),
        "base"
    );
    println!(
        "{:<58} {:>10.2} {:>7.3}x",
        "first checkpoint (hash and store every file)",
        ms(first_time),
        first_time.as_secs_f64() / snapshot.as_secs_f64()
    );
    println!(
        "{:<58} {:>10.2} {:>7.3}x  floor < {} ms: {}",
        "checkpoint after a turn that changed one file",
        ms(incremental),
        incremental.as_secs_f64() / snapshot.as_secs_f64(),
        CHECKPOINT_FLOOR.as_millis(),
        if incremental < CHECKPOINT_FLOOR {
            "met"
        } else {
            "NOT met"
        }
    );
    println!(
        "{:<58} {:>10.2} {:>7.3}x",
        "checkpoint after a turn that changed nothing",
        ms(unchanged),
        unchanged.as_secs_f64() / snapshot.as_secs_f64()
    );
    println!(
        "{:<58} {:>10.2} {:>8}",
        "full restore (snapshot into an empty dir)",
        ms(full_restore),
        "base"
    );
    let verdict = |d: Duration| if d <= full_restore { "met" } else { "NOT met" };
    println!(
        "{:<58} {:>10.2} {:>7.3}x  floor <= 1.0x: {}",
        format!(
            "rewind, {} files changed since the checkpoint",
            victims.len()
        ),
        ms(few),
        few.as_secs_f64() / full_restore.as_secs_f64(),
        verdict(few)
    );
    println!(
        "{:<58} {:>10.2} {:>7.3}x  floor <= 1.0x: {}",
        "rewind of an emptied workspace (rm -rf ./*)",
        ms(empty),
        empty.as_secs_f64() / full_restore.as_secs_f64(),
        verdict(empty)
    );
    println!(
        "blobs stored: {}, manifest: {} bytes for {} entries",
        blobs.list()?.len(),
        first.to_bytes().len(),
        first.entries.len()
    );
    Ok(())
}
