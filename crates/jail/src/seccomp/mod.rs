//! The seccomp policy: one allowlist with a reason per rule
//! ([`rules`]), compiled to BPF for the native jail and the guests
//! ([`bpf`]), and exported as the container engine's profile ([`docker`]).
//! docs/security.md names every rule (a unit test checks it).

pub(crate) mod bpf;
#[cfg(test)]
mod doc_check;
pub(crate) mod docker;
pub mod rules;
