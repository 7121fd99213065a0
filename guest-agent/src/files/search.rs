//! Search by name glob and/or literal content. The walk never follows
//! symlinks: directories are entered with `O_NOFOLLOW` relative to their
//! parent's fd, files are opened the same way.

use std::fs::File;
use std::io::Read;
use std::os::fd::{AsFd, OwnedFd};

use nix::errno::Errno;
use nix::fcntl::{AtFlags, OFlag, openat};
use nix::sys::stat::{Mode, fstat, fstatat};
use paddock_proto::{ErrorInfo, FsPath, SearchMatch, SearchSpec, escape_path};

use super::glob::Glob;
use super::ops::read_names;
use super::path::{Workspace, WsPath};
use super::stat::{is_dir, kind_of};
use crate::error::{bad_request, io_error};

/// Files larger than this are not searched by content unless asked.
const DEFAULT_MAX_FILE_BYTES: u64 = 8 << 20;
/// Bytes looked at to decide that a file is binary (contains NUL).
const BINARY_SNIFF_BYTES: usize = 8192;
/// Matching lines are cut to this many bytes.
const MAX_LINE_TEXT: usize = 400;
/// Directories nested deeper than this are not entered.
const MAX_DEPTH: usize = 256;

#[derive(Debug, Default)]
pub struct Outcome {
    pub matches: Vec<SearchMatch>,
    pub truncated: bool,
}

struct Search<'a> {
    glob: Option<Glob>,
    needle: Option<&'a [u8]>,
    max_results: usize,
    max_file_bytes: u64,
    outcome: Outcome,
}

pub fn search(ws: &Workspace, spec: &SearchSpec) -> Result<Outcome, ErrorInfo> {
    if spec.name_glob.is_none() && spec.content.is_none() {
        return Err(bad_request("search needs name_glob, content or both"));
    }
    if spec.content.as_deref() == Some("") {
        return Err(bad_request("search content must not be empty"));
    }
    let base = ws.normalize(spec.path.as_deref().unwrap_or("").as_bytes())?;
    let dir = ws.open_dir(&base)?;
    let mut search = Search {
        glob: spec.name_glob.as_deref().map(Glob::new),
        needle: spec.content.as_deref().map(str::as_bytes),
        max_results: spec.max_results as usize,
        max_file_bytes: spec.max_file_bytes.unwrap_or(DEFAULT_MAX_FILE_BYTES),
        outcome: Outcome::default(),
    };
    search
        .walk(&dir, &base, 0)
        .map_err(|(path, e)| io_error("searching", &path, e))?;
    Ok(search.outcome)
}

impl Search<'_> {
    /// Returns Ok(false) once the result limit stopped the search.
    fn walk(&mut self, dir: &OwnedFd, at: &WsPath, depth: usize) -> Result<bool, (String, Errno)> {
        let names = read_names(dir.as_fd()).map_err(|e| (at.to_string(), e))?;
        for name in names {
            let path = at.join(&name);
            let raw = match fstatat(dir, name.as_slice(), AtFlags::AT_SYMLINK_NOFOLLOW) {
                Ok(raw) => raw,
                Err(_) => continue,
            };
            // a name not in UTF-8 is matched by its display form
            let name_ok = self
                .glob
                .as_ref()
                .is_none_or(|g| g.matches(&escape_path(&name)));
            if name_ok && self.needle.is_none() && !self.push(&path, None, None) {
                return Ok(false);
            }
            if is_dir(&raw) {
                if depth < MAX_DEPTH {
                    let Ok(child) = open_nofollow(dir, &name, OFlag::O_DIRECTORY) else {
                        continue;
                    };
                    if !self.walk(&child, &path, depth + 1)? {
                        return Ok(false);
                    }
                }
            } else if name_ok
                && self.needle.is_some()
                && kind_of(&raw) == paddock_proto::FileKind::File
                && !self.search_file(dir, &name, &path)
            {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Returns false once the result limit stopped the search.
    fn search_file(&mut self, dir: &OwnedFd, name: &[u8], path: &WsPath) -> bool {
        let Some(needle) = self.needle else {
            return true;
        };
        let Some(content) = self.read_text(dir, name) else {
            return true;
        };
        for (index, line) in content.split(|b| *b == b'\n').enumerate() {
            if contains(line, needle) {
                let text = line_text(line);
                if !self.push(path, Some(index as u64 + 1), Some(text)) {
                    return false;
                }
            }
        }
        true
    }

    /// Whole content of a regular, small, non-binary file; None to skip it.
    fn read_text(&self, dir: &OwnedFd, name: &[u8]) -> Option<Vec<u8>> {
        let fd = open_nofollow(dir, name, OFlag::O_NONBLOCK | OFlag::O_NOCTTY).ok()?;
        let raw = fstat(&fd).ok()?;
        let size = u64::try_from(raw.st_size).ok()?;
        if kind_of(&raw) != paddock_proto::FileKind::File || size > self.max_file_bytes {
            return None;
        }
        let mut content = Vec::with_capacity(usize::try_from(size).ok()?);
        File::from(fd)
            .take(self.max_file_bytes)
            .read_to_end(&mut content)
            .ok()?;
        let sniff = &content[..content.len().min(BINARY_SNIFF_BYTES)];
        if sniff.contains(&0) {
            return None;
        }
        Some(content)
    }

    /// Records a match; false when the limit was already reached.
    fn push(&mut self, path: &WsPath, line: Option<u64>, text: Option<String>) -> bool {
        if self.outcome.matches.len() >= self.max_results {
            self.outcome.truncated = true;
            return false;
        }
        let raw = FsPath::from(path.relative());
        self.outcome.matches.push(SearchMatch {
            path: raw.display(),
            path_bytes: raw.bytes_b64(),
            line,
            text,
        });
        true
    }
}

fn open_nofollow(dir: &OwnedFd, name: &[u8], extra: OFlag) -> nix::Result<OwnedFd> {
    openat(
        dir,
        name,
        OFlag::O_RDONLY | OFlag::O_NOFOLLOW | OFlag::O_CLOEXEC | extra,
        Mode::empty(),
    )
}

fn contains(haystack: &[u8], needle: &[u8]) -> bool {
    haystack.windows(needle.len()).any(|w| w == needle)
}

fn line_text(line: &[u8]) -> String {
    let line = line.strip_suffix(b"\r").unwrap_or(line);
    let text = String::from_utf8_lossy(line);
    if text.len() <= MAX_LINE_TEXT {
        return text.into_owned();
    }
    let mut end = MAX_LINE_TEXT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_text_cuts_on_a_char_boundary() {
        let long = "é".repeat(300);
        let text = line_text(long.as_bytes());
        assert!(text.len() <= MAX_LINE_TEXT);
        assert!(text.chars().all(|c| c == 'é'));
        assert_eq!(line_text(b"abc\r"), "abc");
    }
}
