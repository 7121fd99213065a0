//! Snapshot export and import: the archive streams through the connection in
//! chunks, never held whole on the host.

use paddock_core::sandbox::{GuestError, SnapshotExportOptions, SnapshotImportOptions};
use paddock_proto::{Event, GuestMessage, Reply, Request, SnapshotPackStats, SnapshotUnpackStats};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use super::{GuestClient, ops};

/// Archive bytes per `SnapshotChunk`; each is acknowledged before the next
/// is sent, so at most this much is in flight.
const IMPORT_CHUNK: usize = 1 << 20;

impl GuestClient {
    pub(super) async fn export_snapshot(
        &self,
        options: SnapshotExportOptions,
        sink: &mut (dyn AsyncWrite + Send + Unpin),
    ) -> Result<SnapshotPackStats, GuestError> {
        let request = Request::SnapshotExport {
            excludes: options.excludes,
            max_files: options.max_files,
            max_bytes: options.max_bytes,
        };
        let mut call = self.start(request, &[]).await?;
        let op = call.op;
        loop {
            match call.next().await? {
                (GuestMessage::Event(Event::Chunk), data) => sink
                    .write_all(&data)
                    .await
                    .map_err(|source| GuestError::SnapshotSink { source })?,
                (GuestMessage::Event(_), _) => {}
                (GuestMessage::Reply(Reply::SnapshotExported(stats)), _) => {
                    sink.flush()
                        .await
                        .map_err(|source| GuestError::SnapshotSink { source })?;
                    return Ok(stats);
                }
                (GuestMessage::Reply(other), _) => return Err(ops::unexpected(op, &other)),
                (GuestMessage::Error(error), _) => return Err(GuestError::Refused { op, error }),
            }
        }
    }

    pub(super) async fn import_snapshot(
        &self,
        options: SnapshotImportOptions,
        reader: &mut (dyn AsyncRead + Send + Unpin),
    ) -> Result<SnapshotUnpackStats, GuestError> {
        let request = Request::SnapshotImport {
            max_files: options.max_files,
            max_bytes: options.max_bytes,
        };
        let import = self.start(request, &[]).await?;
        let target = import.id;
        let mut buf = vec![0u8; IMPORT_CHUNK];
        loop {
            let filled = match read_full(reader, &mut buf).await {
                Ok(filled) => filled,
                Err(source) => {
                    // An unfinished archive: the guest's restore fails and leaves nothing.
                    self.send_detached(Request::SnapshotChunk { target, eof: true });
                    return Err(GuestError::SnapshotSource { source });
                }
            };
            let eof = filled < buf.len();
            match self
                .call(Request::SnapshotChunk { target, eof }, &buf[..filled])
                .await
            {
                Ok((Reply::Ok, _)) => {}
                Ok((other, _)) => return Err(ops::unexpected("snapshot_chunk", &other)),
                // The restore already ended; its own answer says why.
                Err(GuestError::Refused { .. }) => break,
                Err(err) => return Err(err),
            }
            if eof {
                break;
            }
        }
        let op = import.op;
        match import.reply().await? {
            (Reply::SnapshotImported(stats), _) => Ok(stats),
            (other, _) => Err(ops::unexpected(op, &other)),
        }
    }
}

/// Reads until `buf` is full or the reader ends; returns the bytes read.
async fn read_full(
    reader: &mut (dyn AsyncRead + Send + Unpin),
    buf: &mut [u8],
) -> std::io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        let n = reader.read(&mut buf[filled..]).await?;
        if n == 0 {
            break;
        }
        filled += n;
    }
    Ok(filled)
}
