//! E2B paths on Paddock's file operations, which reach the workspace only.
//! The E2B user's home, where relative paths start and commands run, is
//! the sandbox's `/workspace` on Paddock; E2B's own home, `/home/user`, is
//! taken as another name of it (code written for E2B names it), so
//! `/home/user/a.txt`, `/workspace/a.txt` and `a.txt` name one file. Answers
//! name `/workspace`, the path commands in the sandbox see. Any other
//! absolute path is refused.

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
    Ok(FsPath::from(if relative.is_empty() {
        "."
    } else {
        relative
    }))
}

/// The E2B path of a workspace-relative one (under the workspace).
pub fn e2b_path(relative: &str) -> String {
    let relative = relative.trim_start_matches("./").trim_start_matches('/');
    if relative.is_empty() || relative == "." {
        WORKSPACE.to_owned()
    } else {
        format!("{WORKSPACE}/{relative}")
    }
}

/// A command's working directory: E2B's home as the workspace; anything
/// else as given (a command may run anywhere its sandbox lets it).
pub fn workspace_cwd(cwd: &str) -> String {
    match under(cwd, E2B_HOME) {
        Some(rest) => format!("{WORKSPACE}{rest}"),
        None => cwd.to_owned(),
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
        assert_eq!(e2b_path("a/b.txt"), "/workspace/a/b.txt");
        assert_eq!(e2b_path("."), "/workspace");
        assert_eq!(workspace_cwd("/home/user/w d"), "/workspace/w d");
        assert_eq!(workspace_cwd("/home/user"), "/workspace");
        assert_eq!(workspace_cwd("/tmp"), "/tmp");
        assert_eq!(workspace_cwd("/home/username"), "/home/username");
    }

    #[test]
    fn other_absolute_paths_and_lookalike_prefixes_are_refused() {
        for path in ["/etc/passwd", "/home/username/x", "/workspaces/x", "/tmp"] {
            assert!(workspace_path(path).is_err(), "{path}");
        }
    }
}
