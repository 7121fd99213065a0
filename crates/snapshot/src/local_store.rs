//! [`LocalBlobStore`]: blobs as files in a local directory.
//!
//! Layout: `<root>/<first two hex digits>/<key>` for blobs and
//! `<root>/tmp/<uuid>.part` for writes in progress; a tenant's part
//! ([`BlobStore::tenant`]) is the same layout under `<root>/tenants/<tenant>`,
//! made on its first write, and its reads fall back to `<root>` (where
//! checkpoints stored every tenant's files before parts existed). A write goes to a temp
//! file, is fsynced, renamed to its digest's name and the directory fsynced:
//! a blob is visible only once complete, and two concurrent puts of the same
//! content both rename a complete, identical file onto the same name.
//!
//! A blob's written time is its file's mtime, set to "now" by every commit.
//! Commits (the rename) hold `<root>/gc.lock` shared and
//! [`BlobStore::delete_if_written_before`] holds it exclusive while it checks
//! the mtime and unlinks, so a collection never removes a blob that a commit
//! put back after the check (flock: also between processes on this host).

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use nix::fcntl::{Flock, FlockArg};
use paddock_core::blob::{BlobError, BlobInfo, BlobKey, BlobReader, BlobStore, BlobWriter};
use paddock_core::ids::TenantId;

use crate::hashing::HashingWriter;

const TMP_DIR: &str = "tmp";
const GC_LOCK: &str = "gc.lock";
const WRITE_BUF: usize = 1024 * 1024;

const TENANTS_DIR: &str = "tenants";

/// A [`BlobStore`] over a local directory.
#[derive(Debug, Clone)]
pub struct LocalBlobStore {
    /// This part's directory: the whole store's, or a tenant's.
    root: PathBuf,
    /// The whole store's directory; for a tenant's part, also where its
    /// reads fall back to.
    base: PathBuf,
}

impl LocalBlobStore {
    /// Opens (creating if needed) a store rooted at `root`.
    pub fn open(root: impl Into<PathBuf>) -> io::Result<Self> {
        let root = root.into();
        fs::create_dir_all(root.join(TMP_DIR))?;
        Ok(Self {
            base: root.clone(),
            root,
        })
    }

    /// `tenant`'s part, not created yet (its first write makes it).
    pub fn tenant_part(&self, tenant: &TenantId) -> Self {
        Self {
            root: self.base.join(TENANTS_DIR).join(tenant.as_str()),
            base: self.base.clone(),
        }
    }

    /// Whether this is a tenant's part (whose reads fall back to the base).
    fn is_part(&self) -> bool {
        self.root != self.base
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Holds the store's collection lock, shared (commits) or exclusive
    /// (collection), until the returned guard is dropped.
    fn gc_lock(&self, exclusive: bool) -> io::Result<Flock<File>> {
        if self.is_part() {
            fs::create_dir_all(&self.root)?;
        }
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(self.root.join(GC_LOCK))?;
        let arg = if exclusive {
            FlockArg::LockExclusive
        } else {
            FlockArg::LockShared
        };
        Flock::lock(file, arg).map_err(|(_, errno)| io::Error::from(errno))
    }

    /// Where the blob `key` lives (whether or not it exists).
    pub fn blob_path(&self, key: &BlobKey) -> PathBuf {
        blob_path_in(&self.root, key)
    }

    /// Removes temp files of writes abandoned by a crash, older than `age`
    /// (young ones may belong to a write in progress); returns how many.
    pub fn remove_stale_temps(&self, age: Duration) -> io::Result<u64> {
        let now = SystemTime::now();
        let mut removed = 0;
        let entries = match fs::read_dir(self.root.join(TMP_DIR)) {
            Ok(entries) => entries,
            // a tenant's part that was never written
            Err(e) if e.kind() == io::ErrorKind::NotFound && self.is_part() => return Ok(0),
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            let modified = entry.metadata()?.modified()?;
            if now.duration_since(modified).unwrap_or_default() > age {
                match fs::remove_file(entry.path()) {
                    Ok(()) => removed += 1,
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(e) => return Err(e),
                }
            }
        }
        Ok(removed)
    }
}

impl BlobStore for LocalBlobStore {
    fn writer(&self) -> Result<Box<dyn BlobWriter>, BlobError> {
        let tmp = self
            .root
            .join(TMP_DIR)
            .join(format!("{}.part", uuid::Uuid::new_v4().simple()));
        let create = || File::options().write(true).create_new(true).open(&tmp);
        let file = match create() {
            // a tenant's part is made on its first write
            Err(e) if e.kind() == io::ErrorKind::NotFound && self.is_part() => {
                fs::create_dir_all(self.root.join(TMP_DIR)).and_then(|()| create())
            }
            other => other,
        }
        .map_err(|source| BlobError::Begin { source })?;
        Ok(Box::new(LocalBlobWriter {
            out: Some(HashingWriter::new(BufWriter::with_capacity(
                WRITE_BUF, file,
            ))),
            tmp,
            store: self.clone(),
        }))
    }

