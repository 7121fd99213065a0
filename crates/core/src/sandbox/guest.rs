//! The guest agent's operations, as every backend's handle offers them.

use std::fmt::Debug;

use async_trait::async_trait;
use paddock_proto::{
    DirEntry, Enforcement, ExecSpec, ExitInfo, FileStat, FsPath, OutputStream, ProcessInfo,
    PtySize, SearchMatch, SearchSpec, SnapshotPackStats, SnapshotUnpackStats,
};
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncWrite};

use super::GuestError;

/// What the guest reports about itself and the jail it runs in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct GuestInfo {
    pub version: u32,
    pub agent_version: String,
    pub enforcement: Enforcement,
}

/// One event of a running command; [`ExecEvent::Exited`] is always the last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ExecEvent {
    Started { pid: u32 },
    Output { stream: OutputStream, data: Vec<u8> },
    Exited(ExitInfo),
}

/// A command running through [`GuestOps::exec`]. Dropping it before the
/// command exited kills the command's process group.
#[async_trait]
pub trait Execution: Send + Debug {
    /// The request id: the `target` of [`GuestOps::exec_stdin`] and [`GuestOps::exec_signal`].
    fn id(&self) -> u64;

    /// The next event; `Ok(None)` after [`ExecEvent::Exited`] was returned.
    /// Cancel-safe: dropping the future loses no event, so it can sit in a
    /// `select!` loop. Events not yet read are buffered on the host.
    async fn next_event(&mut self) -> Result<Option<ExecEvent>, GuestError>;
}

/// A command run to completion with its output collected.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOutput {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
    pub exit: ExitInfo,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessStarted {
    pub handle: u64,
    pub pid: u32,
}

/// A slice of a background process's combined output.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProcessOutput {
    /// Offset of `data[0]` (later than asked when older output was dropped).
    pub offset: u64,
    /// Offset to ask for next.
    pub next_offset: u64,
    /// Bytes between the asked offset and `offset` no longer kept.
    pub dropped: u64,
    pub running: bool,
    pub exit: Option<ExitInfo>,
    pub data: Vec<u8>,
    /// The absolute ranges of `data` that came from stderr.
    pub stderr: Vec<std::ops::Range<u64>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProcessStatus {
    pub running: bool,
    pub exit: Option<ExitInfo>,
}

/// A byte range of a file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileData {
    /// Size of the whole file.
    pub size: u64,
    pub offset: u64,
    pub data: Vec<u8>,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct WriteOptions {
    /// Permission bits of the file; None keeps the guest's default.
    pub mode: Option<u32>,
    /// Create missing parent directories.
    pub create_parents: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SearchResults {
    pub matches: Vec<SearchMatch>,
    /// `max_results` cut the search short.
    pub truncated: bool,
}

/// How [`GuestOps::snapshot_export`] packs the workspace.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotExportOptions {
    /// Patterns left out, added to the guest's default excludes.
    #[serde(default)]
    pub excludes: Vec<String>,
    /// Entry limit; None = the snapshot default.
    #[serde(default)]
    pub max_files: Option<u64>,
    /// File bytes before compression; None = the snapshot default.
    #[serde(default)]
    pub max_bytes: Option<u64>,
}

/// Limits of [`GuestOps::snapshot_import`]; None = the snapshot defaults.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SnapshotImportOptions {
    #[serde(default)]
    pub max_files: Option<u64>,
    #[serde(default)]
    pub max_bytes: Option<u64>,
}

/// Every operation of the guest protocol. Paths are relative to /workspace
/// (or absolute under it); the guest refuses any that leave it.
#[async_trait]
pub trait GuestOps: Send + Sync + Debug {
    async fn info(&self) -> Result<GuestInfo, GuestError>;

    /// The connection to the guest is known to be gone (the guest closed
    /// it or the sandbox died), so every call would fail; answered without
    /// a round trip. False says nothing more than "not closed yet".
    fn is_closed(&self) -> bool;

    /// Starts a command and streams its events. `stdin` is sent as the
    /// command's whole stdin when `spec.stdin` is `Payload`, and ignored otherwise.
    async fn exec(&self, spec: ExecSpec, stdin: &[u8]) -> Result<Box<dyn Execution>, GuestError>;

    /// More stdin for a running exec started with `StdinMode::Stream`;
    /// `eof` closes its stdin after `data`.
    async fn exec_stdin(&self, target: u64, data: &[u8], eof: bool) -> Result<(), GuestError>;

    /// Signals the process group of a running exec.
    async fn exec_signal(&self, target: u64, signal: i32) -> Result<(), GuestError>;

