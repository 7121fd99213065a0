//! File requests, all confined to the workspace (see [`path`]).

mod beneath;
mod glob;
mod ops;
pub mod path;
mod search;
mod stat;

use paddock_proto::{Reply, Request};

pub use path::Workspace;

use crate::error::{Handled, bad_request};

/// Runs one file request. Blocking: call it from a blocking thread.
pub fn handle(ws: &Workspace, request: Request, payload: Vec<u8>) -> Handled {
    let reply = match request {
        Request::FileRead { path, offset, len } => {
            let (size, offset, data) = ops::read(ws, &ws.normalize(path.as_bytes())?, offset, len)?;
            return Ok((Reply::FileData { size, offset }, data));
        }
        Request::FileWrite {
            path,
            mode,
            create_parents,
        } => {
            let path = ws.normalize(path.as_bytes())?;
            let bytes = ops::write(ws, &path, &payload, mode, create_parents)?;
            Reply::FileWritten { bytes }
        }
        Request::FileList { path } => Reply::DirEntries {
            entries: ops::list(ws, &ws.normalize(path.as_bytes())?)?,
        },
        Request::FileStat { path } => Reply::Stat(ops::stat(ws, &ws.normalize(path.as_bytes())?)?),
        Request::Mkdir { path, parents } => {
            ops::mkdir(ws, &ws.normalize(path.as_bytes())?, parents)?;
            Reply::Ok
        }
        Request::Remove { path, recursive } => {
            ops::remove(ws, &ws.normalize(path.as_bytes())?, recursive)?;
            Reply::Ok
        }
        Request::Rename { from, to } => {
            let from = ws.normalize(from.as_bytes())?;
            let to = ws.normalize(to.as_bytes())?;
            ops::rename(ws, &from, &to)?;
            Reply::Ok
        }
        Request::Search(spec) => {
            let outcome = search::search(ws, &spec)?;
            Reply::SearchResults {
                matches: outcome.matches,
                truncated: outcome.truncated,
            }
        }
        other => return Err(bad_request(format!("not a file request: {other:?}"))),
    };
    Ok((reply, Vec::new()))
}