    fn open(&self, key: &BlobKey) -> Result<BlobReader, BlobError> {
        let opened = match File::open(self.blob_path(key)) {
            // stored before tenants had parts
            Err(e) if e.kind() == io::ErrorKind::NotFound && self.is_part() => {
                File::open(blob_path_in(&self.base, key))
            }
            other => other,
        };
        let file = opened.map_err(|source| match source.kind() {
            io::ErrorKind::NotFound => BlobError::NotFound { key: key.clone() },
            _ => BlobError::Open {
                key: key.clone(),
                source,
            },
        })?;
        let size = file
            .metadata()
            .map_err(|source| BlobError::Open {
                key: key.clone(),
                source,
            })?
            .len();
        Ok(BlobReader {
            size,
            reader: Box::new(file),
        })
    }

    fn size(&self, key: &BlobKey) -> Result<Option<u64>, BlobError> {
        match fs::metadata(self.blob_path(key)) {
            Ok(meta) => Ok(Some(meta.len())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(BlobError::Stat {
                key: key.clone(),
                source,
            }),
        }
    }

    fn delete(&self, key: &BlobKey) -> Result<bool, BlobError> {
        match fs::remove_file(self.blob_path(key)) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(BlobError::Delete {
                key: key.clone(),
                source,
            }),
        }
    }

    fn delete_if_written_before(
        &self,
        key: &BlobKey,
        cutoff: SystemTime,
    ) -> Result<bool, BlobError> {
        let delete_err = |source| BlobError::Delete {
            key: key.clone(),
            source,
        };
        let path = self.blob_path(key);
        let _lock = self.gc_lock(true).map_err(delete_err)?;
        let written = match fs::symlink_metadata(&path).and_then(|meta| meta.modified()) {
            Ok(written) => written,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
            Err(source) => return Err(delete_err(source)),
        };
        if written >= cutoff {
            return Ok(false);
        }
        match fs::remove_file(&path) {
            Ok(()) => Ok(true),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
            Err(source) => Err(delete_err(source)),
        }
    }

    fn list(&self) -> Result<Vec<BlobInfo>, BlobError> {
        let list_err = |source| BlobError::List { source };
        let mut blobs = Vec::new();
        let shards = match fs::read_dir(&self.root) {
            Ok(shards) => shards,
            // a tenant's part that was never written
            Err(e) if e.kind() == io::ErrorKind::NotFound && self.is_part() => return Ok(blobs),
            Err(source) => return Err(list_err(source)),
        };
        for shard in shards {
            let shard = shard.map_err(list_err)?;
            let shard_name = shard.file_name();
            let Some(prefix) = shard_name.to_str().filter(|name| name.len() == 2) else {
                continue;
            };
            if !shard.file_type().map_err(list_err)?.is_dir() {
                continue;
            }
            for blob in fs::read_dir(shard.path()).map_err(list_err)? {
                let blob = blob.map_err(list_err)?;
                // Anything that is not a well-formed key in its right shard is not a blob.
                let Some(key) = blob
                    .file_name()
                    .to_str()
                    .and_then(|name| BlobKey::parse(name).ok())
                    .filter(|key| key.as_str().starts_with(prefix))
                else {
                    continue;
                };
                match blob.metadata() {
                    Ok(meta) if meta.is_file() => blobs.push(BlobInfo {
                        key,
                        size: meta.len(),
                        written: meta.modified().map_err(list_err)?,
                    }),
                    Ok(_) => {}
                    // Deleted while listing.
                    Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                    Err(source) => return Err(list_err(source)),
                }
            }
        }
        blobs.sort_by(|a, b| a.key.cmp(&b.key));
        Ok(blobs)
    }

