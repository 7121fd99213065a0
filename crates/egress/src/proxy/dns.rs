//! The sandbox's DNS (its resolv.conf names it; other port-53 traffic is
//! redirected here). It answers only names the policy allows, and with an
//! address of its own from 198.18.0.0/16 that stands for the name: the
//! proxy, not the sandbox, resolves the real one at connect time (so a DNS
//! answer cannot steer a connection past the address guard). Other names get
//! NXDOMAIN; AAAA and other types an empty answer.
//!
//! `full` ([`crate::nat`]): the sandbox's packets leave through NAT and the
//! guard is on the packets, so the answer can be the real one: A queries
//! are looked up over DNS only (the operator's resolver, else the
//! nameservers of /etc/resolv.conf: never the host's /etc/hosts and its
//! host-only names), at most [`IN_FLIGHT`] at once (more are dropped and
//! retried by the client); addresses the guard refuses are left out of the
//! answer, and a name with no other is REFUSED (a denied decision), so the
//! sandbox never learns an internal address; AAAA and other types get an
//! empty answer (the sandbox has no IPv6).

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::Mutex;

use hickory_proto::op::{Message, MessageType, OpCode, Query, ResponseCode};
use hickory_proto::rr::rdata::A;
use hickory_proto::rr::{RData, Record, RecordType};
use std::sync::Arc;

use tokio::net::UdpSocket;
use tokio::task::JoinSet;

use crate::EgressDecision;
use crate::proxy::connect::Shared;

/// The first address handed out, and how many names one sandbox may hold.
const BASE: u32 = u32::from_be_bytes([198, 18, 0, 1]);
pub(crate) const MAX_NAMES: u32 = 4096;
const TTL: u32 = 60;

/// Names the DNS handed out and the addresses standing for them.
#[derive(Debug, Default)]
pub(crate) struct FakeNames {
    inner: Mutex<(HashMap<String, Ipv4Addr>, HashMap<Ipv4Addr, String>)>,
}

impl FakeNames {
    /// The address for `name`; None when the table is full.
    pub(crate) fn address_of(&self, name: &str) -> Option<Ipv4Addr> {
        let mut guard = self.inner.lock().ok()?;
        let (by_name, by_ip) = &mut *guard;
        if let Some(ip) = by_name.get(name) {
            return Some(*ip);
        }
        let n = u32::try_from(by_name.len()).ok()?;
        if n >= MAX_NAMES {
            return None;
        }
        let ip = Ipv4Addr::from(BASE + n);
        by_name.insert(name.to_owned(), ip);
        by_ip.insert(ip, name.to_owned());
        Some(ip)
    }

    pub(crate) fn name_of(&self, ip: Ipv4Addr) -> Option<String> {
        self.inner.lock().ok()?.1.get(&ip).cloned()
    }
}

/// `full`: at most this many look-ups at once.
const IN_FLIGHT: usize = 64;

pub(crate) async fn serve(ctx: Shared, socket: UdpSocket) {
    if *ctx.policy() == paddock_proto::NetworkPolicy::Full {
        return serve_real(ctx, Arc::new(socket)).await;
    }
    let mut buf = vec![0u8; 4096];
    loop {
        let Ok((n, from)) = socket.recv_from(&mut buf).await else {
            continue;
        };
        if let Some(reply) = answer(&ctx, &buf[..n]) {
            let _ = socket.send_to(&reply, from).await;
        }
    }
}

async fn serve_real(ctx: Shared, socket: Arc<UdpSocket>) {
    let mut buf = vec![0u8; 4096];
    let mut lookups = JoinSet::new();
    loop {
        tokio::select! {
            received = socket.recv_from(&mut buf) => {
                let Ok((n, from)) = received else { continue };
                if lookups.len() >= IN_FLIGHT {
                    continue;
                }
                let (ctx, socket, bytes) = (ctx.clone(), socket.clone(), buf[..n].to_vec());
                lookups.spawn(async move {
                    if let Some(reply) = answer_real(&ctx, &bytes).await {
                        let _ = socket.send_to(&reply, from).await;
                    }
                });
            }
            Some(_) = lookups.join_next(), if !lookups.is_empty() => {}
        }
    }
}

/// One question to answer: the reply so far (header and question copied)
/// and the name asked, lower case without its trailing dot.
struct Asked {
    reply: Message,
    query: Query,
    name: String,
}

