//! The sandbox's network namespace, made and owned by the host (so the
//! sandbox, root only in its own user namespace, cannot change its routes or
//! filter rules).
//!
//! `allowlist`: loopback, one veth pair (both ends inside) carrying the
//! default route, and filter rules by which every TCP connection leaving
//! loopback is redirected to the proxy's transparent port, DNS to its
//! resolver, and anything else dropped.
//!
//! `full`: loopback only here; [`crate::nat`] then moves one end of a veth
//! pair in from the host and routes it (NAT, the guard as host packet
//! filter rules).

use std::path::PathBuf;
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use crate::EgressError;

/// Where the explicit HTTP proxy listens inside the namespace.
pub const PROXY_PORT: u16 = paddock_proto::PROXY_PORT;
/// Where redirected TCP arrives.
pub const TRANSPARENT_PORT: u16 = 3129;
/// The sandbox's own address on egress0 (never leaves the namespace).
pub const SANDBOX_ADDRESS: &str = "192.0.2.2/24";

const COMMAND_TIMEOUT: Duration = Duration::from_secs(10);

/// The rules, one reason per line in docs/security.md ("Network policy").
pub const IPTABLES_RULES: &str = "\
*nat
:OUTPUT ACCEPT [0:0]
-A OUTPUT -d 127.0.0.0/8 -j RETURN
-A OUTPUT -p tcp -j REDIRECT --to-ports 3129
-A OUTPUT -p udp --dport 53 -j REDIRECT --to-ports 53
COMMIT
*filter
:INPUT ACCEPT [0:0]
:FORWARD DROP [0:0]
:OUTPUT DROP [0:0]
-A OUTPUT -m conntrack --ctstate ESTABLISHED,RELATED -j ACCEPT
-A OUTPUT -d 127.0.0.0/8 -j ACCEPT
-A OUTPUT -m addrtype --dst-type LOCAL -j ACCEPT
COMMIT
";

/// `full`: the guard is on the host, on the sandbox's veth, where the
/// sandbox cannot reach it; inside nothing is redirected.
pub const FULL_IPTABLES_RULES: &str = "\
*filter
:INPUT ACCEPT [0:0]
:FORWARD DROP [0:0]
:OUTPUT ACCEPT [0:0]
COMMIT
";

/// IPv6: loopback only (the namespace has no IPv6 route out).
pub const IP6TABLES_RULES: &str = "\
*filter
:INPUT ACCEPT [0:0]
:FORWARD DROP [0:0]
:OUTPUT DROP [0:0]
-A OUTPUT -o lo -j ACCEPT
COMMIT
";

/// Where a sandbox's namespace comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// A fresh namespace the host makes (`ip netns add`): native sandboxes.
    Create,
    /// The namespace of this host process, named under /run/netns (`ip
    /// netns attach`) and configured from the host before the sandbox runs
    /// its first command: a container started with network none (the
    /// engine made its namespace; nothing in it holds a capability over
    /// it). Removing the name leaves the namespace to its process.
    Attach { pid: u32 },
}

/// A named network namespace under /run/netns; removed by [`Netns::remove`].
#[derive(Debug)]
pub struct Netns {
    name: String,
    removed: bool,
}

impl Netns {
    /// The name of a sandbox's namespace under /run/netns.
    pub fn name_of(sandbox_id: &str) -> String {
        format!("paddock-{sandbox_id}")
    }

    /// The namespace of an `allowlist` sandbox: every way out leads to the proxy.
    pub async fn create(sandbox_id: &str) -> Result<Self, EgressError> {
        Self::create_with(sandbox_id, false, Source::Create).await
    }

    /// The namespace of a `full` sandbox: loopback and the in-namespace
    /// rules only; [`crate::nat::Nat::attach`] adds its way out.
    pub async fn create_routed(sandbox_id: &str) -> Result<Self, EgressError> {
        Self::create_with(sandbox_id, true, Source::Create).await
    }

    /// [`Self::create`] or [`Self::create_routed`] (`routed`) on the
    /// namespace `source` names.
    pub async fn prepare(
        sandbox_id: &str,
        routed: bool,
        source: Source,
    ) -> Result<Self, EgressError> {
        Self::create_with(sandbox_id, routed, source).await
    }

