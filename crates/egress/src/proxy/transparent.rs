//! Connections redirected by the namespace's filter rules (a program that
//! ignores the proxy variables): the original destination is read back from
//! conntrack; an address the in-sandbox DNS handed out stands for its name,
//! any other is an IP literal. What the program sends first must name that
//! host ([`crate::proxy::opening`]: its TLS server name, its HTTP Host). Refused
//! connections are closed (an HTTP one after a 403 saying why).

use std::net::{IpAddr, Ipv4Addr};
use std::time::Instant;

use nix::sys::socket::{getsockopt, sockopt};
use paddock_proto::Target;
use tokio::net::TcpStream;

use crate::proxy::connect::{Outcome, Refusal, Shared};
use crate::proxy::live::Cut;
use crate::proxy::opening::relay;
use crate::proxy::secrets::Admitted;

pub(crate) async fn serve(ctx: Shared, mut client: TcpStream) {
    let started = Instant::now();
    let Ok(original) = getsockopt(&client, sockopt::OriginalDst) else {
        return;
    };
    let ip = Ipv4Addr::from(u32::from_be(original.sin_addr.s_addr));
    let port = u16::from_be(original.sin_port);
    let target = match ctx.names.name_of(ip) {
        Some(name) => Target::Name(name),
        None => Target::Ip(IpAddr::V4(ip)),
    };
    let outcome = Outcome {
        host: target.to_string(),
        port,
        via: "transparent",
        started,
    };
    match ctx.open(&target, port).await {
        Ok((mut upstream, mut registration)) => {
            let admitted = Admitted {
                target: &target,
                port,
            };
            let relayed = registration
                .until_cut(relay(
                    &mut client,
                    &mut upstream,
                    admitted,
                    &ctx.secrets,
                    Vec::new(),
                ))
                .await;
            match relayed {
                Err(Cut) => outcome.cut(&ctx),
                Ok(Ok((out, inn))) => outcome.done(&ctx, out, inn),
                Ok(Err(refused)) => {
                    let refusal = Refusal::Denied(refused.why);
                    if refused.http {
                        let _ = crate::proxy::http::refuse(&mut client, &refusal).await;
                    }
                    outcome.denied(&ctx, &refusal);
                }
            }
        }
        Err(refusal) => {
            if port == 80 {
                let _ = crate::proxy::http::refuse(&mut client, &refusal).await;
            }
            outcome.denied(&ctx, &refusal);
        }
    }
}
