//! Operations inside a running sandbox: exec, background processes, files, search.

use paddock_core::ids::TenantId;
use paddock_core::sandbox::{ExecEvent, Execution, FileData, SandboxId, WriteOptions};
use paddock_proto::FsPath;

use super::commands::{
    self, ExecCommand, MAX_PROCESS_READ, SearchCommand, SendSignal, StartProcess, WriteStdin,
};
use super::views::{ExecResult, ExitView, FileEntry, ProcessOutputView, ProcessView, SearchView};
use super::{ActivityGuard, SandboxService, ServiceError};
use crate::text::{Encoding, complete_utf8_len};

/// A command running for a streaming client. Dropping it kills the command;
/// the sandbox counts as in use until then.
#[derive(Debug)]
pub struct ExecStream {
    pub sandbox: SandboxId,
    pub execution: Box<dyn Execution>,
    pub encoding: Encoding,
    pub activity: ActivityGuard,
}

impl SandboxService {
    /// Runs a command to completion and answers its exit status and output.
    pub async fn exec(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        command: ExecCommand,
    ) -> Result<ExecResult, ServiceError> {
        let (spec, stdin) = command.validate(false)?;
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        let output = match live.guest.exec_output(live.with_env(spec), &stdin).await {
            Ok(output) => output,
            Err(e) => return Err(self.guest_failed(id, "exec", e).await),
        };
        let encoding = command.output_encoding;
        Ok(ExecResult {
            exit: ExitView::from(&output.exit),
            stdout: encoding.encode(&output.stdout),
            stderr: encoding.encode(&output.stderr),
            encoding,
        })
    }

    /// Starts a command whose events the caller reads as they come.
    pub async fn exec_stream(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        command: ExecCommand,
    ) -> Result<ExecStream, ServiceError> {
        let (spec, stdin) = command.validate(true)?;
        let (live, activity) = self.use_sandbox(tenant, id).await?;
        match live.guest.exec(live.with_env(spec), &stdin).await {
            Ok(execution) => Ok(ExecStream {
                sandbox: id.clone(),
                execution,
                encoding: command.output_encoding,
                activity,
            }),
            Err(e) => Err(self.guest_failed(id, "exec", e).await),
        }
    }

    /// The next event of a streamed exec, with the sandbox-level error mapping.
    pub async fn next_exec_event(
        &self,
        stream: &mut ExecStream,
    ) -> Result<Option<ExecEvent>, ServiceError> {
        match stream.execution.next_event().await {
            Ok(event) => Ok(event),
            Err(e) => Err(self.guest_failed(&stream.sandbox, "exec", e).await),
        }
    }

    pub async fn start_process(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        command: StartProcess,
    ) -> Result<ProcessView, ServiceError> {
        let spec = command.validate()?;
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        let started = match live.guest.process_start(live.with_env(spec.clone())).await {
            Ok(started) => started,
            Err(e) => return Err(self.guest_failed(id, "process_start", e).await),
        };
        let pty = spec.pty.is_some();
        let command = if spec.argv.is_empty() {
            vec![
                "/bin/sh".into(),
                "-c".into(),
                spec.shell.unwrap_or_default(),
            ]
        } else {
            spec.argv
        };
        Ok(ProcessView {
            handle: started.handle,
            pid: started.pid,
            command,
            running: true,
            exit: None,
            output_bytes: 0,
            pty,
        })
    }

    pub async fn list_processes(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
    ) -> Result<Vec<ProcessView>, ServiceError> {
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        match live.guest.process_list().await {
            Ok(list) => Ok(list.iter().map(ProcessView::from).collect()),
            Err(e) => Err(self.guest_failed(id, "process_list", e).await),
        }
    }

    /// The sandbox's egress decisions, oldest first (at most
    /// [`paddock_core::sandbox::EGRESS_LOG_LEN`]); empty with network none.
    pub async fn list_egress(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
    ) -> Result<Vec<paddock_proto::EgressDecision>, ServiceError> {
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        Ok(live
            .egress
            .as_ref()
            .map(|log| log.list())
            .unwrap_or_default())
    }

