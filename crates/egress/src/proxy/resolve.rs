//! The proxy resolves names itself (never trusting what the sandbox was
//! told), with no cache of its own: each connection looks the name up again
//! and the guard checks that answer.

use std::net::{IpAddr, SocketAddr};
use std::str::FromStr;
use std::time::Duration;

use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::{Name, RData, RecordType};
use serde::{Deserialize, Serialize};

/// Where the proxy looks names up.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Resolver {
    /// The host's resolver (getaddrinfo: /etc/hosts, resolv.conf).
    #[default]
    System,
    /// One DNS server asked directly over UDP (A records).
    Nameserver(SocketAddr),
}

const LOOKUP_TIMEOUT: Duration = Duration::from_secs(5);

impl Resolver {
    pub async fn lookup(&self, name: &str) -> Result<Vec<IpAddr>, String> {
        let found = tokio::time::timeout(LOOKUP_TIMEOUT, async {
            match self {
                Resolver::System => tokio::net::lookup_host((name, 0))
                    .await
                    .map(|addrs| addrs.map(|a| a.ip()).collect())
                    .map_err(|e| e.to_string()),
                Resolver::Nameserver(server) => query_a(*server, name).await,
            }
        })
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {LOOKUP_TIMEOUT:?}")))?;
        if found.is_empty() {
            return Err("no address".to_owned());
        }
        Ok(found)
    }
}

impl Resolver {
    /// A look-up over DNS only, for answers handed to a sandbox: never the
    /// host's /etc/hosts (its host-only names), so `System` asks the
    /// nameservers of /etc/resolv.conf directly, in turn.
    pub async fn lookup_dns(&self, name: &str) -> Result<Vec<IpAddr>, String> {
        let servers = match self {
            Resolver::Nameserver(server) => vec![*server],
            Resolver::System => {
                let conf = std::fs::read_to_string(RESOLV_CONF)
                    .map_err(|e| format!("reading {RESOLV_CONF}: {e}"))?;
                nameservers(&conf)
            }
        };
        let mut last = format!("no nameserver in {RESOLV_CONF}");
        for server in servers {
            match tokio::time::timeout(LOOKUP_TIMEOUT, query_a(server, name)).await {
                Ok(Ok(found)) if found.is_empty() => return Err("no address".to_owned()),
                Ok(Ok(found)) => return Ok(found),
                Ok(Err(why)) if why == "NXDomain" => return Err(why),
                Ok(Err(why)) => last = why,
                Err(_) => last = format!("no answer within {LOOKUP_TIMEOUT:?}"),
            }
        }
        Err(last)
    }
}

const RESOLV_CONF: &str = "/etc/resolv.conf";

/// The `nameserver` addresses of a resolv.conf, on port 53.
fn nameservers(conf: &str) -> Vec<SocketAddr> {
    conf.lines()
        .filter_map(|l| l.trim().strip_prefix("nameserver"))
        .filter_map(|rest| rest.trim().split('%').next()?.parse::<IpAddr>().ok())
        .map(|ip| SocketAddr::new(ip, 53))
        .collect()
}

async fn query_a(server: SocketAddr, name: &str) -> Result<Vec<IpAddr>, String> {
    let fqdn = Name::from_str(&format!("{name}.")).map_err(|e| e.to_string())?;
    let mut query = Message::query();
    query.metadata.recursion_desired = true;
    query.add_query(Query::query(fqdn, RecordType::A));
    let bytes = query.to_vec().map_err(|e| e.to_string())?;
    let bind: SocketAddr = if server.is_ipv4() {
        ([0, 0, 0, 0], 0).into()
    } else {
        (std::net::Ipv6Addr::UNSPECIFIED, 0).into()
    };
    let socket = tokio::net::UdpSocket::bind(bind)
        .await
        .map_err(|e| e.to_string())?;
    socket.connect(server).await.map_err(|e| e.to_string())?;
    socket.send(&bytes).await.map_err(|e| e.to_string())?;
    let mut buf = vec![0u8; 4096];
    loop {
        let n = socket.recv(&mut buf).await.map_err(|e| e.to_string())?;
        let Ok(answer) = Message::from_vec(&buf[..n]) else {
            continue;
        };
        if answer.metadata.id != query.metadata.id
            || answer.metadata.message_type != MessageType::Response
            || answer.metadata.op_code != OpCode::Query
        {
            continue;
        }
        if answer.metadata.response_code != ResponseCode::NoError {
            return Err(format!("{}", answer.metadata.response_code));
        }
        return Ok(answer
            .answers
            .iter()
            .filter_map(|r| match &r.data {
                RData::A(a) => Some(IpAddr::V4(a.0)),
                _ => None,
            })
            .collect());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nameservers_are_read_from_resolv_conf() {
        let conf = "# comment\nsearch example\nnameserver 10.255.255.53\n\
                    nameserver fe80::1%eth0\nnameserver  127.0.0.53 \noptions edns0\n";
        let found: Vec<String> = nameservers(conf).iter().map(ToString::to_string).collect();
        assert_eq!(found, ["10.255.255.53:53", "[fe80::1]:53", "127.0.0.53:53"]);
    }
}