    async fn process_start(&self, spec: ExecSpec) -> Result<ProcessStarted, GuestError>;
    async fn process_list(&self) -> Result<Vec<ProcessInfo>, GuestError>;
    async fn process_read(
        &self,
        handle: u64,
        offset: u64,
        max_bytes: u64,
    ) -> Result<ProcessOutput, GuestError>;
    /// [`GuestOps::process_read`] that, at the end of a running process's
    /// output, waits up to `wait_ms` (the guest caps it at a minute) for more
    /// output or the exit before answering: a follower's long poll.
    async fn process_follow(
        &self,
        handle: u64,
        offset: u64,
        max_bytes: u64,
        wait_ms: u64,
    ) -> Result<ProcessOutput, GuestError>;
    /// Resizes the terminal of a process started with `ExecSpec::pty`.
    async fn process_resize(&self, handle: u64, size: PtySize) -> Result<(), GuestError>;
    async fn process_write(&self, handle: u64, data: &[u8], eof: bool) -> Result<(), GuestError>;
    async fn process_signal(&self, handle: u64, signal: i32) -> Result<(), GuestError>;
    async fn process_wait(
        &self,
        handle: u64,
        timeout_ms: Option<u64>,
    ) -> Result<ProcessStatus, GuestError>;

    /// Reads `[offset, offset+len)` of a file (to its end when `len` is None).
    /// Paths are bytes ([`FsPath`]: a name need not be UTF-8).
    async fn file_read(
        &self,
        path: &FsPath,
        offset: u64,
        len: Option<u64>,
    ) -> Result<FileData, GuestError>;
    /// Atomically replaces (or creates) a file; returns the bytes written.
    async fn file_write(
        &self,
        path: &FsPath,
        data: &[u8],
        options: WriteOptions,
    ) -> Result<u64, GuestError>;
    async fn file_list(&self, path: &FsPath) -> Result<Vec<DirEntry>, GuestError>;
    /// Does not follow a final symlink.
    async fn file_stat(&self, path: &FsPath) -> Result<FileStat, GuestError>;
    async fn mkdir(&self, path: &FsPath, parents: bool) -> Result<(), GuestError>;
    async fn remove(&self, path: &FsPath, recursive: bool) -> Result<(), GuestError>;
    async fn rename(&self, from: &FsPath, to: &FsPath) -> Result<(), GuestError>;
    async fn search(&self, spec: SearchSpec) -> Result<SearchResults, GuestError>;

    /// Packs the workspace (tar + zstd) and writes the archive to `sink` as
    /// it arrives; the sink is flushed but not shut down.
    async fn snapshot_export(
        &self,
        options: SnapshotExportOptions,
        sink: &mut (dyn AsyncWrite + Send + Unpin),
    ) -> Result<SnapshotPackStats, GuestError>;

    /// Restores the archive read from `reader` into the workspace, which must
    /// be empty; the guest refuses hostile entries, naming them.
    async fn snapshot_import(
        &self,
        options: SnapshotImportOptions,
        reader: &mut (dyn AsyncRead + Send + Unpin),
    ) -> Result<SnapshotUnpackStats, GuestError>;

    /// Opens a TCP connection to `127.0.0.1:port` inside the sandbox,
    /// through the guest (so it works without any network in the sandbox),
    /// and answers the host's end of it once the server accepted. Reading
    /// the stream gives the server's bytes; writing sends it bytes;
    /// shutting the write side down half-closes; dropping it closes the
    /// connection in the sandbox. Refused with `ErrorCode::NotListening`
    /// when nothing listens there.
    async fn port_connect(&self, port: u16) -> Result<tokio::io::DuplexStream, GuestError>;

    /// Ends the guest, and with it the sandbox's processes.
    async fn shutdown(&self) -> Result<(), GuestError>;

    /// Runs a command to completion and collects its output.
    async fn exec_output(&self, spec: ExecSpec, stdin: &[u8]) -> Result<ExecOutput, GuestError> {
        let mut execution = self.exec(spec, stdin).await?;
        let mut out = ExecOutput::default();
        while let Some(event) = execution.next_event().await? {
            match event {
                ExecEvent::Started { .. } => {}
                ExecEvent::Output {
                    stream: OutputStream::Stdout,
                    data,
                } => out.stdout.extend_from_slice(&data),
                ExecEvent::Output {
                    stream: OutputStream::Stderr,
                    data,
                } => out.stderr.extend_from_slice(&data),
                ExecEvent::Exited(exit) => out.exit = exit,
            }
        }
        Ok(out)
    }
}
