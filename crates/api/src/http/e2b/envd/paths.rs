//! E2B paths on Paddock's file operations, which reach the workspace only:
//! the E2B user's home (`/home/user`, where relative paths start) is the
//! sandbox's `/workspace`, so `/home/user/a.txt`, `/workspace/a.txt` and
//! `a.txt` name one file. Any other absolute path is refused.

use paddock_proto::FsPath;

/// The home directory E2B's SDKs and templates assume.
pub const E2B_HOME: &str = "/home/user";
/// Where the sandbox's workspace is mounted.
pub const WORKSPACE: &str = "/workspace";

/// The workspace-relative path of an E2B path, or why it has none.
pub fn workspace_path(path: &str) -> Result<FsPath, String> {
    let relative = if let Some(rest) = under(path, E2B_HOME) {
        rest
    } else if let Some(rest) = under(path, WORKSPACE) {
        rest
    } else if path.starts_with('/') {
        return Err(format!(
            "{path}: Paddock's file operations reach the workspace only ({E2B_HOME} or {WORKSPACE}, and paths relative to it)"
        ));
    } else {
        path
    };
    let relative = relative.trim_start_matches('/');
    Ok(FsPath::from(if relative.is_empty() { "." } else { relative }))
}

/// The E2B path of a workspace-relative one (under the E2B home).
pub fn e2b_path(relative: &str) -> String {
    let relative = relative.trim_start_matches("./").trim_start_matches('/');
    if relative.is_empty() || relative == "." {
        E2B_HOME.to_owned()
    } else {
        format!("{E2B_HOME}/{relative}")
    }
}

/// What follows `root` in `path` when `path` is `root` or below it.
fn under<'a>(path: &'a str, root: &str) -> Option<&'a str> {
    let rest = path.strip_prefix(root)?;
    (rest.is_empty() || rest.starts_with('/')).then_some(rest)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn home_workspace_and_relative_paths_name_the_same_file() {
        for path in ["/home/user/a/b.txt", "/workspace/a/b.txt", "a/b.txt"] {
            assert_eq!(workspace_path(path), Ok(FsPath::from("a/b.txt")), "{path}");
        }
        assert_eq!(workspace_path("/home/user"), Ok(FsPath::from(".")));
        assert_eq!(e2b_path("a/b.txt"), "/home/user/a/b.txt");
        assert_eq!(e2b_path("."), "/home/user");
    }

    #[test]
    fn other_absolute_paths_and_lookalike_prefixes_are_refused() {
        for path in ["/etc/passwd", "/home/username/x", "/workspaces/x", "/tmp"] {
            assert!(workspace_path(path).is_err(), "{path}");
        }
    }
}
