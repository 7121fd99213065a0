//! Sandbox backends and the host side of the guest protocol.
//!
//! [`GuestClient`] speaks `paddock_proto` to one guest agent over one
//! connection. [`NativeBackend`] implements the core `SandboxBackend` port with
//! Linux namespaces: it launches `paddock-guest jail` (the jail monitor) with
//! one end of a socketpair as its stdin and talks to the guest over the other.
//! [`DockerBackend`] implements it with containers of the Docker Engine (runc
//! or gVisor), the same guest as PID 1: its spec frame goes in on the
//! container's attached stdin; under runc the guest then speaks over a unix
//! socket the host listens on, bound into the container, under gVisor over
//! the attached stdio (`docker/guest_socket.rs` says why).
//! [`MicroVmBackend`] with QEMU microVMs, the guest as the VM's init over a
//! virtio-serial port.
#![cfg_attr(test, allow(clippy::unwrap_used, clippy::expect_used))]

mod client;
mod docker;
mod microvm;
mod native;
mod pool;
mod shared;
pub mod volumes;

pub use client::{ExecStream, GuestClient, SlowReader, StreamLimits, StreamLimitsError};
pub use docker::{
    DEFAULT_IMAGE, DockerBackend, DockerConfig, DockerSandbox, Engine, LABEL_BACKEND, LABEL_NODE,
    LABEL_SANDBOX,
};
pub use microvm::{
    Accelerator, DEFAULT_IMAGE_DIR, IMAGE_DIR_ENV, MicroVmBackend, MicroVmConfig, MicroVmSandbox,
};
pub use native::{
    GUEST_BIN_ENV, LocateGuestError, NativeBackend, NativeConfig, NativeSandbox, locate_guest_bin,
};
pub use pool::WarmPool;
pub use shared::host::owner_tag;
