//! Requests the host sends, and the events, replies and errors the guest answers with.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::{Enforcement, FsPath};

/// Host -> guest frame header. Payload use is documented per request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HostFrame {
    /// Chosen by the host, unique among its in-flight requests on this connection.
    pub id: u64,
    pub request: Request,
}

/// Guest -> host frame header.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestFrame {
    /// The id of the request this frame answers.
    pub id: u64,
    pub message: GuestMessage,
}

/// Tagged `type`, a name no Rust field can take by accident: the tag shares
/// one JSON object with the fields of the reply it carries (`Reply::Stat`'s
/// `FileStat` has a `kind`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
// One message is decoded per frame and moved, never stored in bulk: size is irrelevant.
#[allow(clippy::large_enum_variant)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum GuestMessage {
    /// A non-final event; more frames for this id follow.
    Event(Event),
    /// The final, successful answer.
    Reply(Reply),
    /// The final, failed answer.
    Error(ErrorInfo),
}

impl GuestMessage {
    pub fn is_final(&self) -> bool {
        !matches!(self, GuestMessage::Event(_))
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "snake_case")]
pub enum Request {
    /// Must be first. Reply: [`Reply::Hello`].
    Hello { version: u32 },
    /// Reply: [`Reply::Info`].
    Info,
    /// Runs a command to completion. Payload: stdin bytes when `stdin` is
    /// [`StdinMode::Payload`]. Events: [`Event::Started`], then [`Event::Output`]
    /// (payload = bytes). Reply: [`Reply::Exited`].
    Exec(ExecSpec),
    /// More stdin for a running `Exec` (`target` = its request id) started with
    /// [`StdinMode::Stream`]. Payload: bytes. `eof` closes stdin after them. Reply: [`Reply::Ok`].
    ExecStdin { target: u64, eof: bool },
    /// Sends a signal to the process group of a running `Exec`. Reply: [`Reply::Ok`].
    ExecSignal { target: u64, signal: i32 },

    /// Starts a background process. Reply: [`Reply::ProcessStarted`].
    ProcessStart(ExecSpec),
    /// Reply: [`Reply::Processes`].
    ProcessList,
    /// Reads combined output from byte `offset` (absolute since start).
    /// With `wait_ms`, a read at the end of the output of a running process
    /// waits up to that long for more output (or the exit) before answering,
    /// so a follower long-polls instead of spinning.
    /// Reply: [`Reply::ProcessOutput`], payload = bytes.
    ProcessRead {
        handle: u64,
        offset: u64,
        max_bytes: u64,
        #[serde(default)]
        wait_ms: Option<u64>,
    },
    /// Payload: bytes for the process's stdin. Reply: [`Reply::Ok`].
    ProcessWrite { handle: u64, eof: bool },
    /// Reply: [`Reply::Ok`].
    ProcessSignal { handle: u64, signal: i32 },
    /// Sets the window size of a process started with a [`PtySize`]; its
    /// foreground job gets SIGWINCH. Reply: [`Reply::Ok`].
    ProcessResize { handle: u64, size: PtySize },
    /// Waits for exit, up to `timeout_ms` when given. Reply: [`Reply::ProcessStatus`].
    ProcessWait {
        handle: u64,
        timeout_ms: Option<u64>,
    },

    /// Reply: [`Reply::FileData`], payload = bytes `[offset, offset+len)` (clamped to the file).
    FileRead {
        path: FsPath,
        offset: u64,
        len: Option<u64>,
    },
    /// Atomically replaces (or creates) the file with the payload.
    /// Reply: [`Reply::FileWritten`].
    FileWrite {
        path: FsPath,
        mode: Option<u32>,
        create_parents: bool,
    },
    /// Reply: [`Reply::DirEntries`].
    FileList { path: FsPath },
    /// Does not follow a final symlink. Reply: [`Reply::Stat`].
    FileStat { path: FsPath },
    /// Reply: [`Reply::Ok`].
    Mkdir { path: FsPath, parents: bool },
    /// Reply: [`Reply::Ok`].
    Remove { path: FsPath, recursive: bool },
    /// Reply: [`Reply::Ok`].
    Rename { from: FsPath, to: FsPath },
    /// Reply: [`Reply::SearchResults`].
    Search(SearchSpec),

