//! What `paddock sandbox run` and `paddock sandbox exec` exit with when the
//! command could not start: the same code for the same cause, whether the
//! guest said it (run) or the server passed it on (exec).

use paddock_proto::ErrorCode;

use crate::agent::EXIT_USAGE;

/// The command's timeout passed (as coreutils `timeout`).
pub const EXIT_TIMED_OUT: u8 = 124;
/// The command exists but cannot be run (not executable, a directory).
pub const EXIT_CANNOT_EXECUTE: u8 = 126;
/// No such command.
pub const EXIT_NOT_FOUND: u8 = 127;

/// What stderr says when the out-of-memory killer ended the command; `limit`
/// is the sandbox's memory limit when known.
pub fn oom_sentence(limit: Option<u64>, raise: &str) -> String {
    let limit = match limit {
        Some(bytes) if bytes % (1 << 20) == 0 => format!(" of {} MiB", bytes >> 20),
        Some(bytes) => format!(" of {bytes} bytes"),
        None => String::new(),
    };
    format!(
        "the command was killed for running out of memory: the sandbox reached its memory \
         limit{limit} (raise it with {raise})"
    )
}

/// The code for an exec the guest refused with `code` and `message`.
pub fn refused(code: ErrorCode, message: &str) -> u8 {
    match code {
        ErrorCode::SpawnFailed => {
            let lower = message.to_ascii_lowercase();
            if lower.contains("not found") || lower.contains("no such file") {
                EXIT_NOT_FOUND
            } else {
                EXIT_CANNOT_EXECUTE
            }
        }
        // The request named a bad working directory (or other bad input).
        _ => EXIT_USAGE,
    }
}

/// [`refused`] for the error code a server answered with (the API's names
/// of the guest's codes, docs/api.md).
pub fn refused_by_server(code: &str, message: &str) -> Option<u8> {
    let code = match code {
        "spawn_failed" => ErrorCode::SpawnFailed,
        "file_not_found" => ErrorCode::NotFound,
        "path_escape" => ErrorCode::PathEscape,
        "not_a_directory" => ErrorCode::NotADirectory,
        "permission_denied" => ErrorCode::PermissionDenied,
        "invalid_request" => ErrorCode::BadRequest,
        _ => return None,
    };
    Some(refused(code, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_oom_sentence_names_the_limit() {
        assert_eq!(
            oom_sentence(Some(64 << 20), "--memory"),
            "the command was killed for running out of memory: the sandbox reached its \
             memory limit of 64 MiB (raise it with --memory)"
        );
        assert!(oom_sentence(Some(1000), "x").contains("limit of 1000 bytes (raise it with x)"));
        assert!(oom_sentence(None, "x").contains("its memory limit (raise"));
    }

    #[test]
    fn run_and_exec_share_their_codes() {
        assert_eq!(refused(ErrorCode::SpawnFailed, "x: command not found"), 127);
        assert_eq!(refused(ErrorCode::SpawnFailed, "x: permission denied"), 126);
        assert_eq!(refused(ErrorCode::NotFound, "resolving nope"), 2);
        assert_eq!(
            refused_by_server("spawn_failed", "x: command not found"),
            Some(127)
        );
        assert_eq!(
            refused_by_server("spawn_failed", "permission denied"),
            Some(126)
        );
        assert_eq!(
            refused_by_server("file_not_found", "resolving nope"),
            Some(2)
        );
        assert_eq!(refused_by_server("sandbox_not_found", "no sandbox"), None);
    }
}
