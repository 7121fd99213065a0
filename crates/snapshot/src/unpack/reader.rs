//! Reading the archive: zstd decoding and tar members with their long names
//! and pax records resolved by us, with bounded sizes, before any check.

use std::cell::Cell;
use std::io::{self, BufReader, Read};
use std::rc::Rc;

use tar::{EntryType, PaxExtensions};

use crate::error::{Limit, Refusal, SnapshotError, lossy};

/// Longest GNU long-name or pax record accepted: far above PATH_MAX, far
/// below anything that could exhaust memory.
const MAX_EXTENSION: u64 = 64 * 1024;
/// Highest ratio of decompressed tar stream to compressed archive read so
/// far. Source trees compress 3-20x and zstd's best case (zeros) is ~30000x:
/// a few KB must not become GBs on disk (a zip bomb).
pub(crate) const MAX_RATIO: u64 = 1_000;
/// Decompressed bytes allowed whatever the ratio, so a small archive of
/// very compressible files still restores.
const RATIO_ALLOWANCE: u64 = 64 * 1024 * 1024;

/// The decoder's output outgrew [`MAX_RATIO`] times its input.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RatioExceeded;

impl std::fmt::Display for RatioExceeded {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the archive decompresses to more than {MAX_RATIO} times its size"
        )
    }
}

impl std::error::Error for RatioExceeded {}

impl RatioExceeded {
    pub(crate) fn is(error: &io::Error) -> bool {
        error.get_ref().is_some_and(|inner| inner.is::<Self>())
    }
}

/// What the decoding reader saw, shared with the code that maps errors.
#[derive(Debug, Default)]
pub(crate) struct SourceState {
    /// The zstd decoder failed (truncated or corrupted stream).
    failed: Cell<bool>,
    /// Bytes of tar stream handed out so far.
    consumed: Cell<u64>,
}

impl SourceState {
    pub(crate) fn consumed(&self) -> u64 {
        self.consumed.get()
    }

    /// Maps an error met while reading the archive: the decoder's own
    /// errors are told apart from tar format errors.
    pub(crate) fn error(&self, source: io::Error, at: Option<&[u8]>) -> SnapshotError {
        let at = at.map(lossy);
        if RatioExceeded::is(&source) {
            SnapshotError::OverLimit {
                limit: Limit::Ratio(MAX_RATIO),
                path: at.unwrap_or_else(|| ".".to_owned()),
            }
        } else if self.failed.get() {
            SnapshotError::Decompress { at, source }
        } else if source.kind() == io::ErrorKind::UnexpectedEof {
            SnapshotError::Truncated {
                detail: "the tar stream ends inside an entry",
                at,
            }
        } else {
            SnapshotError::ReadArchive { at, source }
        }
    }
}

/// A zstd decoder over `input`, held to [`MAX_RATIO`].
pub(crate) fn decoder<R: Read>(input: R) -> io::Result<Decoder<R>> {
    let compressed = Rc::new(Cell::new(0));
    let counted = Counted {
        inner: input,
        count: Rc::clone(&compressed),
    };
    Ok(Decoder {
        inner: zstd::stream::read::Decoder::new(counted)?,
        compressed,
        decompressed: 0,
    })
}

/// Counts the bytes read from the compressed archive.
pub(crate) struct Counted<R> {
    inner: R,
    count: Rc<Cell<u64>>,
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.count.set(self.count.get() + n as u64);
        Ok(n)
    }
}

/// The decompressed stream; fails with [`RatioExceeded`] before handing out
/// bytes beyond the allowance plus [`MAX_RATIO`] times the input read.
pub(crate) struct Decoder<R: Read> {
    inner: zstd::stream::read::Decoder<'static, BufReader<Counted<R>>>,
    compressed: Rc<Cell<u64>>,
    decompressed: u64,
}

impl<R: Read> Read for Decoder<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.decompressed += n as u64;
        let allowed =
            RATIO_ALLOWANCE.saturating_add(self.compressed.get().saturating_mul(MAX_RATIO));
        if self.decompressed > allowed {
            return Err(io::Error::other(RatioExceeded));
        }
        Ok(n)
    }
}

/// The decompressed tar stream (from a decoder, or from a fork's decoding thread).
pub(crate) struct Source<R: Read> {
    inner: R,
    state: Rc<SourceState>,
}

impl<R: Read> Source<R> {
    pub(crate) fn new(inner: R, state: Rc<SourceState>) -> Self {
        Self { inner, state }
    }
}

impl<R: Read> Read for Source<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        // Every error of the inner reader is a decoding error: tar parsing
        // happens above this reader.
        match self.inner.read(buf) {
            Ok(n) => {
                self.state
                    .consumed
                    .set(self.state.consumed.get() + n as u64);
                Ok(n)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Err(e),
            Err(e) => {
                self.state.failed.set(true);
                Err(e)
            }
        }
    }
}

/// Long names and pax records waiting for the member they describe.
#[derive(Debug, Default)]
pub(crate) struct Pending {
    long_name: Option<Vec<u8>>,
    long_link: Option<Vec<u8>>,
    pax_path: Option<Vec<u8>>,
    pax_link: Option<Vec<u8>>,
    pax_size: Option<u64>,
    pax_sparse: bool,
}

