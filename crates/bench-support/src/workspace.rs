//! The workspace the snapshot benchmarks pack and restore: small source-like
//! files (1-8 KiB) in many directories, medium files (64-256 KiB, half
//! compressible) and 6 MiB files (a third random, a third text, a third
//! partly random binary), from a fixed seed so every run writes the same.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

/// How many files of each kind a workspace gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shape {
    pub small: u64,
    pub medium: u64,
    pub large: u64,
}

impl Shape {
    /// ~200 MiB: 12,000 small files in 600 directories, 300 medium, 16 large.
    pub const FULL: Self = Self {
        small: 12_000,
        medium: 300,
        large: 16,
    };
    /// ~100 MiB: half of [`Shape::FULL`].
    pub const HALF: Self = Self {
        small: 6_000,
        medium: 150,
        large: 8,
    };
}

const WORDS: [&str; 20] = [
    "fn ", "let ", "mut ", "self", "impl ", "pub ", "struct ", "match ", "=> ", "Result<", "Ok(",
    "Err(", "return ", "{\n", "}\n", "    ", "// ", "value", "index", "buffer",
];

/// Writes the workspace of `shape` under `root`; answers (files, bytes).
pub fn build(root: &Path, shape: Shape) -> std::io::Result<(u64, u64)> {
    let mut rng = Rng::new(0x9e37_79b9_7f4a_7c15);
    let mut files = 0u64;
    let mut bytes = 0u64;
    let mut write = |path: PathBuf, data: &[u8]| -> std::io::Result<()> {
        if let Some(parent) = path.parent() {
            fs::create_dir_all(parent)?;
        }
        File::create(&path)?.write_all(data)?;
        files += 1;
        bytes += data.len() as u64;
        Ok(())
    };
    for i in 0..shape.small {
        let len = 1024 + (rng.next() % 7168) as usize;
        let mut text = String::with_capacity(len + 16);
        while text.len() < len {
            text.push_str(rng.word());
            if rng.next().is_multiple_of(9) {
                text.push_str(&format!("{}", rng.next() % 100_000));
            }
        }
        let path = root.join(format!("src/m{:03}/d{}/f{i:05}.rs", i % 120, i % 5));
        write(path, text.as_bytes())?;
    }
    for i in 0..shape.medium {
        let len = 65_536 + (rng.next() % 196_608) as usize;
        let data = if i % 2 == 0 {
            rng.bytes(len)
        } else {
            (0..len).map(|j| (j / 64 % 26) as u8 + b'a').collect()
        };
        write(root.join(format!("assets/a{}/m{i:03}.bin", i % 10)), &data)?;
    }
    for i in 0..shape.large {
        let len = 6 << 20;
        let data = match i % 3 {
            0 => rng.bytes(len),
            1 => {
                let mut text = Vec::with_capacity(len);
                while text.len() < len {
                    text.extend_from_slice(rng.word().as_bytes());
                }
                text.truncate(len);
                text
            }
            _ => {
                let mut data = vec![0u8; len];
                for chunk in data.chunks_mut(4096).step_by(3) {
                    let noise = rng.bytes(chunk.len());
                    chunk.copy_from_slice(&noise);
                }
                data
            }
        };
        write(root.join(format!("data/big{i:02}.dat")), &data)?;
    }
    Ok((files, bytes))
}

/// xorshift64: fast, deterministic, and plenty random for test data.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator from `seed` (0 is replaced: xorshift would stay at 0).
    pub fn new(seed: u64) -> Self {
        Self(if seed == 0 {
            0x9e37_79b9_7f4a_7c15
        } else {
            seed
        })
    }

    #[allow(clippy::should_implement_trait)]
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// `len` incompressible bytes.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        let mut out = Vec::with_capacity(len + 8);
        while out.len() < len {
            out.extend_from_slice(&self.next().to_le_bytes());
        }
        out.truncate(len);
        out
    }

    fn word(&mut self) -> &'static str {
        WORDS[(self.next() % WORDS.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_same_seed_gives_the_same_bytes() {
        assert_eq!(Rng::new(7).bytes(100), Rng::new(7).bytes(100));
        assert_ne!(Rng::new(7).bytes(100), Rng::new(8).bytes(100));
        assert_eq!(Rng::new(7).bytes(13).len(), 13);
    }

    #[test]
    fn a_zero_seed_still_moves() {
        let mut rng = Rng::new(0);
        assert_ne!(rng.next(), 0);
    }

    #[test]
    fn a_small_shape_writes_what_it_reports() -> std::io::Result<()> {
        let scratch = tempfile::tempdir()?;
        let dir = scratch.path().join("ws");
        let shape = Shape {
            small: 7,
            medium: 2,
            large: 0,
        };
        let (files, bytes) = build(&dir, shape)?;
        let mut on_disk = (0u64, 0u64);
        let mut stack = vec![dir.clone()];
        while let Some(d) = stack.pop() {
            for entry in fs::read_dir(&d)? {
                let entry = entry?;
                if entry.file_type()?.is_dir() {
                    stack.push(entry.path());
                } else {
                    on_disk.0 += 1;
                    on_disk.1 += entry.metadata()?.len();
                }
            }
        }
        assert_eq!((files, bytes), on_disk);
        assert_eq!(files, 9);
        Ok(())
    }
}
