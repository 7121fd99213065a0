//! Builds `src/no_automount.c` into a shared object in OUT_DIR, which the
//! crate embeds. cargo cannot make it: every target artifact of this
//! workspace is linked with crt-static, which rules out a cdylib.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let source = "src/no_automount.c";
    println!("cargo:rerun-if-changed={source}");
    let out = PathBuf::from(env::var_os("OUT_DIR").ok_or("cargo sets OUT_DIR")?);
    let library = out.join("no_automount.so");
    let compiler = cc::Build::new().get_compiler();
    let status = Command::new(compiler.path())
        .args([
            "-shared",
            "-fPIC",
            "-nostdlib",
            "-O2",
            "-Wall",
            "-Werror",
            "-fno-stack-protector",
            "-Wl,-z,noexecstack",
            "-Wl,-soname,paddock-gvisor-compat.so",
            "-o",
        ])
        .arg(&library)
        .arg(source)
        .status()
        .map_err(|e| format!("running {}: {e}", compiler.path().display()))?;
    if !status.success() {
        return Err(format!("compiling {source} failed: {status}").into());
    }
    Ok(())
}
