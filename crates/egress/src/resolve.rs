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
