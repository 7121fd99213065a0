//! The preload library of gVisor sandboxes (see `src/no_automount.c` for
//! what it mends and why): the docker backend writes [`LIBRARY`] to a file
//! on the host and binds it into each gVisor container, and the guest names
//! it in every command's `LD_PRELOAD`.

/// The shared object, built from `src/no_automount.c` by build.rs.
pub static LIBRARY: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/no_automount.so"));

/// Where the library is bound inside a gVisor container.
pub const PATH_INSIDE: &str = "/opt/paddock/gvisor-compat.so";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_library_is_an_x86_64_shared_object() {
        assert_eq!(&LIBRARY[..4], b"\x7fELF");
        // e_type ET_DYN, e_machine EM_X86_64
        assert_eq!(u16::from_le_bytes([LIBRARY[16], LIBRARY[17]]), 3);
        assert_eq!(u16::from_le_bytes([LIBRARY[18], LIBRARY[19]]), 62);
    }
}
