//! The microVM tier: a sandbox is a QEMU `-M microvm` virtual machine with
//! its own (Debian) kernel, whose init is the same static `paddock-guest`,
//! serving the protocol over a virtio-serial port wired to a unix socket the
//! backend owns. The workspace is a virtio-9p share.

mod accel;
mod backend;
mod config;
mod orphans;
mod qemu;
mod sandbox;

pub use accel::Accelerator;
pub use backend::MicroVmBackend;
pub use config::{DEFAULT_IMAGE_DIR, IMAGE_DIR_ENV, MicroVmConfig};
pub use sandbox::MicroVmSandbox;