    /// Everything under this part's directory: blobs, writes in progress
    /// and the lock file ([`crate::disk::usage`]).
    fn disk_usage(&self) -> Result<u64, BlobError> {
        crate::disk::usage(&self.root).map_err(|source| BlobError::List { source })
    }

    fn tenant(&self, tenant: &TenantId) -> Arc<dyn BlobStore> {
        Arc::new(self.tenant_part(tenant))
    }

    fn tenants(&self) -> Result<Vec<TenantId>, BlobError> {
        let list_err = |source| BlobError::List { source };
        let mut tenants = Vec::new();
        let dirs = match fs::read_dir(self.base.join(TENANTS_DIR)) {
            Ok(dirs) => dirs,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(tenants),
            Err(source) => return Err(list_err(source)),
        };
        for dir in dirs {
            let dir = dir.map_err(list_err)?;
            // anything that is not a tenant's directory is not a part
            if let Some(tenant) = dir
                .file_name()
                .to_str()
                .and_then(|name| TenantId::parse(name).ok())
                && dir.file_type().map_err(list_err)?.is_dir()
            {
                tenants.push(tenant);
            }
        }
        tenants.sort();
        Ok(tenants)
    }
}

/// Where the blob `key` lives under `root`.
fn blob_path_in(root: &Path, key: &BlobKey) -> PathBuf {
    let key = key.as_str();
    root.join(&key[..2]).join(key)
}

#[derive(Debug)]
struct LocalBlobWriter {
    out: Option<HashingWriter<BufWriter<File>>>,
    tmp: PathBuf,
    store: LocalBlobStore,
}

impl LocalBlobWriter {
    fn out(&mut self) -> io::Result<&mut HashingWriter<BufWriter<File>>> {
        self.out
            .as_mut()
            .ok_or_else(|| io::Error::other("blob writer already committed"))
    }
}

impl Write for LocalBlobWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.out()?.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.out()?.flush()
    }
}

impl BlobWriter for LocalBlobWriter {
    fn commit(mut self: Box<Self>) -> Result<BlobInfo, BlobError> {
        let out = self.out.take().ok_or_else(|| BlobError::Put {
            source: io::Error::other("blob writer already committed"),
        })?;
        let (buffered, key, size) = out.finish();
        let commit_err = |source| BlobError::Commit {
            key: key.clone(),
            source,
        };
        let file = buffered
            .into_inner()
            .map_err(|e| commit_err(e.into_error()))?;
        // A collection that already saw an identical blob without a row
        // must see this one as new (see the module's comment).
        let written = SystemTime::now();
        file.set_modified(written).map_err(commit_err)?;
        file.sync_all().map_err(commit_err)?;
        drop(file);
        let path = self.store.blob_path(&key);
        let shard = path.parent().unwrap_or(&self.store.root);
        fs::create_dir_all(shard).map_err(commit_err)?;
        {
            let _lock = self.store.gc_lock(false).map_err(commit_err)?;
            fs::rename(&self.tmp, &path).map_err(commit_err)?;
        }
        File::open(shard)
            .and_then(|dir| dir.sync_all())
            .map_err(commit_err)?;
        Ok(BlobInfo { key, size, written })
    }
}

impl Drop for LocalBlobWriter {
    fn drop(&mut self) {
        // After a commit the temp file has been renamed away: NotFound.
        if let Err(error) = fs::remove_file(&self.tmp)
            && error.kind() != io::ErrorKind::NotFound
        {
            tracing::warn!(path = %self.tmp.display(), %error, "could not remove an abandoned blob temp file");
        }
    }
}
