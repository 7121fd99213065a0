//! Where the built binaries are: next to the running executable, in the
//! profile directory (`target/<triple>/<profile>/`).

use std::path::{Path, PathBuf};

/// The profile directory of the running executable. Test executables live in
/// `<profile>/deps/`, binaries directly in `<profile>/`.
pub fn profile_dir() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_else(|e| panic!("current_exe: {e}"));
    let dir = exe
        .parent()
        .unwrap_or_else(|| panic!("{} has no parent directory", exe.display()));
    if dir.file_name().is_some_and(|n| n == "deps") {
        dir.parent().unwrap_or(dir).to_path_buf()
    } else {
        dir.to_path_buf()
    }
}

/// Path of a binary built in the same profile. Panics with the build command
/// when it is missing: the tests never build it themselves (cargo holds its lock).
pub fn binary(name: &str) -> PathBuf {
    let var = format!("PADDOCK_TEST_{}", name.to_uppercase().replace('-', "_"));
    if let Some(p) = std::env::var_os(&var) {
        return PathBuf::from(p);
    }
    let path = profile_dir().join(name);
    assert_exists(&path, name);
    path
}

fn assert_exists(path: &Path, name: &str) {
    assert!(
        path.is_file(),
        "{name} not found at {}: build it first (`cargo build -p paddock -p paddock-guest`, \
         or run scripts/test.sh, which does)",
        path.display()
    );
}

/// The `paddock` CLI.
pub fn paddock() -> PathBuf {
    binary("paddock")
}

/// The guest agent; `paddock` finds it next to itself, the tests only check it is built.
pub fn paddock_guest() -> PathBuf {
    binary("paddock-guest")
}

/// Copies a binary of this profile (a test helper like `paddock-test-probe`)
/// into `workspace` and returns its path inside the sandbox.
pub fn stage_in_workspace(workspace: &Path, name: &str) -> String {
    use std::os::unix::fs::PermissionsExt;
    let dest = workspace.join(name);
    std::fs::copy(binary(name), &dest)
        .unwrap_or_else(|e| panic!("copying {name} into {}: {e}", workspace.display()));
    std::fs::set_permissions(&dest, std::fs::Permissions::from_mode(0o755))
        .unwrap_or_else(|e| panic!("chmod {}: {e}", dest.display()));
    format!("/workspace/{name}")
}
