//! One conformance suite, run against every backend: native, docker,
//! gvisor and microvm. Each test is generated once per backend (`mod
//! native`, `mod docker`, `mod gvisor`; microvm runs them as one group, see
//! `cases::run_group`); a backend the host cannot run is reported skipped
//! with its reason (see paddock_tests::backends).
#![allow(clippy::unwrap_used, clippy::expect_used)]

#[path = "conformance/cases.rs"]
mod cases;
#[path = "conformance/network.rs"]
mod network;
#[path = "conformance/pool_workspace.rs"]
mod pool_workspace;
#[path = "conformance/ports.rs"]
mod ports;
#[path = "conformance/volumes.rs"]
mod volumes;

macro_rules! per_backend {
    ($($case:ident),* $(,)?) => {
        mod native {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                super::cases::run(paddock_tests::backends::Kind::Native, stringify!($case), super::cases::$case).await;
            })*
        }
        mod docker {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                super::cases::run(paddock_tests::backends::Kind::Docker, stringify!($case), super::cases::$case).await;
            })*
        }
        mod gvisor {
            $(#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn $case() {
                super::cases::run(paddock_tests::backends::Kind::Gvisor, stringify!($case), super::cases::$case).await;
            })*
        }
        // A VM boot costs seconds under TCG: the cases run as one group
        // behind a warm pool instead of each booting cold in parallel.
        mod microvm {
            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn every_case() {
                let cases: &[(&'static str, super::cases::Case)] = &[$((stringify!($case), super::cases::$case)),*];
                super::cases::run_group(paddock_tests::backends::Kind::Microvm, cases).await;
            }
        }
    };
}

per_backend!(
    enforcement_is_reported,
    exec_and_files,
    traversal_is_refused,
    background_and_reattach,
    interactive_terminal,
    streaming_exec,
    read_only_workspace,
    write_scope,
    pool_workspace_quota,
    memory_and_tmp_limits,
    pids_limit,
    network_none,
    snapshot_round_trip_and_fork,
    nothing_left_behind,
    orphans_are_reaped,
    escape_battery,
    warm_pool,
    owner_killed_leaves_nothing,
    pid_1_shows_no_spec,
    port_tunnel,
    net_allowed_host,
    net_other_host_refused,
    net_ip_literal,
    net_private_and_loopback_refused,
    net_metadata_refused,
    net_dns_unlisted_unanswered,
    net_secret_only_to_its_host,
    net_full_guarded,
    net_orphans_reaped,
    volume_mount,
);
