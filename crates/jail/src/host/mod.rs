//! Host set-up: what the monitor decides and builds in the host's namespaces
//! before and around the clone of the sandbox init (validated names, the id
//! mapping and its pool, the idmapped workspace, the mount plan, the write
//! scope, the workspace quota, the cgroups and their OOM counters), and the
//! read-only probe of what this host can enforce.

pub(crate) mod cgroup;
pub(crate) mod id_pool;
pub(crate) mod idmap_mount;
pub(crate) mod ids;
pub(crate) mod layout;
pub(crate) mod monitor;
pub(crate) mod oom;
pub(crate) mod prepare;
pub(crate) mod probe;
pub(crate) mod sync;
pub(crate) mod workspace_quota;
pub(crate) mod writable;
