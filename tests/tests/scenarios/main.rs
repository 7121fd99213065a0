//! End-to-end scenarios against the built binaries, one module per area, in
//! one test binary. `leaks` and `escape_battery` (which compare the whole
//! host before and after), `network` (no NAT rule left on the host) and
//! `container_isolation` (an id block is free right after its sandbox goes)
//! keep binaries of their own: another test's sandbox running beside them in
//! the same process would fail them. So does `microvm`: beside conformance's
//! microvm case (a second VM at once) it failed here where alone it passed.

mod agent_clis;
mod conformance;
mod e2b_sdk;
mod exit_codes;
mod guest_ops;
mod host_paths;
mod info;
mod json_output;
mod killed_run;
mod limits;
mod microvm_network;
mod network_change;
mod network_nat;
mod network_runs;
mod output_cap;
mod pause;
mod per_user_limits;
mod read_only;
mod sdk_python;
mod sdk_typescript;
mod secret_network;
mod secrets;
mod signals;
mod streaming;
mod timeouts;
mod unprivileged;
mod volumes;
mod workloads;
mod workspace;
mod workspace_quota;
mod write_scope;