    /// Packs the workspace as a zstd-compressed tar archive.
    /// Events: [`Event::Chunk`] (payload = the next archive bytes).
    /// Reply: [`Reply::SnapshotExported`].
    SnapshotExport {
        /// Patterns left out, added to the guest's default excludes
        /// (`node_modules`, `target`, ...).
        #[serde(default)]
        excludes: Vec<String>,
        /// Entry limit; None = the snapshot default.
        #[serde(default)]
        max_files: Option<u64>,
        /// Limit on file bytes before compression; None = the snapshot default.
        #[serde(default)]
        max_bytes: Option<u64>,
    },
    /// Restores an archive made by `SnapshotExport` into the workspace, which
    /// must be empty. Payload: the first archive bytes (may be empty); the
    /// rest arrives in `SnapshotChunk` requests. Reply (once the last chunk
    /// is in and the tree is restored): [`Reply::SnapshotImported`].
    SnapshotImport {
        #[serde(default)]
        max_files: Option<u64>,
        #[serde(default)]
        max_bytes: Option<u64>,
    },
    /// More archive bytes for a running `SnapshotImport` (`target` = its
    /// request id). Payload: bytes. `eof` ends the archive.
    /// Reply: [`Reply::Ok`] once the chunk is queued for the restore.
    SnapshotChunk { target: u64, eof: bool },
    /// Lets the guest send `bytes` more event payload for request `target`
    /// (flow control; see [`STREAM_WINDOW`](crate::STREAM_WINDOW)). No reply:
    /// the guest answers nothing, so credit costs no frame back.
    StreamCredit { target: u64, bytes: u64 },

    /// Opens a TCP connection to `127.0.0.1:port` inside the sandbox (see
    /// [`check_port`](crate::check_port)) and relays it. Events: [`Event::Connected`], then
    /// [`Event::Data`] (payload = bytes from the server, credit-bounded
    /// like exec output). Reply: [`Reply::Ok`] once the server closed its
    /// side, the host sent `PortClose`, or nothing moved for the idle
    /// timeout; [`ErrorCode::NotListening`] when nothing listens there.
    PortConnect {
        port: u16,
        /// How long the connect may take; None = the guest's default.
        #[serde(default)]
        connect_timeout_ms: Option<u64>,
        /// The tunnel closes after this long without a byte either way;
        /// None = the guest's default.
        #[serde(default)]
        idle_timeout_ms: Option<u64>,
    },
    /// Bytes for the server of a running `PortConnect` (`target` = its
    /// request id). Payload: bytes. `eof` ends the host's side (a TCP
    /// half-close) after them. Reply: [`Reply::Ok`] once written.
    PortWrite { target: u64, eof: bool },
    /// Closes a running `PortConnect` at once. Reply: [`Reply::Ok`].
    PortClose { target: u64 },

    /// Ends the guest (and so the sandbox). Reply: [`Reply::Ok`], then the connection closes.
    Shutdown,
    /// Detaches the guest from this host connection without ending it, so
    /// the sandbox can be saved whole (a microVM's memory) and restored
    /// behind a new connection. Refused ([`ErrorCode::Busy`]) while an
    /// `Exec` runs. Tunnels and snapshot imports end as at a close;
    /// background processes keep running. Reply: [`Reply::Ok`]; then the
    /// guest reads on from the same transport, waits out an end of stream
    /// (the host gone) for up to [`SUSPEND_RECONNECT`](crate::SUSPEND_RECONNECT)
    /// of its own time, and the next request must be `Hello` (a new host).
    Suspend,
}

