//! Host processes must be invisible: the sandbox has its own PID namespace
//! and a fresh /proc.

use std::fs;

use crate::Battery;

pub fn run(b: &mut Battery, host_process: Option<&str>) {
    if let Some(comm) = host_process {
        b.probe(&format!("see the host process {comm:?} in /proc"), || {
            find(comm)
        });
    }
}

fn find(comm: &str) -> (bool, String) {
    let Ok(entries) = fs::read_dir("/proc") else {
        return (true, "/proc is not readable".to_string());
    };
    let mut visible = 0;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        visible += 1;
        let seen = fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
        if seen.trim_end() == comm {
            return (false, format!("VISIBLE as pid {pid} in the sandbox"));
        }
    }
    (
        true,
        format!("not among the {visible} processes the sandbox can see"),
    )
}
