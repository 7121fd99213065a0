//! Start-up as the init of a microVM: find the host's virtio-serial port by
//! its name, read the spec frame from it and put the port on fds 0 and 1
//! (the connection then is taken like a container's stdio, once the
//! layers are entered: `startup::confined`).

use std::fs::File;
use std::path::PathBuf;

use paddock_jail::{GuestSpec, Tier};
use paddock_proto::error_chain;

use crate::{EXIT_SOFTWARE, EXIT_USAGE};

const PORTS: &str = "/sys/class/virtio-ports";

/// `/dev/vportNpM` of the port QEMU named [`paddock_jail::GUEST_PORT`].
fn find_port() -> std::io::Result<PathBuf> {
    for entry in std::fs::read_dir(PORTS)? {
        let entry = entry?;
        let name = std::fs::read_to_string(entry.path().join("name")).unwrap_or_default();
        if name.trim() == paddock_jail::GUEST_PORT {
            return Ok(PathBuf::from("/dev").join(entry.file_name()));
        }
    }
    Err(std::io::Error::new(
        std::io::ErrorKind::NotFound,
        format!("no virtio-serial port named {}", paddock_jail::GUEST_PORT),
    ))
}

/// The spec frame the host wrote first on the port, with the port then on
/// fds 0 and 1.
pub(crate) fn read_spec() -> Result<GuestSpec<Tier>, u8> {
    let fail = |what: &str, err: &dyn std::fmt::Display| {
        eprintln!("paddock-guest: {what}: {err}");
        EXIT_SOFTWARE
    };
    let path = find_port().map_err(|e| fail("finding the host port", &e))?;
    let port = File::options()
        .read(true)
        .write(true)
        .open(&path)
        .map_err(|e| fail(&format!("opening {}", path.display()), &e))?;
    let spec = GuestSpec::read_frame(&port).map_err(|e| {
        eprintln!("paddock-guest: {}", error_chain(&e));
        EXIT_USAGE
    })?;
    nix::unistd::dup2_stdin(&port).map_err(|e| fail("putting the port on fd 0", &e))?;
    nix::unistd::dup2_stdout(&port).map_err(|e| fail("putting the port on fd 1", &e))?;
    Ok(spec)
}
