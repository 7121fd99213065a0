//! Runs `paddock-escape-battery` inside a real sandbox and asserts that every
//! escape it tries is blocked and that the host is unharmed afterwards.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::fs;
use std::io::ErrorKind;
use std::net::TcpListener;
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::{SocketAddr, UnixListener};
use std::time::Duration;

use paddock_tests::bins::stage_in_workspace;
use paddock_tests::cli::SandboxRun;
use paddock_tests::escape::{
    Canaries, MEMORY, PIDS, REQUIRED_PROBES, TMP, host_addresses, stray_battery_files,
};
use paddock_tests::host::{HostSnapshot, require_root, wait_for_no_leaks};
use paddock_tests::report::Report;

#[test]
fn every_escape_is_blocked_and_the_host_is_unharmed() {
    require_root();
    let before = HostSnapshot::capture();
    let core_pattern = fs::read("/proc/sys/kernel/core_pattern").unwrap();
    let ws = tempfile::tempdir().unwrap();
    let battery = stage_in_workspace(ws.path(), "paddock-escape-battery");
    let canaries = Canaries::plant();
    let listener = TcpListener::bind("0.0.0.0:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let abstract_name = format!("paddock-battery-{}", std::process::id());
    let unix =
        UnixListener::bind_addr(&SocketAddr::from_abstract_name(abstract_name.as_bytes()).unwrap())
            .unwrap();
    unix.set_nonblocking(true).unwrap();

    let mut argv = vec![
        battery,
        "--tcp-port".into(),
        port.to_string(),
        "--abstract-socket".into(),
        abstract_name,
        "--pids-limit".into(),
        PIDS.to_string(),
        "--memory-limit".into(),
        MEMORY.to_string(),
    ];
    for c in canaries.paths() {
        argv.extend(["--canary".into(), c.display().to_string()]);
    }
    // This test process itself must be invisible inside.
    let own_comm = fs::read_to_string("/proc/self/comm").unwrap();
    argv.extend(["--host-process".into(), own_comm.trim_end().to_owned()]);
    for a in host_addresses() {
        argv.extend(["--host-addr".into(), a.to_string()]);
    }
    let (json, run) = SandboxRun::new(argv)
        .workspace(ws.path())
        .memory(MEMORY)
        .pids(PIDS)
        .tmp_size(TMP)
        .timeout_secs(300)
        .deadline(Duration::from_secs(400))
        .run_json();
    assert_eq!(
        run.code(),
        0,
        "the battery itself failed: {}\n{}",
        json.stderr,
        json.stdout
    );
    let report: Report = serde_json::from_str(&json.stdout)
        .unwrap_or_else(|e| panic!("no report from the battery ({e}):\n{}", json.stdout));

    let failed_controls: Vec<String> = report
        .failed_controls()
        .iter()
        .map(|c| format!("  {}: {}", c.name, c.detail))
        .collect();
    assert!(
        failed_controls.is_empty(),
        "the sandbox is broken, probes cannot be trusted:\n{}",
        failed_controls.join("\n")
    );
    let names: Vec<&str> = report.probes.iter().map(|p| p.name.as_str()).collect();
    let missing: Vec<&&str> = REQUIRED_PROBES
        .iter()
        .filter(|r| !names.iter().any(|n| n.starts_with(**r)))
        .collect();
    assert!(
        missing.is_empty(),
        "probes missing from the report: {missing:?}"
    );
    assert!(
        report
            .probes
            .iter()
            .any(|p| p.name.starts_with("read host canary")),
        "no canary probe ran"
    );
    let escapes: Vec<String> = report
        .not_blocked()
        .iter()
        .map(|p| format!("  {}: {}", p.name, p.detail))
        .collect();
    assert!(
        escapes.is_empty(),
        "{} of {} escape attempts were NOT blocked:\n{}",
        escapes.len(),
        report.probes.len(),
        escapes.join("\n")
    );

    // The host is unharmed.
    canaries.assert_unchanged();
    assert_eq!(
        fs::read("/proc/sys/kernel/core_pattern").unwrap(),
        core_pattern,
        "the host's core_pattern changed"
    );
    match listener.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the host TCP listener was reached: {other:?}"),
    }
    match unix.accept() {
        Err(e) if e.kind() == ErrorKind::WouldBlock => {}
        other => panic!("the host abstract socket was reached: {other:?}"),
    }
    let strays = stray_battery_files();
    assert!(strays.is_empty(), "battery files on the host: {strays:?}");
    let leaks = wait_for_no_leaks(&before, Duration::from_secs(10));
    assert!(leaks.is_empty(), "left behind on the host: {leaks:#?}");
}
