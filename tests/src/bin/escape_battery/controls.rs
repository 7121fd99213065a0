//! Things that must work in a sandbox. If one fails, the sandbox is broken in
//! a way that could make probes look blocked for the wrong reason.

use std::fs;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};

use crate::Battery;
use crate::child::{Outcome, in_child};
use crate::scratch;

pub fn run(b: &mut Battery) {
    b.control("runs in its own user namespace, not as host root", uid_map);
    b.control("write and read back a file in /workspace", || {
        round_trip("/workspace/.paddock-battery-control")
    });
    b.control("write and read back a file in /tmp", || {
        round_trip("/tmp/.paddock-battery-control")
    });
    b.control(
        "create the scratch directories in /tmp",
        || match scratch::ensure() {
            Ok(()) => (true, scratch::ROOT.to_string()),
            Err(e) => (false, e.to_string()),
        },
    );
    b.control("fork and wait for a child", || match in_child(|| Ok(())) {
        Outcome::Exited(0) => (true, "child exited 0".to_string()),
        other => (false, format!("{other:?}")),
    });
    b.control("TCP over the sandbox's own loopback", loopback);
}

/// The first line of /proc/self/uid_map: "inside outside count".
pub fn uid_map() -> (bool, String) {
    let map = fs::read_to_string("/proc/self/uid_map").unwrap_or_default();
    let fields: Vec<&str> = map.split_whitespace().collect();
    match fields.as_slice() {
        ["0", "0", "4294967295", ..] => container_user(),
        ["0", outside, ..] if *outside != "0" => {
            (true, format!("uid 0 maps to host uid {outside}"))
        }
        _ => (false, format!("unexpected uid_map: {}", map.trim())),
    }
}

/// No user namespace: only a container sandbox (docker, gVisor) passes,
/// running as an unprivileged uid with no capability under the guest as
/// PID 1; anything else is taken for the host.
fn container_user() -> (bool, String) {
    let uid = nix::unistd::geteuid().as_raw();
    let status = fs::read_to_string("/proc/self/status").unwrap_or_default();
    let cap_eff = status
        .lines()
        .find_map(|l| l.strip_prefix("CapEff:"))
        .map(str::trim)
        .unwrap_or("?");
    let init = fs::read("/proc/1/cmdline").unwrap_or_default();
    let init = String::from_utf8_lossy(&init).replace('\0', " ");
    let guest_is_init = init.starts_with("/opt/paddock/paddock-guest ");
    if uid != 0 && cap_eff.trim_start_matches('0').is_empty() && guest_is_init {
        (
            true,
            format!("container: uid {uid}, no capabilities, the guest is PID 1"),
        )
    } else {
        (
            false,
            format!("identity map, uid {uid}, CapEff {cap_eff}, PID 1 {init:?}: this is the host"),
        )
    }
}

fn round_trip(path: &str) -> (bool, String) {
    let data = b"paddock battery control";
    let result = fs::write(path, data).and_then(|()| fs::read(path));
    let _ = fs::remove_file(path);
    match result {
        Ok(read) if read == data => (true, path.to_string()),
        Ok(_) => (false, format!("{path}: read back different bytes")),
        Err(e) => (false, format!("{path}: {e}")),
    }
}

fn loopback() -> (bool, String) {
    let attempt = || -> std::io::Result<()> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))?;
        let addr = listener.local_addr()?;
        let mut client = TcpStream::connect(addr)?;
        let (mut server, _) = listener.accept()?;
        client.write_all(b"ping")?;
        let mut buf = [0u8; 4];
        server.read_exact(&mut buf)?;
        if &buf == b"ping" {
            Ok(())
        } else {
            Err(std::io::Error::other("bytes changed in transit"))
        }
    };
    match attempt() {
        Ok(()) => (true, "127.0.0.1 round trip".to_string()),
        Err(e) => (false, e.to_string()),
    }
}
