//! The container tier: a sandbox is a container of the Docker Engine (runc,
//! or gVisor's `runsc` runtime) whose PID 1 is the same static
//! `paddock-guest`, bound in read-only, serving the protocol over the
//! container's attached stdin/stdout (no port, nothing published).

mod backend;
mod checkpoint;
mod config;
mod container;
mod guest_socket;
mod host_checks;
mod network;
mod orphans;
mod restore;
mod sandbox;
mod save;
mod stdio;

pub use backend::DockerBackend;
pub use config::{DEFAULT_IMAGE, DockerConfig, Engine, LABEL_BACKEND, LABEL_NODE, LABEL_SANDBOX};
pub use sandbox::DockerSandbox;
