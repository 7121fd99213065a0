//! A writer that hashes (sha256) and counts what passes through it.

use std::io::{self, Write};

use paddock_core::blob::BlobKey;
use sha2::{Digest, Sha256};

/// Passes writes through to `inner` while hashing them; [`HashingWriter::finish`]
/// gives the [`BlobKey`] of everything written and its length.
#[derive(Debug)]
pub struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
    written: u64,
}

impl<W: Write> HashingWriter<W> {
    pub fn new(inner: W) -> Self {
        Self {
            inner,
            hasher: Sha256::new(),
            written: 0,
        }
    }

    pub fn written(&self) -> u64 {
        self.written
    }

    pub fn get_mut(&mut self) -> &mut W {
        &mut self.inner
    }

    /// The inner writer, the key of the bytes written and their count.
    pub fn finish(self) -> (W, BlobKey, u64) {
        let digest: [u8; 32] = self.hasher.finalize().into();
        (self.inner, BlobKey::from_digest(digest), self.written)
    }
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn key_is_the_sha256_of_the_bytes_written() {
        let mut writer = HashingWriter::new(Vec::new());
        writer.write_all(b"abc").unwrap();
        let (bytes, key, len) = writer.finish();
        assert_eq!(bytes, b"abc");
        assert_eq!(len, 3);
        assert_eq!(
            key.as_str(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
    }
}
