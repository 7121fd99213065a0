//! What a `full` sandbox's things on the host are called: its veth, its
//! filter chain and the comment that tags its rules, all from a hash of
//! the sandbox id.

/// Host-side interfaces of sandboxes start with this (`pdk+` in the rules).
pub const VETH_PREFIX: &str = "pdk";
/// The sandbox's end of the pair.
pub const SANDBOX_VETH: &str = "egress0";
pub(super) const COMMENT: &str = "paddock-nat";

/// 12 hex digits of FNV-1a of the sandbox id: the veth's and the chain's
/// names (`pdk` + 12 = 15 characters, IFNAMSIZ's limit).
pub(super) fn tag(sandbox_id: &str) -> String {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for b in sandbox_id.bytes() {
        hash ^= u64::from(b);
        hash = hash.wrapping_mul(0x0100_0000_01b3);
    }
    format!("{:012x}", hash & 0xffff_ffff_ffff)
}

/// A number of the sandbox id (where its search for a free NFLOG group starts).
pub(crate) fn seed(sandbox_id: &str) -> u32 {
    u32::from_str_radix(&tag(sandbox_id)[..8], 16).unwrap_or(0)
}

/// The host end's name of a `full` sandbox's veth.
pub fn host_veth_name(sandbox_id: &str) -> String {
    veth_of(sandbox_id)
}

pub(super) fn veth_of(sandbox_id: &str) -> String {
    format!("{VETH_PREFIX}{}", tag(sandbox_id))
}

/// The filter chain of a `full` sandbox's packets.
pub fn host_chain_name(sandbox_id: &str) -> String {
    chain_of(sandbox_id)
}

pub(super) fn chain_of(sandbox_id: &str) -> String {
    format!("PDK-{}", tag(sandbox_id))
}

pub(super) fn comment_of(owner: &str, sandbox_id: &str) -> String {
    format!("{COMMENT} {owner} {sandbox_id}")
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn names_fit_ifnamsiz_and_differ_per_sandbox() {
        let a = veth_of("sb-0192a3b4c5d6e7f8a9b0c1d2e3f4a5b6");
        let b = veth_of("sb-0192a3b4c5d6e7f8a9b0c1d2e3f4a5b7");
        assert_eq!(a.len(), 15);
        assert_ne!(a, b);
        assert!(chain_of("sb-x").len() <= 28);
    }
}
