//! Bounded output buffer addressed by absolute offsets, so a client can
//! reattach and read from wherever it left off. stdout and stderr share
//! the buffer in the order they came; the ranges that came from stderr are
//! kept beside it, so a reader can tell them apart.

use std::collections::VecDeque;
use std::ops::Range;

/// stderr ranges one read answers at most: the read stops where the next
/// would begin, so a reply's header stays small however the streams
/// interleave.
pub const MAX_STDERR_RANGES_PER_READ: usize = 1024;

#[derive(Debug)]
pub struct OutputRing {
    bytes: VecDeque<u8>,
    capacity: usize,
    /// Absolute offset of `bytes[0]`: how much output has been dropped.
    start: u64,
    /// The absolute ranges that came from stderr, oldest first, none
    /// touching the next; those wholly dropped are forgotten. Each covers a
    /// byte at least, so there are never more than `capacity` of them.
    stderr: VecDeque<Range<u64>>,
}

/// What a read found.
#[derive(Debug, PartialEq, Eq)]
pub struct Slice {
    /// Absolute offset of `data[0]`.
    pub offset: u64,
    pub data: Vec<u8>,
    /// Bytes between the asked offset and `offset` that are no longer held.
    pub dropped: u64,
    /// The absolute ranges of `data` that came from stderr.
    pub stderr: Vec<Range<u64>>,
}

impl OutputRing {
    pub fn new(capacity: usize) -> Self {
        Self {
            bytes: VecDeque::new(),
            capacity,
            start: 0,
            stderr: VecDeque::new(),
        }
    }

    /// Offset one past the last byte ever appended.
    pub fn end(&self) -> u64 {
        self.start + self.bytes.len() as u64
    }

    /// Appends output of one stream.
    pub fn push_from(&mut self, data: &[u8], from_stderr: bool) {
        if from_stderr && !data.is_empty() {
            let start = self.end();
            let end = start + data.len() as u64;
            match self.stderr.back_mut() {
                Some(last) if last.end == start => last.end = end,
                _ => self.stderr.push_back(start..end),
            }
        }
        self.push(data);
        while self.stderr.front().is_some_and(|r| r.end <= self.start) {
            self.stderr.pop_front();
        }
    }

    pub fn push(&mut self, data: &[u8]) {
        if data.len() >= self.capacity {
            self.start = self.end() + (data.len() - self.capacity) as u64;
            self.bytes.clear();
            self.bytes.extend(&data[data.len() - self.capacity..]);
            return;
        }
        let overflow = (self.bytes.len() + data.len()).saturating_sub(self.capacity);
        self.bytes.drain(..overflow);
        self.start += overflow as u64;
        self.bytes.extend(data);
    }

    /// Up to `max` bytes from `offset` (or from the oldest byte still held).
    /// None when `offset` lies past the end.
    pub fn read(&self, offset: u64, max: usize) -> Option<Slice> {
        if offset > self.end() {
            return None;
        }
        let from = offset.max(self.start);
        let skip = usize::try_from(from - self.start).ok()?;
        let mut take = max.min(self.bytes.len() - skip);
        let mut stderr = Vec::new();
        for range in &self.stderr {
            let to = from + take as u64;
            if range.start >= to {
                break;
            }
            if range.end <= from {
                continue;
            }
            if stderr.len() == MAX_STDERR_RANGES_PER_READ {
                take = usize::try_from(range.start.max(from) - from).unwrap_or(take);
                break;
            }
            stderr.push(range.start.max(from)..range.end.min(to));
        }
        Some(Slice {
            offset: from,
            data: self.bytes.range(skip..skip + take).copied().collect(),
            dropped: from - offset,
            stderr,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_back_what_fits() {
        let mut ring = OutputRing::new(10);
        ring.push(b"hello");
        ring.push(b" you");
        assert_eq!(ring.end(), 9);
        assert_eq!(
            ring.read(0, 100),
            Some(Slice {
                offset: 0,
                data: b"hello you".to_vec(),
                dropped: 0,
                stderr: vec![]
            })
        );
        assert_eq!(
            ring.read(6, 2),
            Some(Slice {
                offset: 6,
                data: b"yo".to_vec(),
                dropped: 0,
                stderr: vec![]
            })
        );
        assert_eq!(
            ring.read(9, 2),
            Some(Slice {
                offset: 9,
                data: Vec::new(),
                dropped: 0,
                stderr: vec![]
            })
        );
        assert_eq!(ring.read(10, 2), None);
    }

    #[test]
    fn drops_oldest_bytes_and_reports_them() {
        let mut ring = OutputRing::new(4);
        ring.push(b"abc");
        ring.push(b"def");
        assert_eq!(ring.end(), 6);
        assert_eq!(
            ring.read(0, 100),
            Some(Slice {
                offset: 2,
                data: b"cdef".to_vec(),
                dropped: 2,
                stderr: vec![]
            })
        );
        assert_eq!(
            ring.read(3, 100),
            Some(Slice {
                offset: 3,
                data: b"def".to_vec(),
                dropped: 0,
                stderr: vec![]
            })
        );
    }

    #[test]
    fn a_push_larger_than_the_ring_keeps_its_tail() {
        let mut ring = OutputRing::new(3);
        ring.push(b"xy");
        ring.push(b"123456");
        assert_eq!(ring.end(), 8);
        assert_eq!(
            ring.read(1, 100),
            Some(Slice {
                offset: 5,
                data: b"456".to_vec(),
                dropped: 4,
                stderr: vec![]
            })
        );
    }

    #[test]
    fn stderr_ranges_are_kept_merged_clipped_and_dropped_with_their_bytes() {
        let mut ring = OutputRing::new(8);
        ring.push_from(b"out", false);
        ring.push_from(b"er", true);
        ring.push_from(b"r", true);
        ring.push_from(b"o", false);
        assert_eq!(ring.read(0, 100).unwrap().stderr, vec![3..6]);
        assert_eq!(ring.read(4, 1).unwrap().stderr, vec![4..5]);
        assert_eq!(ring.read(6, 100).unwrap().stderr, vec![]);
        ring.push_from(b"eeee", true);
        // 11 bytes in an 8-byte ring: the first three are gone
        let all = ring.read(0, 100).unwrap();
        assert_eq!((all.offset, all.stderr), (3, vec![3..6, 7..11]));
        ring.push_from(b"12345678", false);
        assert_eq!(ring.read(0, 100).unwrap().stderr, vec![]);
        assert!(ring.stderr.is_empty());
    }

    #[test]
    fn a_read_stops_before_one_stderr_range_too_many() {
        let mut ring = OutputRing::new(1 << 16);
        for _ in 0..MAX_STDERR_RANGES_PER_READ + 5 {
            ring.push_from(b"o", false);
            ring.push_from(b"e", true);
        }
        let slice = ring.read(0, usize::MAX).unwrap();
        assert_eq!(slice.stderr.len(), MAX_STDERR_RANGES_PER_READ);
        let last = slice.stderr.last().unwrap().clone();
        assert_eq!(slice.data.len() as u64, last.end + 1);
        let rest = ring
            .read(slice.offset + slice.data.len() as u64, usize::MAX)
            .unwrap();
        assert_eq!(rest.stderr.first().unwrap().start, last.end + 1);
    }
}
