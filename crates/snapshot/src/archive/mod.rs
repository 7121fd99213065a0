//! Reading an archive without restoring it: the list of its entries with
//! each file's content hash ([`read_manifest`]), and the contents of chosen
//! files ([`read_files`]).
//!
//! Both read through the checked reader a restore uses (the limits, entry
//! types, entry paths, the end-of-archive marker and the zstd checksum) and
//! make the checks a restore makes of the tree's shape (no entry twice,
//! none through a symlink or a file, hardlinks only to files listed
//! earlier, `max_files` counted as a restore counts), so an archive that a
//! restore within the same limits refuses is refused here too, with the
//! same error. Symlinks are listed with their targets as they are (a
//! restore creates them as links, whatever they point at).

mod shape;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;
use std::io::Read;

use paddock_proto::FsPath;
use sha2::{Digest, Sha256};

use crate::error::SnapshotError;
use crate::options::Limits;
use crate::unpack::paths::components;
use crate::unpack::reader::{Kind, Member, decoder};
use crate::unpack::tree::{TreeError, copy_data};
use crate::unpack::walk::{Checked, Failure, ReadLimits, Visitor, walk};
use shape::Shape;

/// File data is read through a buffer this large.
const READ_BUF: usize = 256 * 1024;

/// The sha256 of a file's content.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ContentHash([u8; 32]);

impl ContentHash {
    pub fn of(data: &[u8]) -> Self {
        Self(Sha256::digest(data).into())
    }

    pub fn from_bytes(digest: [u8; 32]) -> Self {
        Self(digest)
    }

    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Debug for ContentHash {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in &self.0[..8] {
            write!(f, "{byte:02x}")?;
        }
        f.write_str("…")
    }
}

/// One entry of an archive.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Entry {
    File {
        hash: ContentHash,
        size: u64,
        /// Mode bits as archived (a restore keeps the permission bits only).
        mode: u32,
    },
    Dir {
        mode: u32,
    },
    /// The target as archived, its bytes as they are.
    Symlink {
        target: FsPath,
    },
    /// Another name of the regular file at `target`, listed earlier.
    Hardlink {
        target: FsPath,
    },
}

/// The entries of an archive by path (`/`-separated, without `./`, any
/// bytes a name can hold), the root itself and the parents the archive
/// leaves implied not included.
pub type Manifest = BTreeMap<FsPath, Entry>;

/// Lists the entries of the zstd-compressed tar archive read from `input`,
/// reading it whole within `limits` (see the module's documentation for
/// what is refused). Names not in UTF-8 are listed by their bytes.
pub fn read_manifest<R: Read>(input: R, limits: &Limits) -> Result<Manifest, SnapshotError> {
    let mut lister = Lister::new(limits, Listing(Manifest::new()));
    read(input, limits, &mut lister)?;
    Ok(lister.keep.0)
}

/// The contents of the regular files of the archive read from `input` whose
/// paths (as [`read_manifest`] lists them) are in `wanted`, reading it whole
/// within `limits` with the same checks. Files larger than `max_file_bytes`
/// are left out, as are wanted paths that are not regular files.
pub fn read_files<R: Read>(
    input: R,
    limits: &Limits,
    wanted: &BTreeSet<FsPath>,
    max_file_bytes: u64,
) -> Result<HashMap<FsPath, Vec<u8>>, SnapshotError> {
    let chosen = Chosen {
        wanted,
        max_file_bytes,
        found: HashMap::new(),
    };
    let mut lister = Lister::new(limits, chosen);
    read(input, limits, &mut lister)?;
    Ok(lister.keep.found)
}

fn read<R: Read, K: Keep>(
    input: R,
    limits: &Limits,
    lister: &mut Lister<K>,
) -> Result<(), SnapshotError> {
    let decoder =
        decoder(input).map_err(|source| SnapshotError::Decompress { at: None, source })?;
    let read_limits = ReadLimits {
        limits: *limits,
        // One file can hold all of `max_bytes`.
        max_file_bytes: limits.max_bytes,
        // A listing writes nothing.
        max_disk_bytes: u64::MAX,
    };
    walk(decoder, &read_limits, lister).map(drop)
}

/// What a reading keeps of each member that passed the checks.
trait Keep {
    fn keep(&mut self, member: &Member, path: Vec<u8>, data: Data<'_>) -> Result<(), Failure>;
}

/// A file's content, read whole or not at all.
struct Data<'a> {
    reader: &'a mut dyn Read,
    buf: &'a mut [u8],
}

impl Data<'_> {
    fn read(self, size: u64, mut sink: impl FnMut(&[u8])) -> Result<(), TreeError> {
        copy_data(self.reader, size, self.buf, |chunk| {
            sink(chunk);
            Ok(())
        })
    }
}

/// Every entry, for [`read_manifest`].
struct Listing(Manifest);

impl Keep for Listing {
    fn keep(&mut self, member: &Member, path: Vec<u8>, data: Data<'_>) -> Result<(), Failure> {
        let name = FsPath::from_bytes(path);
        let entry = match member.kind {
            Kind::File => {
                let mut hasher = Sha256::new();
                data.read(member.size, |chunk| hasher.update(chunk))?;
                Entry::File {
                    hash: ContentHash(hasher.finalize().into()),
                    size: member.size,
                    mode: member.mode & 0o7777,
                }
            }
            Kind::Dir => Entry::Dir {
                mode: member.mode & 0o7777,
            },
            Kind::Symlink => Entry::Symlink {
                target: FsPath::from_bytes(member.link.clone()),
            },
            Kind::Hardlink => Entry::Hardlink {
                target: FsPath::from_bytes(components(&member.link)?.join(&b'/')),
            },
        };
        self.0.insert(name, entry);
        Ok(())
    }
}

/// The wanted files' contents, for [`read_files`].
struct Chosen<'w> {
    wanted: &'w BTreeSet<FsPath>,
    max_file_bytes: u64,
    found: HashMap<FsPath, Vec<u8>>,
}

impl Keep for Chosen<'_> {
    fn keep(&mut self, member: &Member, path: Vec<u8>, data: Data<'_>) -> Result<(), Failure> {
        if member.kind != Kind::File || member.size > self.max_file_bytes {
            return Ok(());
        }
        let name = FsPath::from_bytes(path);
        if !self.wanted.contains(&name) {
            return Ok(());
        }
        let mut content = Vec::new();
        data.read(member.size, |chunk| content.extend_from_slice(chunk))?;
        self.found.insert(name, content);
        Ok(())
    }
}

/// The reading's visitor: the shape checks, then what `keep` keeps.
struct Lister<K> {
    shape: Shape,
    keep: K,
    buf: Vec<u8>,
}

impl<K> Lister<K> {
    fn new(limits: &Limits, keep: K) -> Self {
        Self {
            shape: Shape::new(limits.max_files),
            keep,
            buf: vec![0; READ_BUF],
        }
    }
}

impl<K: Keep> Visitor for Lister<K> {
    fn member(&mut self, entry: Checked<'_>, reader: &mut dyn Read) -> Result<(), Failure> {
        let Checked { member, path } = entry;
        self.shape.add(path, member.kind, &member.link)?;
        let data = Data {
            reader,
            buf: &mut self.buf,
        };
        self.keep.keep(member, path.join(&b'/'), data)
    }
}
