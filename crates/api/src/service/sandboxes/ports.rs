//! Reaching a server inside a sandbox: a TCP connection the guest opens to
//! `127.0.0.1:port` in the sandbox and relays (`GuestOps::port_connect`),
//! so it works on every backend and without network in the sandbox.

use paddock_core::ids::TenantId;
use paddock_core::sandbox::SandboxId;
use paddock_proto::check_port;
use tokio::io::DuplexStream;

use super::{ActivityGuard, SandboxService, ServiceError};

/// An open connection to a server in a sandbox. The sandbox counts as in
/// use while it exists.
#[derive(Debug)]
pub struct PortTunnel {
    pub stream: DuplexStream,
    pub activity: ActivityGuard,
}

impl SandboxService {
    /// Connects to `port` in the tenant's sandbox `id`: refused when the
    /// port is out of range or the egress proxy's, and `not_listening`
    /// when nothing listens there.
    pub async fn open_port(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
        port: u64,
    ) -> Result<PortTunnel, ServiceError> {
        let port = check_port(port).map_err(|e| ServiceError::invalid("port", e.to_string()))?;
        let (live, activity) = self.use_sandbox(tenant, id).await?;
        match live.guest.port_connect(port).await {
            Ok(stream) => Ok(PortTunnel { stream, activity }),
            Err(e) => Err(self.guest_failed(id, "port_connect", e).await),
        }
    }

    /// Refused as [`SandboxService::open_port`] would refuse the sandbox
    /// (not the tenant's, not running); counts as a use of it.
    pub async fn running_sandbox(
        &self,
        tenant: &TenantId,
        id: &SandboxId,
    ) -> Result<(), ServiceError> {
        self.use_sandbox(tenant, id).await.map(|_| ())
    }
}
