//! Which ports inside a sandbox may be reached from outside (`PortConnect`).

/// The port of the egress proxy as a sandbox with network sees it
/// ([`PROXY_URL`](crate::PROXY_URL)): the host's proxy, holding the
/// sandbox's secrets, never a server of the sandbox's own.
pub const PROXY_PORT: u16 = 3128;

/// Why a port cannot be tunnelled to.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PortRefused {
    #[error("port {port} is out of range: ports are 1..=65535")]
    OutOfRange { port: u64 },
    #[error(
        "port {port} is the sandbox's egress proxy (the host's, not a server in the sandbox) and cannot be reached from outside"
    )]
    Reserved { port: u16 },
}

/// A port a tunnel may open, or why not: `1..=65535` except the egress
/// proxy's. Takes any number so callers parsing user input say the same.
pub fn check_port(port: u64) -> Result<u16, PortRefused> {
    let Ok(port16) = u16::try_from(port) else {
        return Err(PortRefused::OutOfRange { port });
    };
    match port16 {
        0 => Err(PortRefused::OutOfRange { port }),
        PROXY_PORT => Err(PortRefused::Reserved { port: port16 }),
        ok => Ok(ok),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_in_range_pass_and_the_rest_say_why() {
        assert_eq!(check_port(1), Ok(1));
        assert_eq!(check_port(8000), Ok(8000));
        assert_eq!(check_port(65535), Ok(65535));
        assert_eq!(check_port(0), Err(PortRefused::OutOfRange { port: 0 }));
        assert_eq!(
            check_port(65536),
            Err(PortRefused::OutOfRange { port: 65536 })
        );
        assert_eq!(
            check_port(u64::from(PROXY_PORT)),
            Err(PortRefused::Reserved { port: PROXY_PORT })
        );
    }

    #[test]
    fn the_reserved_port_is_the_proxy_urls() {
        assert!(crate::PROXY_URL.ends_with(&format!(":{PROXY_PORT}")));
    }
}
