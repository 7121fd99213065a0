//! The microVM tier: a sandbox is a QEMU `-M microvm` virtual machine with
//! its own (Debian) kernel, whose init is the same static `paddock-guest`,
//! serving the protocol over a virtio-serial port wired to a unix socket the
//! backend owns. /usr is a read-only virtio-blk disk, the guest is appended
//! to the initramfs (`initrd.rs`), the workspace is a virtio-9p share (or a
//! tmpfs in the VM). With network the VM has one virtio-net device on a tap
//! in the host-owned namespace of the same host-side egress as a native
//! sandbox's (`network.rs`). A VM can be saved whole and restored
//! (`save.rs`, over QMP: `qmp.rs`).

mod accel;
mod backend;
mod config;
mod initrd;
mod network;
mod orphans;
mod qemu;
mod qmp;
mod sandbox;
mod save;

pub use accel::Accelerator;
pub use backend::MicroVmBackend;
pub use config::{DEFAULT_IMAGE_DIR, IMAGE_DIR_ENV, MicroVmConfig};
pub use sandbox::MicroVmSandbox;
