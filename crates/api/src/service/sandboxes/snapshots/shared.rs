//! One read of a blob fanned out to the restores of a fork, the slowest
//! reader setting the pace.

use super::{
    Arc, AsyncRead, BlobKey, BlobReader, Read, SandboxService, ServiceError, SnapshotId, TenantId,
    io,
};

/// Chunks of a blob read once for all the restores of a fork, and how many
/// each restore may have queued.
const SHARED_CHUNK: usize = 1 << 20;
const SHARED_DEPTH: usize = 4;

/// Chunks of a blob shared by the restores of a fork; a read error is
/// passed on as its kind.
type Chunk = Result<Arc<Vec<u8>>, io::ErrorKind>;

impl SandboxService {
    /// Opens the blob of snapshot `id` once and hands its chunks to `count`
    /// readers; a reader that is dropped stops being fed, the others go on.
    pub(super) async fn open_shared(
        &self,
        tenant: &TenantId,
        id: &SnapshotId,
        key: &BlobKey,
        count: usize,
    ) -> Result<Vec<SharedArchive>, ServiceError> {
        let blob = self.open_blob(tenant, id, key).await?;
        let (senders, readers): (Vec<_>, Vec<_>) = (0..count)
            .map(|_| {
                let (tx, rx) = tokio::sync::mpsc::channel(SHARED_DEPTH);
                (tx, SharedArchive::new(rx))
            })
            .unzip();
        tokio::task::spawn_blocking(move || broadcast(blob, senders));
        Ok(readers)
    }
}

/// Reads `blob` to its end in [`SHARED_CHUNK`] pieces and sends each to every
/// reader still there; the slowest reader sets the pace.
fn broadcast(mut blob: BlobReader, mut senders: Vec<tokio::sync::mpsc::Sender<Chunk>>) {
    loop {
        let mut chunk = vec![0u8; SHARED_CHUNK];
        let chunk: Chunk = match read_full(&mut blob, &mut chunk) {
            Ok(0) => return,
            Ok(n) => {
                chunk.truncate(n);
                Ok(Arc::new(chunk))
            }
            Err(e) => Err(e.kind()),
        };
        let failed = chunk.is_err();
        senders.retain(|tx| tx.blocking_send(chunk.clone()).is_ok());
        if failed || senders.is_empty() {
            return;
        }
    }
}

fn read_full(from: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match from.read(&mut buf[filled..]) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(filled)
}

/// One restore's view of a shared blob read: an [`AsyncRead`] over the
/// chunks [`broadcast`] sends; dropping it stops its feed.
#[derive(Debug)]
pub(super) struct SharedArchive {
    rx: tokio::sync::mpsc::Receiver<Chunk>,
    current: Arc<Vec<u8>>,
    pos: usize,
}

impl SharedArchive {
    fn new(rx: tokio::sync::mpsc::Receiver<Chunk>) -> Self {
        Self {
            rx,
            current: Arc::new(Vec::new()),
            pos: 0,
        }
    }
}

impl AsyncRead for SharedArchive {
    fn poll_read(
        mut self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> std::task::Poll<io::Result<()>> {
        let this = &mut *self;
        while this.pos == this.current.len() {
            match std::task::ready!(this.rx.poll_recv(cx)) {
                Some(Ok(chunk)) => {
                    this.current = chunk;
                    this.pos = 0;
                }
                Some(Err(kind)) => {
                    return std::task::Poll::Ready(Err(io::Error::new(
                        kind,
                        "reading the snapshot's blob failed",
                    )));
                }
                // The whole blob was sent.
                None => return std::task::Poll::Ready(Ok(())),
            }
        }
        let n = buf.remaining().min(this.current.len() - this.pos);
        buf.put_slice(&this.current[this.pos..this.pos + n]);
        this.pos += n;
        std::task::Poll::Ready(Ok(()))
    }
}
