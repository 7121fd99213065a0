//! Fork: one archive restored into several targets at once.
//!
//! The calling thread decompresses the stream once and hands the same
//! chunks to one thread per target, each running the ordinary restore (all
//! checks, its own staging, all or nothing). Decompression is a quarter to a
//! third of a restore's CPU time, so N targets cost much less than N restores,
//! and the targets are written in parallel.

use std::io::{self, Read};
use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use super::reader::{RatioExceeded, decoder};
use super::{UnpackStats, restore};
use crate::error::SnapshotError;
use crate::options::UnpackOptions;

/// Decompressed bytes handed out at a time.
const CHUNK: usize = 1024 * 1024;
/// Chunks buffered per target before the decoder waits for the slowest one.
const DEPTH: usize = 4;

/// A decoding error, repeated to every target.
type Chunk = Result<Arc<Vec<u8>>, DecodeFailure>;

#[derive(Debug, Clone)]
enum DecodeFailure {
    Ratio,
    Io(io::ErrorKind, String),
}

/// Restores the zstd-compressed tar archive read from `input` into every one
/// of `targets` (each must not exist or be an empty directory), with the same
/// checks and guarantees as [`crate::unpack`] for each target. Results come
/// in the order of `targets`; a target that fails leaves nothing and does not
/// stop the others, and a damaged archive fails them all.
pub fn unpack_many<R: Read>(
    input: R,
    targets: &[&Path],
    opts: &UnpackOptions,
) -> Vec<Result<UnpackStats, SnapshotError>> {
    let decoder = match decoder(input) {
        Ok(decoder) => decoder,
        Err(e) => {
            return targets
                .iter()
                .map(|_| {
                    Err(SnapshotError::Decompress {
                        at: None,
                        source: io::Error::new(e.kind(), e.to_string()),
                    })
                })
                .collect();
        }
    };
    std::thread::scope(|scope| {
        let mut senders = Vec::with_capacity(targets.len());
        let workers: Vec<_> = targets
            .iter()
            .map(|target| {
                let (sender, receiver) = sync_channel(DEPTH);
                senders.push(Some(sender));
                scope.spawn(move || restore(ChunkReader::new(receiver), target, opts))
            })
            .collect();
        broadcast(decoder, &mut senders);
        drop(senders);
        workers
            .into_iter()
            .map(|worker| match worker.join() {
                Ok(result) => result,
                Err(panic) => std::panic::resume_unwind(panic),
            })
            .collect()
    })
}

/// Decodes to the end (or the first error, which every target receives),
/// feeding every target still reading.
fn broadcast<R: Read>(mut decoder: R, senders: &mut [Option<SyncSender<Chunk>>]) {
    loop {
        let chunk = match read_chunk(&mut decoder) {
            Ok(chunk) if chunk.is_empty() => return,
            Ok(chunk) => Ok(Arc::new(chunk)),
            Err(e) if RatioExceeded::is(&e) => Err(DecodeFailure::Ratio),
            Err(e) => Err(DecodeFailure::Io(e.kind(), e.to_string())),
        };
        let failed = chunk.is_err();
        for slot in senders.iter_mut() {
            // A target that failed dropped its receiver: stop feeding it.
            if let Some(sender) = slot
                && sender.send(chunk.clone()).is_err()
            {
                *slot = None;
            }
        }
        if failed || senders.iter().all(Option::is_none) {
            return;
        }
    }
}

/// Up to [`CHUNK`] bytes; empty at the end of the stream.
fn read_chunk<R: Read>(decoder: &mut R) -> io::Result<Vec<u8>> {
    let mut chunk = vec![0; CHUNK];
    let mut filled = 0;
    while filled < CHUNK {
        match decoder.read(&mut chunk[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    chunk.truncate(filled);
    Ok(chunk)
}

/// Reads the chunks of one target's channel as a byte stream.
struct ChunkReader {
    receiver: Receiver<Chunk>,
    current: Arc<Vec<u8>>,
    pos: usize,
}

impl ChunkReader {
    fn new(receiver: Receiver<Chunk>) -> Self {
        Self {
            receiver,
            current: Arc::new(Vec::new()),
            pos: 0,
        }
    }
}

impl Read for ChunkReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.pos == self.current.len() {
            match self.receiver.recv() {
                Ok(Ok(chunk)) => {
                    self.current = chunk;
                    self.pos = 0;
                }
                Ok(Err(DecodeFailure::Ratio)) => return Err(io::Error::other(RatioExceeded)),
                Ok(Err(DecodeFailure::Io(kind, message))) => {
                    return Err(io::Error::new(kind, message));
                }
                // The decoder is done.
                Err(_) => return Ok(0),
            }
        }
        let n = buf.len().min(self.current.len() - self.pos);
        buf[..n].copy_from_slice(&self.current[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}
