//! Nested user namespaces through the unshare(1) tool, the way a script would
//! try it (the raw clone/clone3/unshare syscalls are in `syscalls`).

use std::path::Path;
use std::process::{Command, Stdio};

use crate::Battery;

const UNSHARE_PATHS: &[&str] = &["/usr/bin/unshare", "/bin/unshare"];

pub fn run(b: &mut Battery) {
    let tool = UNSHARE_PATHS.iter().find(|p| Path::new(p).exists());
    for args in [&["--user", "true"][..], &["--map-root-user", "true"][..]] {
        let name = format!("nested user namespace via unshare {}", args.join(" "));
        b.probe(&name, || match tool {
            None => (true, "unshare(1) is not present in the sandbox".to_string()),
            Some(tool) => run_tool(tool, args),
        });
    }
}

fn run_tool(tool: &str, args: &[&str]) -> (bool, String) {
    let out = Command::new(tool).args(args).stdin(Stdio::null()).output();
    match out {
        Ok(o) if o.status.success() => (false, "SUCCEEDED".to_string()),
        Ok(o) => (
            true,
            format!(
                "failed ({}): {}",
                o.status,
                String::from_utf8_lossy(&o.stderr).trim()
            ),
        ),
        Err(e) => (true, format!("could not run: {e}")),
    }
}
