//! Support for Paddock's end-to-end tests: finding the built binaries, driving
//! `paddock sandbox run`, watching the host for leaked processes, mounts and
//! cgroups, and the report format the escape battery prints.
//!
//! The scenario tests in `tests/` need root and the `paddock` and
//! `paddock-guest` binaries of the same profile (`scripts/test.sh` builds them).

pub mod backends;
pub mod bins;
pub mod cli;
pub mod escape;
pub mod fake_provider;
pub mod host;
pub mod nethost;
pub mod report;
pub mod run;
pub mod serve;
pub mod tlshost;
