//! A child's workspace: a copy of the parent's workspace at spawn time.
//!
//! Spawns that arrive within a short window join one batch: the parent's
//! directory is packed once, and the archive is streamed as it is written
//! both into the blob store (the change set's base later) and through a
//! pipe into one `unpack_many` pass that writes every joined child's
//! directory. Packing and unpacking overlap. Read-only children of a batch
//! share one unpacked copy through hard links (see `link_tree`), so three
//! explore spawns cost about what one does. The [`Batcher`] owns the open
//! batch; a root run's family has one.

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use paddock_core::blob::{BlobInfo, BlobKey, BlobStore};
use paddock_core::store::{Run, Workspace};
use paddock_snapshot::{PackOptions, PackStats, UnpackOptions};
use tokio::sync::watch;

use crate::runtime::Shared;
use crate::util::error_chain;
use crate::workspace::{self, SnapshotSource};

/// How long a batch waits for more spawns before its pack starts (the
/// spawns of one model turn arrive within microseconds of each other).
const JOIN_WINDOW: Duration = Duration::from_millis(20);

/// The snapshot a batch of children started from.
#[derive(Debug, Clone)]
pub(crate) struct Base {
    pub(crate) key: BlobKey,
}

/// What a batch did for each of its directories.
#[derive(Debug)]
pub(crate) struct BatchOutcome {
    base: Result<Base, String>,
    targets: Vec<(PathBuf, Result<(), String>)>,
}

/// A directory a batch fills; read-only ones may share file contents.
#[derive(Debug, Clone)]
struct Target {
    path: PathBuf,
    read_only: bool,
}

/// A batch still taking directories (its pack has not started).
#[derive(Debug)]
struct OpenBatch {
    id: u64,
    targets: Vec<Target>,
    done: watch::Receiver<Option<Arc<BatchOutcome>>>,
}

/// The workspace children are copies of, and where a copy is recorded.
#[derive(Debug)]
pub(crate) struct Source {
    pub(crate) shared: Arc<Shared>,
    /// The parent run: the spawn snapshots go to its session.
    pub(crate) parent: Run,
    pub(crate) workspace: Workspace,
    pub(crate) dir: PathBuf,
    /// The parent run's snapshot limits.
    pub(crate) limits: paddock_snapshot::Limits,
}

#[derive(Debug, Default)]
struct BatcherState {
    open: Option<OpenBatch>,
    /// Batches started so far; the latest one's number is its id.
    started: u64,
}

/// Copies one workspace for children, joining close spawns into batches.
#[derive(Debug)]
pub(crate) struct Batcher {
    source: Source,
    state: Mutex<BatcherState>,
}

impl Batcher {
    pub(crate) fn new(source: Source) -> Arc<Self> {
        Arc::new(Self {
            source,
            state: Mutex::new(BatcherState::default()),
        })
    }

    fn state(&self) -> MutexGuard<'_, BatcherState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Makes `target` a copy of the workspace as it is now; returns the
    /// snapshot it is a copy of. `read_only`: the child's sandbox mounts it
    /// read-only, so its files may be shared with other read-only children.
    pub(crate) async fn prepare(
        self: &Arc<Self>,
        target: &Path,
        read_only: bool,
    ) -> Result<Base, String> {
        let joining = Target {
            path: target.to_path_buf(),
            read_only,
        };
        let (mut done, start) = {
            let mut state = self.state();
            match &mut state.open {
                Some(open) => {
                    open.targets.push(joining);
                    (open.done.clone(), None)
                }
                None => {
                    state.started += 1;
                    let id = state.started;
                    let (tx, rx) = watch::channel(None);
                    state.open = Some(OpenBatch {
                        id,
                        targets: vec![joining],
                        done: rx.clone(),
                    });
                    (rx, Some((id, tx)))
                }
            }
        };
        if let Some((id, tx)) = start {
            tokio::spawn(run_batch(Arc::clone(self), id, tx));
        }
        let outcome = done
            .wait_for(Option::is_some)
            .await
            .map_err(|_| "the workspace copy task ended without reporting".to_owned())?
            .clone()
            .ok_or_else(|| "no workspace copy outcome".to_owned())?;
        let base = outcome.base.clone()?;
        match outcome.targets.iter().find(|(path, _)| path == target) {
            Some((_, Ok(()))) => Ok(base),
            Some((_, Err(err))) => Err(err.clone()),
            None => Err(format!("{} was not restored", target.display())),
        }
    }
}

async fn run_batch(batcher: Arc<Batcher>, id: u64, tx: watch::Sender<Option<Arc<BatchOutcome>>>) {
    tokio::time::sleep(JOIN_WINDOW).await;
    // closes the batch: later spawns start their own
    let targets = {
        let mut state = batcher.state();
        match state.open.take() {
            Some(open) if open.id == id => open.targets,
            other => {
                state.open = other;
                Vec::new()
            }
        }
    };
    let (base, results) = copy(&batcher.source, &targets).await;
    let outcome = BatchOutcome {
        base,
        targets: targets
            .into_iter()
            .map(|target| target.path)
            .zip(results)
            .collect(),
    };
    tx.send_replace(Some(Arc::new(outcome)));
}

type Copied = (Result<Base, String>, Vec<Result<(), String>>);
type Packed = Result<(PackStats, BlobInfo), String>;

