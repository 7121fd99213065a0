//! `SnapshotExport`: pack the workspace and stream the archive as `Chunk` events.

use std::io::{self, Write};
use std::path::PathBuf;

use paddock_proto::{ErrorCode, ErrorInfo, Event, Reply, SnapshotPackStats};
use paddock_snapshot::{PackOptions, PackStats, pack};
use tokio::sync::mpsc;

use super::{limits, snapshot_error};
use crate::error::Handled;
use crate::server::outbox::Outbox;

/// Archive bytes per `Chunk` event.
const CHUNK_BYTES: usize = 1 << 20;
/// Chunks the packer may run ahead of the connection.
const CHUNKS_IN_FLIGHT: usize = 4;

pub struct ExportSpec {
    pub excludes: Vec<String>,
    pub max_files: Option<u64>,
    pub max_bytes: Option<u64>,
}

/// Starts packing `root`; events and the final reply go to `outbox` under `id`.
pub fn start(root: PathBuf, outbox: &Outbox, id: u64, spec: ExportSpec) {
    let mut opts = PackOptions::default().with_excludes(spec.excludes);
    opts.limits = limits(spec.max_files, spec.max_bytes);
    let (tx, mut rx) = mpsc::channel::<Vec<u8>>(CHUNKS_IN_FLIGHT);
    let outbox = outbox.clone();
    tokio::spawn(async move {
        let work = tokio::task::spawn_blocking(move || {
            let mut sink = ChunkWriter::new(tx);
            let stats = pack(&root, &opts, &mut sink)?;
            sink.send_rest()
                .map_err(|source| paddock_snapshot::SnapshotError::Write { source })?;
            Ok(stats)
        });
        while let Some(chunk) = rx.recv().await {
            if !outbox.event(id, Event::Chunk, chunk).await {
                // Dropping the receiver fails the packer's next write.
                break;
            }
        }
        drop(rx);
        let result: Handled = match work.await {
            Ok(Ok(stats)) => Ok((Reply::SnapshotExported(wire_stats(&stats)), Vec::new())),
            Ok(Err(e)) => Err(snapshot_error("packing the workspace", &e)),
            Err(e) => Err(ErrorInfo::new(
                ErrorCode::Io,
                format!("packing the workspace failed: {e}"),
            )),
        };
        if let Err(error) = &result {
            tracing::warn!(id, error = %error, "snapshot export failed");
        }
        outbox.finish(id, result).await;
    });
}

fn wire_stats(stats: &PackStats) -> SnapshotPackStats {
    SnapshotPackStats {
        files: stats.files,
        dirs: stats.dirs,
        symlinks: stats.symlinks,
        bytes_raw: stats.bytes_raw,
        bytes_compressed: stats.bytes_compressed,
        excluded: stats.excluded,
        skipped: stats.skipped_total,
        key: stats.key.to_string(),
    }
}

/// Cuts the archive into chunks for the async side; blocks while the
/// connection is behind.
struct ChunkWriter {
    buf: Vec<u8>,
    tx: mpsc::Sender<Vec<u8>>,
}

impl ChunkWriter {
    fn new(tx: mpsc::Sender<Vec<u8>>) -> Self {
        Self {
            buf: Vec::with_capacity(CHUNK_BYTES),
            tx,
        }
    }

    fn send_rest(&mut self) -> io::Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let chunk = std::mem::replace(&mut self.buf, Vec::with_capacity(CHUNK_BYTES));
        self.tx
            .blocking_send(chunk)
            .map_err(|_| io::Error::new(io::ErrorKind::BrokenPipe, "the connection is gone"))
    }
}

impl Write for ChunkWriter {
    fn write(&mut self, data: &[u8]) -> io::Result<usize> {
        let take = data.len().min(CHUNK_BYTES - self.buf.len());
        self.buf.extend_from_slice(&data[..take]);
        if self.buf.len() >= CHUNK_BYTES {
            self.send_rest()?;
        }
        Ok(take)
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}
