//! Every protocol operation as a typed method ([`GuestOps`] for [`GuestClient`]).

use async_trait::async_trait;
use paddock_core::sandbox::{
    Execution, FileData, GuestError, GuestInfo, GuestOps, ProcessOutput, ProcessStarted,
    ProcessStatus, SearchResults, SnapshotExportOptions, SnapshotImportOptions, WriteOptions,
};
use paddock_proto::{
    DirEntry, ExecSpec, FileStat, FsPath, MAX_PAYLOAD_LEN, ProcessInfo, PtySize, Reply, Request,
    SearchSpec, SnapshotPackStats, SnapshotUnpackStats, StdinMode,
};
use tokio::io::{AsyncRead, AsyncWrite};

use super::{ExecStream, GuestClient};

pub(super) fn unexpected(op: &'static str, reply: &Reply) -> GuestError {
    let got = match reply {
        Reply::Ok => "ok",
        Reply::Hello { .. } => "hello",
        Reply::Info { .. } => "info",
        Reply::Exited(_) => "exited",
        Reply::ProcessStarted { .. } => "process_started",
        Reply::Processes { .. } => "processes",
        Reply::ProcessOutput { .. } => "process_output",
        Reply::ProcessStatus { .. } => "process_status",
        Reply::FileData { .. } => "file_data",
        Reply::FileWritten { .. } => "file_written",
        Reply::DirEntries { .. } => "dir_entries",
        Reply::Stat(_) => "stat",
        Reply::SearchResults { .. } => "search_results",
        Reply::SnapshotExported(_) => "snapshot_exported",
        Reply::SnapshotImported(_) => "snapshot_imported",
    };
    GuestError::UnexpectedReply {
        op,
        got: got.to_owned(),
    }
}

impl GuestClient {
    /// Detaches the guest from this connection without ending it
    /// ([`Request::Suspend`]): its processes keep running and it waits for
    /// the next host's Hello. Refused while an exec runs.
    pub async fn suspend(&self) -> Result<(), GuestError> {
        self.call_ok(Request::Suspend, &[]).await
    }

    pub(super) async fn call_ok(&self, request: Request, payload: &[u8]) -> Result<(), GuestError> {
        let op = request.name();
        match self.call(request, payload).await? {
            (Reply::Ok, _) => Ok(()),
            (other, _) => Err(unexpected(op, &other)),
        }
    }

    /// Sends `data` in frames the guest accepts; `eof` rides on the last one.
    async fn send_chunked(
        &self,
        data: &[u8],
        eof: bool,
        request: impl Fn(bool) -> Request + Send + Sync,
    ) -> Result<(), GuestError> {
        let mut chunks = data.chunks(MAX_PAYLOAD_LEN as usize).peekable();
        if chunks.peek().is_none() {
            return if eof {
                self.call_ok(request(true), &[]).await
            } else {
                Ok(())
            };
        }
        while let Some(chunk) = chunks.next() {
            let last = chunks.peek().is_none();
            self.call_ok(request(eof && last), chunk).await?;
        }
        Ok(())
    }

    /// [`GuestOps::exec`] with the concrete stream type.
    pub async fn exec_stream(
        &self,
        spec: ExecSpec,
        stdin: &[u8],
    ) -> Result<ExecStream, GuestError> {
        let payload = if spec.stdin == StdinMode::Payload {
            stdin
        } else {
            &[]
        };
        let oom_before = self.oom_kills().await;
        let call = self.start(Request::Exec(spec), payload).await?;
        Ok(ExecStream::new(call, self.clone(), oom_before))
    }
}

impl GuestClient {
    async fn read_process(
        &self,
        handle: u64,
        offset: u64,
        max_bytes: u64,
        wait_ms: Option<u64>,
    ) -> Result<ProcessOutput, GuestError> {
        let request = Request::ProcessRead {
            handle,
            offset,
            max_bytes,
            wait_ms,
        };
        match self.call(request, &[]).await? {
            (
                Reply::ProcessOutput {
                    offset,
                    next_offset,
                    dropped,
                    running,
                    exit,
                    stderr,
                },
                data,
            ) => Ok(ProcessOutput {
                offset,
                next_offset,
                dropped,
                running,
                exit,
                data,
                stderr,
            }),
            (other, _) => Err(unexpected("process_read", &other)),
        }
    }
}

#[async_trait]
impl GuestOps for GuestClient {
    async fn info(&self) -> Result<GuestInfo, GuestError> {
        match self.call(Request::Info, &[]).await? {
            (
                Reply::Info {
                    version,
                    agent_version,
                    enforcement,
                },
                _,
            ) => Ok(GuestInfo {
                version,
                agent_version,
                enforcement,
            }),
            (other, _) => Err(unexpected("info", &other)),
        }
    }

    fn is_closed(&self) -> bool {
        GuestClient::is_closed(self)
    }

    async fn exec(&self, spec: ExecSpec, stdin: &[u8]) -> Result<Box<dyn Execution>, GuestError> {
        Ok(Box::new(self.exec_stream(spec, stdin).await?))
    }

    async fn exec_stdin(&self, target: u64, data: &[u8], eof: bool) -> Result<(), GuestError> {
        self.send_chunked(data, eof, |eof| Request::ExecStdin { target, eof })
            .await
    }

    async fn exec_signal(&self, target: u64, signal: i32) -> Result<(), GuestError> {
        self.call_ok(Request::ExecSignal { target, signal }, &[])
            .await
    }

