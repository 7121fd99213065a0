//! `SnapshotImport` and its `SnapshotChunk`s: restore a streamed archive into
//! the (empty) workspace.
//!
//! The connection's reader queues each chunk, in arrival order, on a bounded
//! channel that a blocking restore thread reads through [`ChannelReader`];
//! when the restore is behind, the reader waits, which slows the host down.

use std::collections::HashMap;
use std::io::{self, Read};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use paddock_proto::{ErrorCode, ErrorInfo, Reply, SnapshotUnpackStats};
use paddock_snapshot::{UnpackOptions, UnpackStats, unpack};
use tokio::sync::mpsc;

use super::{limits, snapshot_error};
use crate::agent::Agent;
use crate::error::{Handled, bad_request};
use crate::server::outbox::Outbox;

/// Chunks queued ahead of the restore thread.
const QUEUE_CHUNKS: usize = 4;

/// Imports in flight, by request id, for their `SnapshotChunk`s.
#[derive(Debug, Default)]
pub struct ImportRegistry {
    running: Mutex<HashMap<u64, mpsc::Sender<Vec<u8>>>>,
}

fn poisoned() -> ErrorInfo {
    ErrorInfo::new(ErrorCode::Io, "import registry unavailable")
}

impl ImportRegistry {
    /// Queues the next bytes of import `target`; `eof` ends its archive.
    pub async fn feed(&self, target: u64, data: Vec<u8>, eof: bool) -> Handled {
        let sender = {
            let mut running = self.running.lock().map_err(|_| poisoned())?;
            let sender = if eof {
                running.remove(&target)
            } else {
                running.get(&target).cloned()
            };
            sender.ok_or_else(|| {
                ErrorInfo::new(
                    ErrorCode::UnknownProcess,
                    format!("no snapshot import with request id {target} is running"),
                )
            })?
        };
        if !data.is_empty() && sender.send(data).await.is_err() {
            return Err(ErrorInfo::new(
                ErrorCode::Io,
                format!("snapshot import {target} has already ended (see its reply)"),
            ));
        }
        Ok((Reply::Ok, Vec::new()))
    }

    fn register(&self, id: u64, sender: mpsc::Sender<Vec<u8>>) -> Result<(), ErrorInfo> {
        let mut running = self.running.lock().map_err(|_| poisoned())?;
        if running.contains_key(&id) {
            return Err(bad_request(format!("request id {id} is already in flight")));
        }
        running.insert(id, sender);
        Ok(())
    }

    fn remove(&self, id: u64) {
        if let Ok(mut running) = self.running.lock() {
            running.remove(&id);
        }
    }

    /// Ends every import's archive (the connection is gone): each restore
    /// sees a truncated archive and leaves nothing behind.
    pub fn clear(&self) {
        if let Ok(mut running) = self.running.lock() {
            running.clear();
        }
    }
}

pub struct ImportSpec {
    pub max_files: Option<u64>,
    pub max_bytes: Option<u64>,
}

/// Starts restoring into `root`; `first` is the request's payload.
pub fn start(agent: &Arc<Agent>, outbox: &Outbox, id: u64, spec: ImportSpec, first: Vec<u8>) {
    let agent = agent.clone();
    let root: PathBuf = agent.workspace.root().to_path_buf();
    let (tx, rx) = mpsc::channel::<Vec<u8>>(QUEUE_CHUNKS);
    if !first.is_empty() && tx.try_send(first).is_err() {
        // Unreachable with an empty channel of capacity > 0; answer rather than lose bytes.
        let outbox = outbox.clone();
        tokio::spawn(async move {
            outbox
                .finish(id, Err(bad_request("cannot queue the first chunk")))
                .await;
        });
        return;
    }
    if let Err(error) = agent.imports.register(id, tx) {
        let outbox = outbox.clone();
        tokio::spawn(async move { outbox.finish(id, Err(error)).await });
        return;
    }
    let limits = limits(spec.max_files, spec.max_bytes);
    let defaults = UnpackOptions::default();
    let opts = UnpackOptions {
        limits,
        max_file_bytes: defaults.max_file_bytes.max(limits.max_bytes),
        ..defaults
    };
    let outbox = outbox.clone();
    tokio::spawn(async move {
        let work =
            tokio::task::spawn_blocking(move || unpack(ChannelReader::new(rx), &root, &opts));
        let result: Handled = match work.await {
            Ok(Ok(stats)) => Ok((Reply::SnapshotImported(wire_stats(&stats)), Vec::new())),
            Ok(Err(e)) => Err(snapshot_error("restoring the snapshot", &e)),
            Err(e) => Err(ErrorInfo::new(
                ErrorCode::Io,
                format!("restoring the snapshot failed: {e}"),
            )),
        };
        agent.imports.remove(id);
        if let Err(error) = &result {
            tracing::warn!(id, error = %error, "snapshot import failed");
        }
        outbox.finish(id, result).await;
    });
}

fn wire_stats(stats: &UnpackStats) -> SnapshotUnpackStats {
    SnapshotUnpackStats {
        files: stats.files,
        dirs: stats.dirs,
        symlinks: stats.symlinks,
        hardlinks: stats.hardlinks,
        bytes: stats.bytes,
    }
}

/// Reads the queued chunks as one stream; end of stream once every sender
/// is gone (the `eof` chunk, or the connection ended).
struct ChannelReader {
    rx: mpsc::Receiver<Vec<u8>>,
    current: Vec<u8>,
    pos: usize,
}

impl ChannelReader {
    fn new(rx: mpsc::Receiver<Vec<u8>>) -> Self {
        Self {
            rx,
            current: Vec::new(),
            pos: 0,
        }
    }
}

impl Read for ChannelReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.pos >= self.current.len() {
            match self.rx.blocking_recv() {
                Some(chunk) => {
                    self.current = chunk;
                    self.pos = 0;
                }
                None => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len() - self.pos);
        buf[..n].copy_from_slice(&self.current[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}
