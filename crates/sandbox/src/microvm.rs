//! The microVM tier: a sandbox is a QEMU `-M microvm` virtual machine with
//! its own (Debian) kernel, whose init is the same static `paddock-guest`,
//! serving the protocol over a virtio-serial port wired to a unix socket the
//! backend owns. The workspace is a virtio-9p share. With network the VM
//! has one virtio-net device on a tap in the host-owned namespace of the
//! same host-side egress as a native sandbox's (`network.rs`).

mod accel;
mod backend;
mod config;
mod network;
mod orphans;
mod qemu;
mod sandbox;

pub use accel::Accelerator;
pub use backend::MicroVmBackend;
pub use config::{DEFAULT_IMAGE_DIR, IMAGE_DIR_ENV, MicroVmConfig};
pub use sandbox::MicroVmSandbox;
