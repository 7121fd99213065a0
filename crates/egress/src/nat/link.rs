//! A `full` sandbox's link to the host: the veth pair (`pdk<tag>` on the
//! host, `egress0` inside), its addresses from the pool, the default route
//! inside, IPv6 off on both ends, and IPv4 forwarding on the host.

use std::net::Ipv4Addr;
use std::path::Path;

use super::SANDBOX_VETH;
use super::names::veth_of;
use crate::EgressError;
use crate::netns::{Netns, run};

/// Makes the pair with `veth` the host's end, addresses both ends (the
/// host's `gateway`, the sandbox's `sandbox_address`), routes the
/// namespace out through it, and turns on forwarding.
pub(super) async fn route_out(
    netns: &Netns,
    veth: &str,
    gateway: Ipv4Addr,
    sandbox_address: Ipv4Addr,
) -> Result<(), EgressError> {
    let n = netns.name();
    let host_end = format!("{gateway}/30");
    let inside = format!("{sandbox_address}/30");
    let via = gateway.to_string();
    run(
        "ip",
        &[
            "link",
            "add",
            veth,
            "type",
            "veth",
            "peer",
            "name",
            SANDBOX_VETH,
            "netns",
            n,
        ],
        None,
    )
    .await?;
    // No IPv6 on either end: the guard is written for IPv4 only.
    disable_ipv6(&format!("/proc/sys/net/ipv6/conf/{veth}/disable_ipv6"));
    run("ip", &["addr", "add", &host_end, "dev", veth], None).await?;
    run("ip", &["link", "set", veth, "up"], None).await?;
    run(
        "ip",
        &[
            "netns",
            "exec",
            n,
            "sysctl",
            "-q",
            "-w",
            &format!("net.ipv6.conf.{SANDBOX_VETH}.disable_ipv6=1"),
        ],
        None,
    )
    .await?;
    // ICMP echo sockets (unprivileged ping) for every group, in this
    // namespace only: the sandbox has no raw sockets.
    run(
        "ip",
        &[
            "netns",
            "exec",
            n,
            "sysctl",
            "-q",
            "-w",
            "net.ipv4.ping_group_range=0 2147483647",
        ],
        None,
    )
    .await?;
    run(
        "ip",
        &["-n", n, "addr", "add", &inside, "dev", SANDBOX_VETH],
        None,
    )
    .await?;
    run("ip", &["-n", n, "link", "set", SANDBOX_VETH, "up"], None).await?;
    run(
        "ip",
        &[
            "-n",
            n,
            "route",
            "add",
            "default",
            "via",
            &via,
            "dev",
            SANDBOX_VETH,
        ],
        None,
    )
    .await?;
    enable_forwarding()
}

fn disable_ipv6(path: &str) {
    if Path::new(path).exists()
        && let Err(e) = std::fs::write(path, "1")
    {
        tracing::debug!(path, error = %e, "disabling IPv6 on a sandbox veth");
    }
}

const FORWARD_SWITCH: &str = "/proc/sys/net/ipv4/ip_forward";

/// Turns on IPv4 forwarding (host-wide; docs/security.md says so) when it
/// is off. FORWARD's policy and other interfaces' rules are left alone.
fn enable_forwarding() -> Result<(), EgressError> {
    let fail = |source| EgressError::Forwarding { source };
    let now = std::fs::read_to_string(FORWARD_SWITCH).map_err(fail)?;
    if now.trim() != "1" {
        tracing::warn!("turning on net.ipv4.ip_forward for a sandbox with network full");
        std::fs::write(FORWARD_SWITCH, "1").map_err(fail)?;
    }
    Ok(())
}

pub(super) async fn remove_veth(sandbox_id: &str) {
    let veth = veth_of(sandbox_id);
    if Path::new("/sys/class/net").join(&veth).exists()
        && let Err(e) = run("ip", &["link", "del", &veth], None).await
    {
        tracing::warn!(sandbox_id, error = %paddock_proto::error_chain(&e), "removing the sandbox's veth");
    }
}
