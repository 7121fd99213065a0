//! A context whose guest is gone: every guest call fails as disconnected,
//! so unit tests prove that argument checks come before any guest work;
//! and the check that a contract declares its path argument.

use std::sync::Arc;

use async_trait::async_trait;
use paddock_core::ids::{RunId, SessionId};
use paddock_core::sandbox::{
    Execution, FileData, GuestError, GuestInfo, GuestOps, ProcessOutput, ProcessStarted,
    ProcessStatus, SearchResults, SnapshotExportOptions, SnapshotImportOptions, WriteOptions,
};
use paddock_core::store::RunMode;
use paddock_proto::{
    DirEntry, ExecSpec, FileStat, FsPath, ProcessInfo, SearchSpec, SnapshotPackStats,
    SnapshotUnpackStats,
};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio_util::sync::CancellationToken;

use super::{ToolContext, ToolContract};

#[derive(Debug)]
pub(crate) struct Offline;

fn gone<T>(op: &'static str) -> Result<T, GuestError> {
    Err(GuestError::Disconnected {
        op,
        reason: "offline test guest".to_owned(),
    })
}

#[async_trait]
impl GuestOps for Offline {
    async fn info(&self) -> Result<GuestInfo, GuestError> {
        gone("info")
    }
    fn is_closed(&self) -> bool {
        true
    }
    async fn exec(&self, _: ExecSpec, _: &[u8]) -> Result<Box<dyn Execution>, GuestError> {
        gone("exec")
    }
    async fn exec_stdin(&self, _: u64, _: &[u8], _: bool) -> Result<(), GuestError> {
        gone("exec_stdin")
    }
    async fn exec_signal(&self, _: u64, _: i32) -> Result<(), GuestError> {
        gone("exec_signal")
    }
    async fn port_connect(&self, _: u16) -> Result<tokio::io::DuplexStream, GuestError> {
        gone("port_connect")
    }
    async fn process_start(&self, _: ExecSpec) -> Result<ProcessStarted, GuestError> {
        gone("process_start")
    }
    async fn process_list(&self) -> Result<Vec<ProcessInfo>, GuestError> {
        gone("process_list")
    }
    async fn process_read(&self, _: u64, _: u64, _: u64) -> Result<ProcessOutput, GuestError> {
        gone("process_read")
    }
    async fn process_follow(
        &self,
        _: u64,
        _: u64,
        _: u64,
        _: u64,
    ) -> Result<ProcessOutput, GuestError> {
        gone("process_follow")
    }
    async fn process_resize(&self, _: u64, _: paddock_proto::PtySize) -> Result<(), GuestError> {
        gone("process_resize")
    }
    async fn process_write(&self, _: u64, _: &[u8], _: bool) -> Result<(), GuestError> {
        gone("process_write")
    }
    async fn process_signal(&self, _: u64, _: i32) -> Result<(), GuestError> {
        gone("process_signal")
    }
    async fn process_wait(&self, _: u64, _: Option<u64>) -> Result<ProcessStatus, GuestError> {
        gone("process_wait")
    }
    async fn file_read(&self, _: &FsPath, _: u64, _: Option<u64>) -> Result<FileData, GuestError> {
        gone("file_read")
    }
    async fn file_write(&self, _: &FsPath, _: &[u8], _: WriteOptions) -> Result<u64, GuestError> {
        gone("file_write")
    }
    async fn file_list(&self, _: &FsPath) -> Result<Vec<DirEntry>, GuestError> {
        gone("file_list")
    }
    async fn file_stat(&self, _: &FsPath) -> Result<FileStat, GuestError> {
        gone("file_stat")
    }
    async fn mkdir(&self, _: &FsPath, _: bool) -> Result<(), GuestError> {
        gone("mkdir")
    }
    async fn remove(&self, _: &FsPath, _: bool) -> Result<(), GuestError> {
        gone("remove")
    }
    async fn rename(&self, _: &FsPath, _: &FsPath) -> Result<(), GuestError> {
        gone("rename")
    }
    async fn search(&self, _: SearchSpec) -> Result<SearchResults, GuestError> {
        gone("search")
    }
    async fn snapshot_export(
        &self,
        _: SnapshotExportOptions,
        _: &mut (dyn AsyncWrite + Send + Unpin),
    ) -> Result<SnapshotPackStats, GuestError> {
        gone("snapshot_export")
    }
    async fn snapshot_import(
        &self,
        _: SnapshotImportOptions,
        _: &mut (dyn AsyncRead + Send + Unpin),
    ) -> Result<SnapshotUnpackStats, GuestError> {
        gone("snapshot_import")
    }
    async fn shutdown(&self) -> Result<(), GuestError> {
        gone("shutdown")
    }
}

pub(crate) fn offline_context() -> ToolContext {
    ToolContext {
        guest: Arc::new(Offline),
        mode: RunMode::Build,
        write_scope: None,
        session: SessionId::generate(),
        run: RunId::generate(),
        cancel: CancellationToken::new(),
        live: Default::default(),
        idempotency_key: None,
    }
}

/// Whether a schema property names one workspace path (a file or a
/// directory); lists of paths (a write scope) are not path arguments.
fn names_a_path(property: &str) -> bool {
    property == "path" || property == "cwd" || property.ends_with("_path")
}

/// What is wrong with `contract`'s path argument: a path property of its
/// schema it does not declare, a declared one that is not a string property
/// of the schema, or a declared write on a read-only tool. Empty: all right.
pub(crate) fn path_argument_problems(contract: &ToolContract) -> Vec<String> {
    let name = contract.name;
    let properties = contract.parameters["properties"]
        .as_object()
        .cloned()
        .unwrap_or_default();
    let declared = contract.path_argument.map(|a| a.name());
    let mut problems: Vec<String> = properties
        .keys()
        .filter(|p| names_a_path(p) && declared != Some(p.as_str()))
        .map(|p| format!("{name}: property {p} names a path but is not declared"))
        .collect();
    if let Some(argument) = contract.path_argument {
        let declared = argument.name();
        let is_string = properties.get(declared).is_some_and(|schema| {
            schema["type"] == "string"
                || schema["type"]
                    .as_array()
                    .is_some_and(|types| types.iter().any(|t| t == "string"))
        });
        if !is_string {
            problems.push(format!(
                "{name}: path argument {declared} is not a string property"
            ));
        }
        if matches!(argument, super::PathArgument::Writes(_))
            && contract.access != super::Access::Mutating
        {
            problems.push(format!("{name}: writes {declared} but is read-only"));
        }
    }
    problems
}
