//! Bounded output buffer addressed by absolute offsets, so a client can
//! reattach and read from wherever it left off.

use std::collections::VecDeque;

#[derive(Debug)]
pub struct OutputRing {
    bytes: VecDeque<u8>,
    capacity: usize,
    /// Absolute offset of `bytes[0]`: how much output has been dropped.
    start: u64,
}

/// What a read found.
#[derive(Debug, PartialEq, Eq)]
pub struct Slice {
    /// Absolute offset of `data[0]`.
    pub offset: u64,
    pub data: Vec<u8>,
    /// Bytes between the asked offset and `offset` that are no longer held.
    pub dropped: u64,
}

impl OutputRing {
    pub fn new(capacity: usize) -> Self {
        Self {
            bytes: VecDeque::new(),
            capacity,
            start: 0,
        }
    }

    /// Offset one past the last byte ever appended.
    pub fn end(&self) -> u64 {
        self.start + self.bytes.len() as u64
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
        let take = max.min(self.bytes.len() - skip);
        Some(Slice {
            offset: from,
            data: self.bytes.range(skip..skip + take).copied().collect(),
            dropped: from - offset,
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
                dropped: 0
            })
        );
        assert_eq!(
            ring.read(6, 2),
            Some(Slice {
                offset: 6,
                data: b"yo".to_vec(),
                dropped: 0
            })
        );
        assert_eq!(
            ring.read(9, 2),
            Some(Slice {
                offset: 9,
                data: Vec::new(),
                dropped: 0
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
                dropped: 2
            })
        );
        assert_eq!(
            ring.read(3, 100),
            Some(Slice {
                offset: 3,
                data: b"def".to_vec(),
                dropped: 0
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
                dropped: 4
            })
        );
    }
}