impl Pending {
    pub(crate) fn is_empty(&self) -> bool {
        self.long_name.is_none()
            && self.long_link.is_none()
            && self.pax_path.is_none()
            && self.pax_link.is_none()
            && self.pax_size.is_none()
            && !self.pax_sparse
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    File,
    Dir,
    Symlink,
    Hardlink,
}

/// One member of the archive with its names resolved.
#[derive(Debug)]
pub(crate) struct Member {
    pub(crate) path: Vec<u8>,
    pub(crate) link: Vec<u8>,
    pub(crate) kind: Kind,
    pub(crate) size: u64,
    pub(crate) mode: u32,
    pub(crate) mtime: u64,
}

pub(crate) enum Step {
    /// A long-name or pax record, kept in [`Pending`].
    Extension,
    Member(Member),
}

/// Reads one raw tar entry: extension records are stored in `pending`,
/// anything else becomes a [`Member`] named by the records before it.
pub(crate) fn read_step<R: Read>(
    entry: &mut tar::Entry<'_, R>,
    pending: &mut Pending,
    state: &SourceState,
) -> Result<Step, SnapshotError> {
    let header_path = entry.header().path_bytes().into_owned();
    let entry_type = entry.header().entry_type();
    match entry_type {
        EntryType::GNULongName => {
            pending.long_name = Some(read_extension(entry, &header_path, state)?);
            return Ok(Step::Extension);
        }
        EntryType::GNULongLink => {
            pending.long_link = Some(read_extension(entry, &header_path, state)?);
            return Ok(Step::Extension);
        }
        EntryType::XHeader => {
            let records = read_extension(entry, &header_path, state)?;
            parse_pax(&records, pending).map_err(|reason| SnapshotError::Refused {
                entry: lossy(&header_path),
                reason,
            })?;
            return Ok(Step::Extension);
        }
        EntryType::XGlobalHeader => {
            // Defaults for the whole archive (git archive's commit id): unused.
            read_extension(entry, &header_path, state)?;
            return Ok(Step::Extension);
        }
        _ => {}
    }

    let records = std::mem::take(pending);
    let path = records
        .pax_path
        .or(records.long_name.map(trim_nul))
        .unwrap_or(header_path);
    let refuse = |reason| SnapshotError::Refused {
        entry: lossy(&path),
        reason,
    };
    let kind = match entry_type {
        EntryType::Regular | EntryType::Continuous => Kind::File,
        EntryType::Directory => Kind::Dir,
        EntryType::Symlink => Kind::Symlink,
        EntryType::Link => Kind::Hardlink,
        EntryType::Char | EntryType::Block => return Err(refuse(Refusal::Device)),
        EntryType::Fifo => return Err(refuse(Refusal::Fifo)),
        EntryType::GNUSparse => return Err(refuse(Refusal::Sparse)),
        other => {
            return Err(refuse(Refusal::UnsupportedType {
                kind: other.as_byte(),
            }));
        }
    };
    if records.pax_sparse {
        return Err(refuse(Refusal::Sparse));
    }
    let size = entry.size();
    // The tar reader positions the next header with the header's size, so a
    // different pax size would desynchronise it: refused rather than guessed.
    if records.pax_size.is_some_and(|pax| pax != size) {
        return Err(refuse(Refusal::PaxSizeOverride));
    }
    let link = records
        .pax_link
        .or(records.long_link.map(trim_nul))
        .or_else(|| entry.header().link_name_bytes().map(|l| l.into_owned()))
        .unwrap_or_default();
    let header = entry.header();
    let at = Some(path.as_slice());
    let mode = header.mode().map_err(|e| state.error(e, at))?;
    let mtime = header.mtime().map_err(|e| state.error(e, at))?;
    Ok(Step::Member(Member {
        path,
        link,
        kind,
        size,
        mode,
        mtime,
    }))
}

fn read_extension<R: Read>(
    entry: &mut tar::Entry<'_, R>,
    header_path: &[u8],
    state: &SourceState,
) -> Result<Vec<u8>, SnapshotError> {
    if entry.size() > MAX_EXTENSION {
        return Err(SnapshotError::Refused {
            entry: lossy(header_path),
            reason: Refusal::OversizeExtension,
        });
    }
    let mut data = Vec::new();
    entry
        .read_to_end(&mut data)
        .map_err(|e| state.error(e, Some(header_path)))?;
    Ok(data)
}

fn parse_pax(records: &[u8], pending: &mut Pending) -> Result<(), Refusal> {
    for record in PaxExtensions::new(records) {
        let record = record.map_err(|_| Refusal::MalformedExtension)?;
        let key = record.key_bytes();
        let value = record.value_bytes();
        match key {
            b"path" => pending.pax_path = Some(value.to_vec()),
            b"linkpath" => pending.pax_link = Some(value.to_vec()),
            b"size" => {
                let size = std::str::from_utf8(value)
                    .ok()
                    .and_then(|v| v.parse::<u64>().ok())
                    .ok_or(Refusal::MalformedExtension)?;
                pending.pax_size = Some(size);
            }
            key if key.starts_with(b"GNU.sparse.") => pending.pax_sparse = true,
            _ => {}
        }
    }
    Ok(())
}

fn trim_nul(mut name: Vec<u8>) -> Vec<u8> {
    while name.last() == Some(&0) {
        name.pop();
    }
    name
}