    async fn process_start(&self, spec: ExecSpec) -> Result<ProcessStarted, GuestError> {
        match self.call(Request::ProcessStart(spec), &[]).await? {
            (Reply::ProcessStarted { handle, pid }, _) => Ok(ProcessStarted { handle, pid }),
            (other, _) => Err(unexpected("process_start", &other)),
        }
    }

    async fn process_list(&self) -> Result<Vec<ProcessInfo>, GuestError> {
        match self.call(Request::ProcessList, &[]).await? {
            (Reply::Processes { processes }, _) => Ok(processes),
            (other, _) => Err(unexpected("process_list", &other)),
        }
    }

    async fn process_read(
        &self,
        handle: u64,
        offset: u64,
        max_bytes: u64,
    ) -> Result<ProcessOutput, GuestError> {
        self.read_process(handle, offset, max_bytes, None).await
    }

    async fn process_follow(
        &self,
        handle: u64,
        offset: u64,
        max_bytes: u64,
        wait_ms: u64,
    ) -> Result<ProcessOutput, GuestError> {
        self.read_process(handle, offset, max_bytes, Some(wait_ms))
            .await
    }

    async fn process_resize(&self, handle: u64, size: PtySize) -> Result<(), GuestError> {
        self.call_ok(Request::ProcessResize { handle, size }, &[])
            .await
    }

    async fn process_write(&self, handle: u64, data: &[u8], eof: bool) -> Result<(), GuestError> {
        self.send_chunked(data, eof, |eof| Request::ProcessWrite { handle, eof })
            .await
    }

    async fn process_signal(&self, handle: u64, signal: i32) -> Result<(), GuestError> {
        self.call_ok(Request::ProcessSignal { handle, signal }, &[])
            .await
    }

    async fn process_wait(
        &self,
        handle: u64,
        timeout_ms: Option<u64>,
    ) -> Result<ProcessStatus, GuestError> {
        match self
            .call(Request::ProcessWait { handle, timeout_ms }, &[])
            .await?
        {
            (Reply::ProcessStatus { running, exit }, _) => Ok(ProcessStatus { running, exit }),
            (other, _) => Err(unexpected("process_wait", &other)),
        }
    }

    async fn file_read(
        &self,
        path: &FsPath,
        offset: u64,
        len: Option<u64>,
    ) -> Result<FileData, GuestError> {
        let request = Request::FileRead {
            path: path.clone(),
            offset,
            len,
        };
        match self.call(request, &[]).await? {
            (Reply::FileData { size, offset }, data) => Ok(FileData { size, offset, data }),
            (other, _) => Err(unexpected("file_read", &other)),
        }
    }

    async fn file_write(
        &self,
        path: &FsPath,
        data: &[u8],
        options: WriteOptions,
    ) -> Result<u64, GuestError> {
        let request = Request::FileWrite {
            path: path.clone(),
            mode: options.mode,
            create_parents: options.create_parents,
        };
        match self.call(request, data).await? {
            (Reply::FileWritten { bytes }, _) => Ok(bytes),
            (other, _) => Err(unexpected("file_write", &other)),
        }
    }

    async fn file_list(&self, path: &FsPath) -> Result<Vec<DirEntry>, GuestError> {
        let request = Request::FileList { path: path.clone() };
        match self.call(request, &[]).await? {
            (Reply::DirEntries { entries }, _) => Ok(entries),
            (other, _) => Err(unexpected("file_list", &other)),
        }
    }

    async fn file_stat(&self, path: &FsPath) -> Result<FileStat, GuestError> {
        let request = Request::FileStat { path: path.clone() };
        match self.call(request, &[]).await? {
            (Reply::Stat(stat), _) => Ok(stat),
            (other, _) => Err(unexpected("file_stat", &other)),
        }
    }

    async fn mkdir(&self, path: &FsPath, parents: bool) -> Result<(), GuestError> {
        let request = Request::Mkdir {
            path: path.clone(),
            parents,
        };
        self.call_ok(request, &[]).await
    }

    async fn remove(&self, path: &FsPath, recursive: bool) -> Result<(), GuestError> {
        let request = Request::Remove {
            path: path.clone(),
            recursive,
        };
        self.call_ok(request, &[]).await
    }

    async fn rename(&self, from: &FsPath, to: &FsPath) -> Result<(), GuestError> {
        let request = Request::Rename {
            from: from.clone(),
            to: to.clone(),
        };
        self.call_ok(request, &[]).await
    }

    async fn search(&self, spec: SearchSpec) -> Result<SearchResults, GuestError> {
        match self.call(Request::Search(spec), &[]).await? {
            (Reply::SearchResults { matches, truncated }, _) => {
                Ok(SearchResults { matches, truncated })
            }
            (other, _) => Err(unexpected("search", &other)),
        }
    }

    async fn snapshot_export(
        &self,
        options: SnapshotExportOptions,
        sink: &mut (dyn AsyncWrite + Send + Unpin),
    ) -> Result<SnapshotPackStats, GuestError> {
        self.export_snapshot(options, sink).await
    }

    async fn snapshot_import(
        &self,
        options: SnapshotImportOptions,
        reader: &mut (dyn AsyncRead + Send + Unpin),
    ) -> Result<SnapshotUnpackStats, GuestError> {
        self.import_snapshot(options, reader).await
    }

    async fn port_connect(&self, port: u16) -> Result<tokio::io::DuplexStream, GuestError> {
        self.open_port(port).await
    }

    async fn shutdown(&self) -> Result<(), GuestError> {
        self.call_ok(Request::Shutdown, &[]).await
    }
}
