//! Building the [`ErrorInfo`] answers the guest sends, from errno values.

use nix::errno::Errno;
use paddock_proto::{ErrorCode, ErrorInfo};

/// The outcome of one request: the final reply and its payload, or an error.
pub type Handled = Result<(paddock_proto::Reply, Vec<u8>), ErrorInfo>;

pub fn bad_request(message: impl Into<String>) -> ErrorInfo {
    ErrorInfo::new(ErrorCode::BadRequest, message)
}

/// Maps an errno from an operation on an already resolved path.
pub fn errno_code(errno: Errno) -> ErrorCode {
    match errno {
        Errno::ENOENT => ErrorCode::NotFound,
        Errno::EEXIST => ErrorCode::AlreadyExists,
        Errno::EACCES | Errno::EPERM => ErrorCode::PermissionDenied,
        Errno::EROFS => ErrorCode::ReadOnly,
        Errno::ENOTDIR => ErrorCode::NotADirectory,
        Errno::EISDIR => ErrorCode::IsADirectory,
        Errno::ENOTEMPTY => ErrorCode::DirectoryNotEmpty,
        Errno::EFBIG | Errno::ENOSPC | Errno::EDQUOT => ErrorCode::TooLarge,
        Errno::ENAMETOOLONG | Errno::EINVAL => ErrorCode::BadRequest,
        _ => ErrorCode::Io,
    }
}

/// `{action} {path}: {errno}`, e.g. "removing a/b: No such file or directory".
pub fn io_error(action: &str, path: &str, errno: Errno) -> ErrorInfo {
    ErrorInfo::new(
        errno_code(errno),
        format!("{action} {path}: {}", errno.desc()),
    )
}

/// Maps an errno from resolving a path with `RESOLVE_BENEATH`: EXDEV and
/// ELOOP mean the path (or a symlink on it) leads out of the workspace.
pub fn resolve_error(path: &str, errno: Errno) -> ErrorInfo {
    match errno {
        Errno::EXDEV | Errno::ELOOP => path_escape(path),
        Errno::ENOSYS => ErrorInfo::new(
            ErrorCode::Io,
            format!("resolving {path}: the kernel lacks openat2"),
        ),
        _ => io_error("resolving", path, errno),
    }
}

pub fn path_escape(path: &str) -> ErrorInfo {
    ErrorInfo::new(
        ErrorCode::PathEscape,
        format!("{path}: path leads outside the workspace"),
    )
}

pub fn from_io(action: &str, path: &str, err: &std::io::Error) -> ErrorInfo {
    match err.raw_os_error() {
        Some(code) => io_error(action, path, Errno::from_raw(code)),
        None => ErrorInfo::new(ErrorCode::Io, format!("{action} {path}: {err}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn beneath_violations_are_path_escapes() {
        assert_eq!(resolve_error("x", Errno::EXDEV).code, ErrorCode::PathEscape);
        assert_eq!(resolve_error("x", Errno::ELOOP).code, ErrorCode::PathEscape);
        assert_eq!(resolve_error("x", Errno::ENOENT).code, ErrorCode::NotFound);
    }

    #[test]
    fn messages_name_the_path() {
        let err = io_error("removing", "a/b", Errno::EROFS);
        assert_eq!(err.code, ErrorCode::ReadOnly);
        assert!(err.message.starts_with("removing a/b: "), "{}", err.message);
    }
}