    /// Output of a background process from `offset`. In text mode a character
    /// cut at the end is left for the next read (`next_offset` says where).
    pub async fn read_process_output(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        handle: u64,
        offset: u64,
        max_bytes: Option<u64>,
        encoding: Encoding,
    ) -> Result<ProcessOutputView, ServiceError> {
        let max_bytes = max_bytes.unwrap_or(MAX_PROCESS_READ);
        if max_bytes == 0 || max_bytes > MAX_PROCESS_READ {
            return Err(ServiceError::invalid(
                "max_bytes",
                format!("expected 1 to {MAX_PROCESS_READ}"),
            ));
        }
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        let out = match live.guest.process_read(handle, offset, max_bytes).await {
            Ok(out) => out,
            Err(e) => return Err(self.guest_failed(id, "process_read", e).await),
        };
        let more_may_follow = out.running || out.data.len() as u64 == max_bytes;
        let keep = if encoding == Encoding::Text && more_may_follow {
            match complete_utf8_len(&out.data) {
                0 => out.data.len(),
                n => n,
            }
        } else {
            out.data.len()
        };
        let data = out.data.get(..keep).unwrap_or(&out.data);
        Ok(ProcessOutputView {
            offset: out.offset,
            next_offset: out.offset + keep as u64,
            dropped: out.dropped,
            running: out.running,
            exit: out.exit.as_ref().map(ExitView::from),
            data: encoding.encode(data),
            encoding,
        })
    }

    pub async fn write_process_stdin(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        handle: u64,
        command: WriteStdin,
    ) -> Result<(), ServiceError> {
        let data = command.bytes()?;
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        match live.guest.process_write(handle, &data, command.eof).await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.guest_failed(id, "process_write", e).await),
        }
    }

    pub async fn signal_process(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        handle: u64,
        command: SendSignal,
    ) -> Result<(), ServiceError> {
        let signal = command.signal.number()?;
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        match live.guest.process_signal(handle, signal).await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.guest_failed(id, "process_signal", e).await),
        }
    }

    /// Reads `[offset, offset+len)` of a file (to its end when `len` is None).
    pub async fn read_file(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        path: &FsPath,
        offset: u64,
        len: Option<u64>,
    ) -> Result<FileData, ServiceError> {
        let path = commands::file_path("path", path)?;
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        match live.guest.file_read(&path, offset, len).await {
            Ok(data) => Ok(data),
            Err(e) => Err(self.guest_failed(id, "file_read", e).await),
        }
    }

    /// Atomically replaces (or creates) a file; answers the bytes written.
    pub async fn write_file(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        path: &FsPath,
        data: &[u8],
        options: WriteOptions,
    ) -> Result<u64, ServiceError> {
        let path = commands::file_path("path", path)?;
        if options.mode.is_some_and(|m| m > 0o7777) {
            return Err(ServiceError::invalid(
                "mode",
                "expected permission bits (at most 7777 octal)",
            ));
        }
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        // the cached figure: a file write is no full walk of the tenant
        let cost = paddock_snapshot::disk::estimate(data.len() as u64);
        self.disk_use_cached(tenant)
            .await?
            .check(cost, || format!("writing {path:?}"))?;
        match live.guest.file_write(&path, data, options).await {
            Ok(written) => {
                self.charge_disk(tenant, cost);
                Ok(written)
            }
            Err(e) => Err(self.guest_failed(id, "file_write", e).await),
        }
    }

    pub async fn delete_file(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        path: &FsPath,
        recursive: bool,
    ) -> Result<(), ServiceError> {
        let path = commands::file_path("path", path)?;
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        match live.guest.remove(&path, recursive).await {
            Ok(()) => Ok(()),
            Err(e) => Err(self.guest_failed(id, "remove", e).await),
        }
    }

    pub async fn list_files(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        dir: &FsPath,
    ) -> Result<Vec<FileEntry>, ServiceError> {
        let dir = commands::file_path("dir", dir)?;
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        match live.guest.file_list(&dir).await {
            Ok(entries) => Ok(entries.iter().map(FileEntry::from).collect()),
            Err(e) => Err(self.guest_failed(id, "file_list", e).await),
        }
    }

    pub async fn search(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        command: SearchCommand,
    ) -> Result<SearchView, ServiceError> {
        let spec = command.validate()?;
        let (live, _activity) = self.use_sandbox(tenant, id).await?;
        match live.guest.search(spec).await {
            Ok(results) => Ok(SearchView {
                matches: results.matches,
                truncated: results.truncated,
            }),
            Err(e) => Err(self.guest_failed(id, "search", e).await),
        }
    }
}