async fn copy(source: &Source, targets: &[Target]) -> Copied {
    let shared = &source.shared;
    let all = |err: String| -> Copied {
        (
            Err(err.clone()),
            targets.iter().map(|_| Err(err.clone())).collect(),
        )
    };
    if let Err(err) = workspace::ensure_dir(&shared.config.workspaces_root).await {
        return all(error_chain(&err));
    }
    let options = workspace::pack_options(&shared.config, source.limits);
    let excludes = options.excludes.clone();
    let unpack = UnpackOptions {
        limits: source.limits,
        ..UnpackOptions::default()
    };
    let blobs = Arc::clone(&shared.blobs);
    let dir = source.dir.clone();
    let owned = targets.to_vec();
    let joined = tokio::task::spawn_blocking(move || {
        pack_and_unpack(&blobs, &dir, options, &owned, &unpack)
    })
    .await;
    let (packed, results) = match joined {
        Ok(done) => done,
        Err(err) => return all(format!("the workspace copy task failed: {err}")),
    };
    let (stats, info) = match packed {
        Ok(packed) => packed,
        Err(err) => return all(err),
    };
    let parent = &source.parent;
    let source = SnapshotSource {
        tenant: parent.tenant.clone(),
        workspace: source.workspace.clone(),
        dir: source.dir.clone(),
        session: Some(parent.session.clone()),
        sandbox: None,
    };
    // the row keeps the base's blob referenced (and shows the copy in the parent's snapshots)
    if let Err(err) =
        workspace::record_snapshot(&shared.store, source, &stats, &info, excludes).await
    {
        return all(format!(
            "recording the spawn snapshot: {}",
            error_chain(&err)
        ));
    }
    (Ok(Base { key: info.key }), results)
}

/// Packs `dir` into a new blob and, from the same stream, restores it into
/// every writable target and the first read-only one; the other read-only
/// targets link to that one. A target's failure does not stop the others.
fn pack_and_unpack(
    blobs: &Arc<dyn BlobStore>,
    dir: &Path,
    options: PackOptions,
    targets: &[Target],
    unpack: &UnpackOptions,
) -> (Packed, Vec<Result<(), String>>) {
    let first_reader = targets.iter().position(|t| t.read_only);
    let unpacked: Vec<usize> = (0..targets.len())
        .filter(|&i| !targets[i].read_only || Some(i) == first_reader)
        .collect();
    let failed_all = |err: String| {
        (
            Err(err.clone()),
            targets.iter().map(|_| Err(err.clone())).collect(),
        )
    };
    let (reader, writer) = match io::pipe() {
        Ok(pipe) => pipe,
        Err(err) => return failed_all(format!("a pipe for the workspace copy: {err}")),
    };
    let blob = match blobs.writer() {
        Ok(blob) => blob,
        Err(err) => {
            return failed_all(format!("writing the spawn snapshot: {}", error_chain(&err)));
        }
    };
    let source = dir.to_path_buf();
    let packer = std::thread::spawn(move || {
        let mut tee = Tee {
            blob,
            pipe: Some(writer),
        };
        let stats = paddock_snapshot::pack(&source, &options, &mut tee);
        let Tee { blob, pipe } = tee;
        // the end of the archive for the unpacker
        drop(pipe);
        let stats = stats.map_err(|err| match crate::snapshot_limits::limit_hit(&err) {
            Some(hit) => format!("copying the workspace for the subagent: {}", hit.message),
            None => format!("packing {}: {}", source.display(), error_chain(&err)),
        })?;
        let info = blob
            .commit()
            .map_err(|err| format!("storing the spawn snapshot: {}", error_chain(&err)))?;
        Ok((stats, info))
    });
    let paths: Vec<&Path> = unpacked
        .iter()
        .map(|&i| targets[i].path.as_path())
        .collect();
    let mut results: Vec<Result<(), String>> = targets.iter().map(|_| Ok(())).collect();
    for (&i, result) in unpacked
        .iter()
        .zip(paddock_snapshot::unpack_many(reader, &paths, unpack))
    {
        results[i] = result
            .map(drop)
            .map_err(|err| format!("restoring the workspace copy: {}", error_chain(&err)));
    }
    if let Some(first) = first_reader {
        let shared = results[first].clone();
        for (i, target) in targets.iter().enumerate() {
            if !target.read_only || i == first {
                continue;
            }
            results[i] = shared.clone().and_then(|()| {
                super::link_tree::link_tree(&targets[first].path, &target.path).map_err(|err| {
                    format!(
                        "linking {} for a read-only child: {err}",
                        target.path.display()
                    )
                })
            });
        }
    }
    let packed = packer
        .join()
        .unwrap_or_else(|_| Err("the packing thread panicked".to_owned()));
    (packed, results)
}

/// Writes the archive to the blob and to the unpacker. The blob is what
/// counts: once the unpacker stopped reading (it failed), the pipe is dropped.
struct Tee {
    blob: Box<dyn paddock_core::blob::BlobWriter>,
    pipe: Option<io::PipeWriter>,
}

impl Write for Tee {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.blob.write_all(buf)?;
        if let Some(pipe) = &mut self.pipe
            && pipe.write_all(buf).is_err()
        {
            self.pipe = None;
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        self.blob.flush()?;
        if let Some(pipe) = &mut self.pipe
            && pipe.flush().is_err()
        {
            self.pipe = None;
        }
        Ok(())
    }
}
