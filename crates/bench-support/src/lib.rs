//! What the benchmarks share, so they measure the same thing the same way:
//! the generated workspace ([`workspace`]), the host's `tar | zstd`
//! baselines ([`baseline`]), timing figures ([`figures`]) and the `--help`
//! every bench answers with its usage ([`wants_help`]).
//!
//! std and anyhow only, so that any crate's benchmarks can use it
//! (crates/test-support names the adapters and cannot be a dev-dependency of
//! the crates it depends on).

pub mod baseline;
pub mod figures;
pub mod workspace;

/// Whether the command line asks for the usage (`--help` or `-h`). A bench
/// prints its usage and exits 0 then; `cargo bench` passes the arguments
/// after `--` through (`cargo bench -p paddock-runtime --bench turn_overhead
/// -- --help`).
pub fn wants_help() -> bool {
    std::env::args()
        .skip(1)
        .any(|arg| arg == "--help" || arg == "-h")
}

/// The number in the environment variable `name`, or `default` when it is
/// unset; an unparsable value is an error naming the variable.
pub fn env_or<T: std::str::FromStr>(name: &str, default: T) -> anyhow::Result<T>
where
    T::Err: std::error::Error + Send + Sync + 'static,
{
    use anyhow::Context;
    match std::env::var(name) {
        Ok(value) => value.parse().with_context(|| format!("{name}={value}")),
        Err(_) => Ok(default),
    }
}