    async fn create_with(
        sandbox_id: &str,
        routed: bool,
        source: Source,
    ) -> Result<Self, EgressError> {
        let name = Self::name_of(sandbox_id);
        match source {
            Source::Create => run("ip", &["netns", "add", &name], None).await?,
            Source::Attach { pid } => {
                run("ip", &["netns", "attach", &name, &pid.to_string()], None).await?
            }
        };
        let netns = Netns {
            name: name.clone(),
            removed: false,
        };
        let n = name.as_str();
        if routed {
            let steps: [(&str, Vec<&str>, Option<&str>); 3] = [
                ("ip", vec!["-n", n, "link", "set", "lo", "up"], None),
                (
                    "ip",
                    vec!["netns", "exec", n, "iptables-restore"],
                    Some(FULL_IPTABLES_RULES),
                ),
                (
                    "ip",
                    vec!["netns", "exec", n, "ip6tables-restore"],
                    Some(IP6TABLES_RULES),
                ),
            ];
            for (program, args, stdin) in steps {
                if let Err(e) = run(program, &args, stdin).await {
                    netns.remove().await;
                    return Err(e);
                }
            }
            return Ok(netns);
        }
        // A veth pair with both ends inside (the dummy driver is not on
        // every kernel): the route out needs a device, and what leaves by it
        // arrives at its peer, with no address and no forwarding, and ends.
        let steps: [(&str, Vec<&str>, Option<&str>); 8] = [
            ("ip", vec!["-n", n, "link", "set", "lo", "up"], None),
            (
                "ip",
                vec![
                    "-n", n, "link", "add", "egress0", "type", "veth", "peer", "name", "egress1",
                ],
                None,
            ),
            (
                "ip",
                vec!["-n", n, "addr", "add", SANDBOX_ADDRESS, "dev", "egress0"],
                None,
            ),
            ("ip", vec!["-n", n, "link", "set", "egress0", "up"], None),
            ("ip", vec!["-n", n, "link", "set", "egress1", "up"], None),
            (
                "ip",
                vec!["-n", n, "route", "add", "default", "dev", "egress0"],
                None,
            ),
            (
                "ip",
                vec!["netns", "exec", n, "iptables-restore"],
                Some(IPTABLES_RULES),
            ),
            (
                "ip",
                vec!["netns", "exec", n, "ip6tables-restore"],
                Some(IP6TABLES_RULES),
            ),
        ];
        for (program, args, stdin) in steps {
            if let Err(e) = run(program, &args, stdin).await {
                netns.remove().await;
                return Err(e);
            }
        }
        Ok(netns)
    }

    /// Removes the namespace of a sandbox that is gone (crash
    /// reconciliation), when it is still there.
    pub async fn remove_stale(sandbox_id: &str) {
        let name = Self::name_of(sandbox_id);
        if PathBuf::from("/run/netns").join(&name).exists()
            && let Err(e) = run("ip", &["netns", "del", &name], None).await
        {
            tracing::warn!(netns = %name, error = %paddock_proto::error_chain(&e), "removing a stale sandbox network namespace");
        }
    }

    pub fn name(&self) -> &str {
        &self.name
    }

    /// The file the jail joins (`ip netns` keeps it bound there).
    pub fn path(&self) -> PathBuf {
        PathBuf::from("/run/netns").join(&self.name)
    }

    pub async fn remove(mut self) {
        self.removed = true;
        if let Err(e) = run("ip", &["netns", "del", &self.name], None).await {
            tracing::warn!(netns = %self.name, error = %paddock_proto::error_chain(&e), "removing the sandbox network namespace");
        }
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        if !self.removed {
            // Not removed on the async path (a panic or an early return):
            // `ip netns del` is quick, and a namespace left behind would hold
            // its name for good.
            let _ = std::process::Command::new("ip")
                .args(["netns", "del", &self.name])
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::null())
                .status();
        }
    }
}

/// Runs one command (at most [`COMMAND_TIMEOUT`]) and returns its standard
/// output; a failure names the command line and its standard error.
pub(crate) async fn run(
    program: &str,
    args: &[&str],
    stdin: Option<&str>,
) -> Result<String, EgressError> {
    let command_line = format!("{program} {}", args.join(" "));
    let fail = |detail: String| EgressError::Namespace {
        command: command_line.clone(),
        detail,
    };
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(if stdin.is_some() {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        })
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = command.spawn().map_err(|e| fail(e.to_string()))?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes())
            .await
            .map_err(|e| fail(e.to_string()))?;
    }
    let output = tokio::time::timeout(COMMAND_TIMEOUT, child.wait_with_output())
        .await
        .map_err(|_| fail(format!("no exit within {COMMAND_TIMEOUT:?}")))?
        .map_err(|e| fail(e.to_string()))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(fail(format!(
            "{}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        )))
    }
}