impl Request {
    /// The operation's name: its `op` tag on the wire, and the `op` of logs
    /// and errors on both sides.
    pub fn name(&self) -> &'static str {
        match self {
            Request::Hello { .. } => "hello",
            Request::Info => "info",
            Request::Exec(_) => "exec",
            Request::ExecStdin { .. } => "exec_stdin",
            Request::ExecSignal { .. } => "exec_signal",
            Request::StreamCredit { .. } => "stream_credit",
            Request::ProcessStart(_) => "process_start",
            Request::ProcessList => "process_list",
            Request::ProcessRead { .. } => "process_read",
            Request::ProcessWrite { .. } => "process_write",
            Request::ProcessSignal { .. } => "process_signal",
            Request::ProcessResize { .. } => "process_resize",
            Request::ProcessWait { .. } => "process_wait",
            Request::FileRead { .. } => "file_read",
            Request::FileWrite { .. } => "file_write",
            Request::FileList { .. } => "file_list",
            Request::FileStat { .. } => "file_stat",
            Request::Mkdir { .. } => "mkdir",
            Request::Remove { .. } => "remove",
            Request::Rename { .. } => "rename",
            Request::Search(_) => "search",
            Request::SnapshotExport { .. } => "snapshot_export",
            Request::SnapshotImport { .. } => "snapshot_import",
            Request::SnapshotChunk { .. } => "snapshot_chunk",
            Request::PortConnect { .. } => "port_connect",
            Request::PortWrite { .. } => "port_write",
            Request::PortClose { .. } => "port_close",
            Request::Shutdown => "shutdown",
            Request::Suspend => "suspend",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecSpec {
    /// Program and arguments, looked up on PATH. Exactly one of `argv` / `shell` is set.
    #[serde(default)]
    pub argv: Vec<String>,
    /// A script for `/bin/sh -c`.
    #[serde(default)]
    pub shell: Option<String>,
    /// Working directory, resolved inside the workspace; default the workspace root.
    #[serde(default)]
    pub cwd: Option<String>,
    /// Added to the sandbox's base environment (PATH, HOME, LANG, TERM).
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    #[serde(default)]
    pub stdin: StdinMode,
    /// Kill the process group after this long. None = no timeout.
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// Most bytes of stdout+stderr sent back; the rest is read and dropped. None = no cap.
    #[serde(default)]
    pub output_cap: Option<u64>,
    /// Run on a new pseudo-terminal of this size (background processes
    /// only): stdin, stdout and stderr are its slave side, the process leads
    /// a new session with it as controlling terminal, and the output is what
    /// the terminal shows. Input is streamed (`ProcessWrite`) whatever
    /// `stdin` says.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pty: Option<PtySize>,
}

/// A terminal's size in character cells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct PtySize {
    pub rows: u16,
    pub cols: u16,
}

impl PtySize {
    /// Largest side accepted: beyond any real screen, small enough that a
    /// program sizing buffers by it cannot be made to allocate much.
    pub const MAX: u16 = 1000;