/// Reads one request. `Err(None)`: not a query, no reply at all;
/// `Err(Some(reply))`: answered already (not one question, not a plain
/// query).
fn asked(bytes: &[u8]) -> Result<Asked, Option<Vec<u8>>> {
    let request = Message::from_vec(bytes).map_err(|_| None)?;
    if request.metadata.message_type != MessageType::Query {
        return Err(None);
    }
    let mut reply = Message::response(request.metadata.id, request.metadata.op_code);
    reply.metadata.recursion_desired = request.metadata.recursion_desired;
    reply.metadata.recursion_available = true;
    let [query] = request.queries.as_slice() else {
        reply.metadata.response_code = ResponseCode::FormErr;
        return Err(reply.to_vec().ok());
    };
    reply.add_query(query.clone());
    if request.metadata.op_code != OpCode::Query {
        reply.metadata.response_code = ResponseCode::NotImp;
        return Err(reply.to_vec().ok());
    }
    let name = query
        .name()
        .to_ascii()
        .trim_end_matches('.')
        .to_ascii_lowercase();
    Ok(Asked {
        reply,
        query: query.clone(),
        name,
    })
}

async fn answer_real(ctx: &Shared, bytes: &[u8]) -> Option<Vec<u8>> {
    let Asked {
        mut reply,
        query,
        name,
    } = match asked(bytes) {
        Ok(asked) => asked,
        Err(done) => return done,
    };
    if query.query_type() != RecordType::A {
        return reply.to_vec().ok();
    }
    match ctx.config.resolver.lookup_dns(&name).await {
        Ok(found) => {
            let host = ctx.host_networks.current();
            let allowed = &ctx.config.allowed_private;
            let why = found
                .iter()
                .find_map(|ip| crate::guard::refusal(*ip, &host, allowed));
            let kept: Vec<Ipv4Addr> = found
                .into_iter()
                .filter(|ip| crate::guard::refusal(*ip, &host, allowed).is_none())
                .filter_map(|ip| match ip {
                    std::net::IpAddr::V4(v4) => Some(v4),
                    std::net::IpAddr::V6(_) => None,
                })
                .collect();
            if let (true, Some(why)) = (kept.is_empty(), why) {
                // never the address of what the guard refuses
                reply.metadata.response_code = ResponseCode::Refused;
                ctx.record(EgressDecision {
                    allowed: false,
                    host: name,
                    port: 53,
                    via: "dns".to_owned(),
                    reason: Some(format!(
                        "the name resolves only to refused addresses: {why}"
                    )),
                    bytes_out: 0,
                    bytes_in: 0,
                    duration_ms: 0,
                });
            }
            for v4 in kept {
                reply.add_answer(Record::from_rdata(
                    query.name().clone(),
                    TTL,
                    RData::A(A(v4)),
                ));
            }
        }
        Err(why) if why.starts_with("no answer within") => {
            reply.metadata.response_code = ResponseCode::ServFail;
        }
        Err(_) => reply.metadata.response_code = ResponseCode::NXDomain,
    }
    reply.to_vec().ok()
}

fn answer(ctx: &Shared, bytes: &[u8]) -> Option<Vec<u8>> {
    let Asked {
        mut reply,
        query,
        name,
    } = match asked(bytes) {
        Ok(asked) => asked,
        Err(done) => return done,
    };
    if !ctx.policy().allows_name(&name) {
        reply.metadata.response_code = ResponseCode::NXDomain;
        ctx.record(EgressDecision {
            allowed: false,
            host: name,
            port: 53,
            via: "dns".to_owned(),
            reason: Some("the name is not allowed by the sandbox's network policy".to_owned()),
            bytes_out: 0,
            bytes_in: 0,
            duration_ms: 0,
        });
        return reply.to_vec().ok();
    }
    if query.query_type() == RecordType::A {
        match ctx.names.address_of(&name) {
            Some(ip) => {
                reply.add_answer(Record::from_rdata(
                    query.name().clone(),
                    TTL,
                    RData::A(A(ip)),
                ));
            }
            None => reply.metadata.response_code = ResponseCode::ServFail,
        }
    }
    reply.to_vec().ok()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_get_stable_addresses_until_the_table_is_full() {
        let names = FakeNames::default();
        let a = names.address_of("a.test").unwrap();
        assert_eq!(a, Ipv4Addr::new(198, 18, 0, 1));
        assert_eq!(names.address_of("a.test"), Some(a));
        assert_eq!(names.name_of(a).as_deref(), Some("a.test"));
        for i in 1..MAX_NAMES {
            assert!(names.address_of(&format!("n{i}.test")).is_some());
        }
        assert_eq!(names.address_of("one-more.test"), None);
        assert_eq!(names.name_of(Ipv4Addr::new(198, 18, 0, 0)), None);
    }
}
