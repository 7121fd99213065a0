//! Picks a line range out of a file that arrives in chunks, numbering the
//! lines and stopping at an output cap. Pure, so it is tested without a guest.

use std::fmt::Write;

/// Why selection stopped before the end of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stop {
    /// The asked range is complete.
    RangeEnd,
    /// The output cap was reached; `next` is the first line not shown.
    Cap { next: u64 },
}

#[derive(Debug)]
pub(crate) struct LineSelector {
    start: u64,
    end: Option<u64>,
    output_cap: usize,
    line_cap: usize,
    /// Number of the line being assembled (1-based).
    line: u64,
    /// Kept bytes of that line (at most `line_cap`) and its full length.
    partial: Vec<u8>,
    partial_len: usize,
    out: String,
    shown: Option<(u64, u64)>,
    stop: Option<Stop>,
    /// Every newline fed and whether the last byte was one, to count the
    /// file's lines even past the selection.
    newlines: u64,
    ends_in_newline: bool,
    fed_any: bool,
}

impl LineSelector {
    /// Lines `start..=end` (1-based), each cut at `line_cap` bytes, at most
    /// `output_cap` bytes of rendered text in all.
    pub(crate) fn new(start: u64, end: Option<u64>, output_cap: usize, line_cap: usize) -> Self {
        Self {
            start,
            end,
            output_cap,
            line_cap,
            line: 1,
            partial: Vec::new(),
            partial_len: 0,
            out: String::new(),
            shown: None,
            stop: None,
            newlines: 0,
            ends_in_newline: false,
            fed_any: false,
        }
    }

    /// Takes the next bytes of the file; true once nothing more is needed.
    pub(crate) fn feed(&mut self, mut data: &[u8]) -> bool {
        if let Some(last) = data.last() {
            self.newlines += data.iter().filter(|b| **b == b'\n').count() as u64;
            self.ends_in_newline = *last == b'\n';
            self.fed_any = true;
        }
        while self.stop.is_none() && !data.is_empty() {
            let (piece, complete) = match data.iter().position(|b| *b == b'\n') {
                Some(i) => (&data[..i], true),
                None => (data, false),
            };
            let keep = self
                .line_cap
                .saturating_sub(self.partial.len())
                .min(piece.len());
            if self.line >= self.start {
                self.partial.extend_from_slice(&piece[..keep]);
            }
            self.partial_len += piece.len();
            data = &data[(piece.len() + usize::from(complete)).min(data.len())..];
            if complete {
                self.end_line();
            }
        }
        self.stop.is_some()
    }

    /// The file ended: a last line without a newline still counts.
    pub(crate) fn finish(&mut self) {
        if self.stop.is_none() && self.partial_len > 0 {
            self.end_line();
        }
    }

    fn end_line(&mut self) {
        let number = self.line;
        if self.end.is_some_and(|end| number > end) {
            self.stop = Some(Stop::RangeEnd);
            return;
        }
        if number >= self.start {
            let mut text = String::from_utf8_lossy(&self.partial).into_owned();
            if text.ends_with('\r') {
                text.pop();
            }
            if self.partial_len > self.partial.len() {
                let _ = write!(text, " [... line cut, {} bytes in all]", self.partial_len);
            }
            let rendered = format!("{number:>6}\t{text}\n");
            if !self.out.is_empty() && self.out.len() + rendered.len() > self.output_cap {
                self.stop = Some(Stop::Cap { next: number });
                return;
            }
            self.out.push_str(&rendered);
            self.shown = Some((self.shown.map_or(number, |(first, _)| first), number));
        }
        self.partial.clear();
        self.partial_len = 0;
        self.line += 1;
        if self.end.is_some_and(|end| self.line > end) {
            self.stop = Some(Stop::RangeEnd);
        }
    }

    /// Lines in everything fed; the file's line count once all of it was fed.
    pub(crate) fn total_lines(&self) -> u64 {
        self.newlines + u64::from(self.fed_any && !self.ends_in_newline)
    }

    pub(crate) fn shown(&self) -> Option<(u64, u64)> {
        self.shown
    }

    pub(crate) fn stop(&self) -> Option<Stop> {
        self.stop
    }

    pub(crate) fn into_text(self) -> String {
        self.out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn select(chunks: &[&[u8]], start: u64, end: Option<u64>, cap: usize) -> LineSelector {
        let mut lines = LineSelector::new(start, end, cap, 8);
        for chunk in chunks {
            if lines.feed(chunk) {
                return lines;
            }
        }
        lines.finish();
        lines
    }

    #[test]
    fn numbers_every_line_across_chunk_borders() {
        let lines = select(&[b"one\ntw", b"o\r\nthree"], 1, None, 1000);
        assert_eq!(lines.shown(), Some((1, 3)));
        assert_eq!(lines.stop(), None);
        assert_eq!(lines.total_lines(), 3);
        assert_eq!(
            lines.into_text(),
            "     1\tone\n     2\ttwo\n     3\tthree\n"
        );
    }

    #[test]
    fn a_range_stops_reading_at_its_end() {
        let lines = select(&[b"a\nb\nc\nd\ne\n"], 2, Some(3), 1000);
        assert_eq!(lines.stop(), Some(Stop::RangeEnd));
        assert_eq!(lines.shown(), Some((2, 3)));
        assert_eq!(lines.total_lines(), 5);
        assert_eq!(lines.into_text(), "     2\tb\n     3\tc\n");
    }

    #[test]
    fn the_output_cap_stops_at_a_whole_line_and_says_where_to_go_on() {
        // Each rendered line is 9 bytes ("     1\ta\n"); a cap of 20 fits two.
        let lines = select(&[b"a\nb\nc\nd\n"], 1, None, 20);
        assert_eq!(lines.stop(), Some(Stop::Cap { next: 3 }));
        assert_eq!(lines.shown(), Some((1, 2)));
    }

    #[test]
    fn long_lines_are_cut_with_their_length() {
        let lines = select(&[b"0123456789abcdef\nok\n"], 1, None, 1000);
        assert_eq!(
            lines.into_text(),
            "     1\t01234567 [... line cut, 16 bytes in all]\n     2\tok\n"
        );
    }

    #[test]
    fn a_start_past_the_end_shows_nothing_and_counts_the_lines() {
        let lines = select(&[b"a\nb\n"], 5, None, 1000);
        assert_eq!(lines.shown(), None);
        assert_eq!(lines.total_lines(), 2);
    }
}
