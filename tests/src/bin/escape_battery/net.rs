//! Network escapes: the host's loopback and addresses, abstract unix sockets
//! (scoped by network namespace), raw and packet sockets, extra interfaces.

use std::fs;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpStream};
use std::os::linux::net::SocketAddrExt;
use std::os::unix::net::UnixStream;
use std::time::Duration;

use crate::Battery;
use crate::child::{check, in_child, judge};

const CONNECT_TIMEOUT: Duration = Duration::from_secs(2);

pub fn run(b: &mut Battery, port: Option<u16>, host_addrs: &[IpAddr], abstract_name: Option<&str>) {
    if let Some(port) = port {
        let mut addrs = vec![IpAddr::V4(Ipv4Addr::LOCALHOST)];
        for a in host_addrs {
            if !addrs.contains(a) {
                addrs.push(*a);
            }
        }
        for addr in addrs {
            let target = SocketAddr::new(addr, port);
            b.probe(&format!("connect to the host listener at {target}"), || {
                connect(target)
            });
        }
    }
    if let Some(name) = abstract_name {
        b.probe(
            &format!("connect to host abstract unix socket @{name}"),
            || connect_abstract(name),
        );
    }
    b.probe("only the loopback interface", only_loopback);
    b.probe("raw socket AF_INET/SOCK_RAW", || {
        judge(
            in_child(|| socket(libc::AF_INET, libc::SOCK_RAW, libc::IPPROTO_ICMP)),
            DENIED_SOCKET,
        )
    });
    b.probe("raw socket AF_INET6/SOCK_RAW", || {
        judge(
            in_child(|| socket(libc::AF_INET6, libc::SOCK_RAW, libc::IPPROTO_ICMPV6)),
            DENIED_SOCKET,
        )
    });
    b.probe("packet socket AF_PACKET/SOCK_RAW", || {
        let eth_p_all = i32::from((libc::ETH_P_ALL as u16).to_be());
        judge(
            in_child(|| socket(libc::AF_PACKET, libc::SOCK_RAW, eth_p_all)),
            DENIED_SOCKET,
        )
    });
}

/// A socket family the kernel or filter refuses counts as blocked too.
const DENIED_SOCKET: &[i32] = &[libc::EPERM, libc::EACCES, libc::ENOSYS, libc::EAFNOSUPPORT];

fn connect(target: SocketAddr) -> (bool, String) {
    match TcpStream::connect_timeout(&target, CONNECT_TIMEOUT) {
        Ok(_) => (false, "CONNECTED".to_string()),
        Err(e) => (true, format!("failed: {}", crate::fs::io_errno(&e))),
    }
}

fn connect_abstract(name: &str) -> (bool, String) {
    let addr = match std::os::unix::net::SocketAddr::from_abstract_name(name.as_bytes()) {
        Ok(a) => a,
        Err(e) => return (false, format!("probe error: {e}")),
    };
    match UnixStream::connect_addr(&addr) {
        Ok(_) => (false, "CONNECTED".to_string()),
        Err(e) => (true, format!("failed: {}", crate::fs::io_errno(&e))),
    }
}

fn only_loopback() -> (bool, String) {
    let dev = match fs::read_to_string("/proc/net/dev") {
        Ok(d) => d,
        Err(e) => return (false, format!("cannot read /proc/net/dev: {e}")),
    };
    let names: Vec<&str> = dev
        .lines()
        .skip(2)
        .filter_map(|l| l.split(':').next())
        .map(str::trim)
        .collect();
    let others: Vec<&&str> = names.iter().filter(|n| **n != "lo").collect();
    if others.is_empty() {
        (true, format!("interfaces: {}", names.join(", ")))
    } else {
        (false, format!("EXTRA interfaces: {others:?}"))
    }
}

fn socket(domain: i32, kind: i32, protocol: i32) -> Result<(), i32> {
    // SAFETY: integer arguments; the fd dies with the probe child.
    check(unsafe { libc::socket(domain, kind, protocol) }.into()).map(|_| ())
}
