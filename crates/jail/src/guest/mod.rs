//! The guest's own layers where the isolation boundary was made outside it:
//! inside a container of the engine ([`container`]) or as the init of a
//! microVM ([`microvm`]), both finished by the same [`hardening`] as the
//! native jail's last steps.

pub(crate) mod container;
pub(crate) mod hardening;
pub(crate) mod microvm;
