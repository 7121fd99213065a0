//! A CLI's stdout cut into lines, with a bound: a line longer than
//! [`MAX_LINE`] is dropped (counted) rather than held, so a CLI that
//! prints without end cannot grow the host's memory.

/// Longest line kept (a tool result the CLI echoes can be large).
pub(crate) const MAX_LINE: usize = 8 << 20;

#[derive(Debug, Default)]
pub(crate) struct Lines {
    partial: Vec<u8>,
    /// The line being read is over the bound: skip to its end.
    skipping: bool,
    /// Lines dropped for their length.
    pub(crate) dropped: u64,
}

impl Lines {
    /// The whole lines `data` completes, without their newline.
    pub(crate) fn push(&mut self, data: &[u8]) -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        let mut rest = data;
        while let Some(at) = rest.iter().position(|&b| b == b'\n') {
            let (piece, after) = rest.split_at(at);
            if self.skipping {
                self.skipping = false;
            } else if self.partial.len() + piece.len() > MAX_LINE {
                self.dropped += 1;
                self.partial.clear();
            } else {
                self.partial.extend_from_slice(piece);
                out.push(std::mem::take(&mut self.partial));
            }
            rest = &after[1..];
        }
        if !self.skipping {
            if self.partial.len() + rest.len() > MAX_LINE {
                self.dropped += 1;
                self.partial.clear();
                self.skipping = true;
            } else {
                self.partial.extend_from_slice(rest);
            }
        }
        out
    }

    /// What is left after the output ended (a last line without newline).
    pub(crate) fn finish(&mut self) -> Option<Vec<u8>> {
        let last = std::mem::take(&mut self.partial);
        (!self.skipping && !last.is_empty()).then_some(last)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_split_across_pieces_come_out_whole() {
        let mut lines = Lines::default();
        assert!(lines.push(b"{\"a\"").is_empty());
        assert_eq!(
            lines.push(b":1}\n{\"b\":2}\n{"),
            vec![b"{\"a\":1}".to_vec(), b"{\"b\":2}".to_vec()]
        );
        assert_eq!(lines.finish(), Some(b"{".to_vec()));
    }

    #[test]
    fn an_endless_line_is_dropped_and_the_next_one_kept() {
        let mut lines = Lines::default();
        let chunk = vec![b'x'; MAX_LINE / 2 + 1];
        assert!(lines.push(&chunk).is_empty());
        assert!(lines.push(&chunk).is_empty());
        assert!(lines.push(&chunk).is_empty());
        assert_eq!(lines.push(b"tail\nnext\n"), vec![b"next".to_vec()]);
        assert_eq!(lines.dropped, 1);
        assert_eq!(lines.finish(), None);
    }
}