    /// A size with both sides in `1..=MAX`, or why not.
    pub fn check(self) -> Result<Self, String> {
        let ok = |n: u16| (1..=Self::MAX).contains(&n);
        if ok(self.rows) && ok(self.cols) {
            Ok(self)
        } else {
            Err(format!(
                "terminal size {}x{} is out of range: rows and cols must be 1..={}",
                self.rows,
                self.cols,
                Self::MAX
            ))
        }
    }
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StdinMode {
    /// stdin is /dev/null.
    #[default]
    Null,
    /// stdin is the request's payload, then end of file.
    Payload,
    /// stdin arrives in later `ExecStdin` / `ProcessWrite` requests.
    Stream,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchSpec {
    /// Directory to search under, resolved inside the workspace.
    #[serde(default)]
    pub path: Option<String>,
    /// Glob on file names (`*.rs`), matched against the last path component.
    #[serde(default)]
    pub name_glob: Option<String>,
    /// Literal text to find in file contents; matches are reported per line.
    #[serde(default)]
    pub content: Option<String>,
    /// Stop after this many matches; the reply says when it stopped early.
    pub max_results: u32,
    /// Files larger than this are not searched by content.
    #[serde(default)]
    pub max_file_bytes: Option<u64>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputStream {
    Stdout,
    Stderr,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// The command is running, with this pid inside the sandbox.
    Started { pid: u32 },
    /// Output bytes ride in the payload.
    Output { stream: OutputStream },
    /// The next bytes of a `SnapshotExport` archive ride in the payload.
    Chunk,
    /// A `PortConnect` reached its server.
    Connected,
    /// The next bytes from a `PortConnect`'s server ride in the payload.
    Data,
}

/// What a `SnapshotExport` packed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotPackStats {
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    /// File content before compression.
    pub bytes_raw: u64,
    /// Size of the archive sent.
    pub bytes_compressed: u64,
    /// Entries left out by the excludes.
    pub excluded: u64,
    /// Sockets, fifos and devices skipped.
    pub skipped: u64,
    /// sha256 of the archive sent, 64 lowercase hex digits.
    pub key: String,
}

/// What a `SnapshotImport` restored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotUnpackStats {
    pub files: u64,
    pub dirs: u64,
    pub symlinks: u64,
    pub hardlinks: u64,
    pub bytes: u64,
}

/// How a process ended.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExitInfo {
    /// Exit code when it exited normally.
    pub code: Option<i32>,
    /// Signal number when a signal ended it.
    pub signal: Option<i32>,
    /// Killed because its timeout passed.
    pub timed_out: bool,
    /// Output went past the cap and was dropped from there on.
    pub truncated: bool,
    pub duration_ms: u64,
    /// The kernel's out-of-memory killer ended it: the sandbox's memory
    /// limit was reached. Set by the host, which reads the sandbox's memory
    /// cgroup (the guest cannot); false where the backend cannot tell.
    #[serde(default)]
    pub oom_killed: bool,
}

impl ExitInfo {
    /// Shell convention: the exit code, or 128 + signal.
    pub fn shell_code(&self) -> i32 {
        match (self.code, self.signal) {
            (Some(code), _) => code,
            (None, Some(sig)) => 128 + sig,
            (None, None) => 255,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessInfo {
    pub handle: u64,
    pub pid: u32,
    pub command: Vec<String>,
    pub running: bool,
    pub exit: Option<ExitInfo>,
    /// Total output bytes produced so far (the next offset a reader would get).
    pub output_bytes: u64,
    /// Started on a pseudo-terminal (`ExecSpec::pty`).
    #[serde(default)]
    pub pty: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
#[serde(rename_all = "snake_case")]
pub enum FileKind {
    File,
    Dir,
    Symlink,
    Other,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileStat {
    pub kind: FileKind,
    pub size: u64,
    /// Permission bits (`0o7777` mask).
    pub mode: u32,
    pub mtime_ms: i64,
    /// Target of a symlink, as stored (any bytes).
    pub link_target: Option<FsPath>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirEntry {
    /// The name's bytes, UTF-8 or not: every name the directory holds is listed.
    pub name: FsPath,
    pub stat: FileStat,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "openapi", derive(utoipa::ToSchema))]
pub struct SearchMatch {
    /// Path relative to the workspace root, for display: bytes not in
    /// UTF-8 as `\xNN` ([`FsPath::display`]).
    pub path: String,
    /// The path's raw bytes in standard base64, only when it is not UTF-8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_bytes: Option<String>,
    /// 1-based line number for content matches, None for name matches.
    pub line: Option<u64>,
    /// The matching line (trimmed to a sane length) for content matches.
    pub text: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
// As with GuestMessage: one per frame, so the Info variant's size costs nothing.
#[allow(clippy::large_enum_variant)]
#[serde(tag = "reply", rename_all = "snake_case")]
pub enum Reply {
    Ok,
    Hello {
        version: u32,
        agent_version: String,
    },
    Info {
        version: u32,
        agent_version: String,
        enforcement: Enforcement,
    },
    Exited(ExitInfo),
    ProcessStarted {
        handle: u64,
        pid: u32,
    },
    Processes {
        processes: Vec<ProcessInfo>,
    },
    ProcessOutput {
        /// Offset of the first payload byte (later than asked when older output was dropped).
        offset: u64,
        /// Offset to ask for next.
        next_offset: u64,
        /// Bytes between the asked offset and `offset` that the bounded buffer no longer holds.
        dropped: u64,
        running: bool,
        exit: Option<ExitInfo>,
        /// The absolute ranges of the payload that came from stderr (the
        /// rest is stdout, or a terminal's screen).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        stderr: Vec<std::ops::Range<u64>>,
    },
    ProcessStatus {
        running: bool,
        exit: Option<ExitInfo>,
    },
    FileData {
        /// Size of the whole file.
        size: u64,
        offset: u64,
    },
    FileWritten {
        bytes: u64,
    },
    DirEntries {
        entries: Vec<DirEntry>,
    },
    Stat(FileStat),
    SearchResults {
        matches: Vec<SearchMatch>,
        /// True when `max_results` cut the search short.
        truncated: bool,
    },
    SnapshotExported(SnapshotPackStats),
    SnapshotImported(SnapshotUnpackStats),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ErrorCode {
    /// Malformed or out-of-order request.
    BadRequest,
    /// Hello with a version this guest does not speak.
    VersionMismatch,
    /// The path leaves the workspace (`..`, absolute elsewhere, symlink out).
    PathEscape,
    NotFound,
    AlreadyExists,
    PermissionDenied,
    /// The target is read-only (read-only sandbox).
    ReadOnly,
    NotADirectory,
    IsADirectory,
    DirectoryNotEmpty,
    /// A size limit was hit (payload, file, output).
    TooLarge,
    UnknownProcess,
    /// The process's stdin is closed: it was ended, or the process no longer
    /// reads it (the pipe broke).
    StdinClosed,
    /// Spawning the command failed (not found, not executable).
    SpawnFailed,
    Timeout,
    /// Nothing listens on the port a `PortConnect` asked for.
    NotListening,
    /// The guest is doing something this request must not interrupt
    /// (`Suspend` while an exec runs).
    Busy,
    Io,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorInfo {
    pub code: ErrorCode,
    pub message: String,
}

impl ErrorInfo {
    pub fn new(code: ErrorCode, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ErrorInfo {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:?}: {}", self.code, self.message)
    }
}

impl std::error::Error for ErrorInfo {}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    /// The message tag shares a JSON object with the reply's own fields, so a
    /// field named like the tag would make the frame undecodable.
    #[test]
    fn a_stat_reply_round_trips() {
        let frame = GuestFrame {
            id: 3,
            message: GuestMessage::Reply(Reply::Stat(FileStat {
                kind: FileKind::Symlink,
                size: 4,
                mode: 0o777,
                mtime_ms: 1,
                link_target: Some("/etc".into()),
            })),
        };
        let json = serde_json::to_vec(&frame).unwrap();
        assert_eq!(serde_json::from_slice::<GuestFrame>(&json).unwrap(), frame);
    }

    #[test]
    fn names_not_in_utf8_cross_the_wire_as_their_bytes() {
        let raw = FsPath::from_bytes(b"d\xfe/\xff.bin".to_vec());
        let listing = GuestFrame {
            id: 4,
            message: GuestMessage::Reply(Reply::DirEntries {
                entries: vec![DirEntry {
                    name: FsPath::from_bytes(b"\xff.bin".to_vec()),
                    stat: FileStat {
                        kind: FileKind::Symlink,
                        size: 1,
                        mode: 0o777,
                        mtime_ms: 1,
                        link_target: Some(FsPath::from_bytes(b"caf\xe9".to_vec())),
                    },
                }],
            }),
        };
        let json = serde_json::to_vec(&listing).unwrap();
        assert_eq!(
            serde_json::from_slice::<GuestFrame>(&json).unwrap(),
            listing
        );
        let read = HostFrame {
            id: 5,
            request: Request::FileRead {
                path: raw.clone(),
                offset: 0,
                len: None,
            },
        };
        let json = serde_json::to_value(&read).unwrap();
        assert_eq!(
            json["request"]["path"],
            serde_json::json!({"bytes": "ZP4v/y5iaW4="})
        );
        let back: HostFrame = serde_json::from_value(json).unwrap();
        assert_eq!(back, read);
        // a UTF-8 path is the plain string it always was
        let plain = serde_json::to_value(Request::FileList { path: "src".into() }).unwrap();
        assert_eq!(plain["path"], "src");
    }

    #[test]
    fn each_request_name_is_its_wire_tag() {
        let path = || FsPath::from("a");
        let search = SearchSpec {
            path: None,
            name_glob: Some("*".into()),
            content: None,
            max_results: 1,
            max_file_bytes: None,
        };
        let requests = [
            Request::Hello { version: 1 },
            Request::Info,
            Request::Exec(ExecSpec::default()),
            Request::ExecStdin {
                target: 1,
                eof: true,
            },
            Request::ExecSignal {
                target: 1,
                signal: 15,
            },
            Request::StreamCredit {
                target: 1,
                bytes: 1,
            },
            Request::ProcessStart(ExecSpec::default()),
            Request::ProcessList,
            Request::ProcessRead {
                handle: 1,
                offset: 0,
                max_bytes: 1,
                wait_ms: None,
            },
            Request::ProcessResize {
                handle: 1,
                size: PtySize { rows: 24, cols: 80 },
            },
            Request::ProcessWrite {
                handle: 1,
                eof: false,
            },
            Request::ProcessSignal {
                handle: 1,
                signal: 9,
            },
            Request::ProcessWait {
                handle: 1,
                timeout_ms: None,
            },
            Request::FileRead {
                path: path(),
                offset: 0,
                len: None,
            },
            Request::FileWrite {
                path: path(),
                mode: None,
                create_parents: false,
            },
            Request::FileList { path: path() },
            Request::FileStat { path: path() },
            Request::Mkdir {
                path: path(),
                parents: true,
            },
            Request::Remove {
                path: path(),
                recursive: false,
            },
            Request::Rename {
                from: path(),
                to: path(),
            },
            Request::Search(search),
            Request::SnapshotExport {
                excludes: Vec::new(),
                max_files: None,
                max_bytes: None,
            },
            Request::SnapshotImport {
                max_files: None,
                max_bytes: None,
            },
            Request::SnapshotChunk {
                target: 1,
                eof: true,
            },
            Request::PortConnect {
                port: 8000,
                connect_timeout_ms: None,
                idle_timeout_ms: None,
            },
            Request::PortWrite {
                target: 1,
                eof: false,
            },
            Request::PortClose { target: 1 },
            Request::Shutdown,
            Request::Suspend,
        ];
        let mut names = std::collections::BTreeSet::new();
        for request in &requests {
            let json = serde_json::to_value(request).unwrap();
            assert_eq!(json["op"], request.name(), "{request:?}");
            names.insert(request.name());
        }
        assert_eq!(names.len(), requests.len(), "two requests share a name");
    }
}
