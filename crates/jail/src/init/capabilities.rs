//! Drops every capability the sandbox init holds in its user namespace, then
//! checks that none is left in any set.

use caps::CapSet;

use crate::JailError;
use crate::sys;

/// Capability numbers go up to 63 in the kernel ABI; PR_CAPBSET_* answers
/// EINVAL past the kernel's last one.
const MAX_CAP: u32 = 63;

// securebits (linux/securebits.h)
const SECBIT_NOROOT: libc::c_ulong = 1 << 0;
const SECBIT_NOROOT_LOCKED: libc::c_ulong = 1 << 1;
const SECBIT_KEEP_CAPS_LOCKED: libc::c_ulong = 1 << 5;
const SECBIT_NO_CAP_AMBIENT_RAISE: libc::c_ulong = 1 << 6;
const SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED: libc::c_ulong = 1 << 7;

/// uid 0 gains no capability on execve, ambient raising is off, and both
/// are locked. With an empty bounding set this is belt and braces.
pub(crate) const SECUREBITS: libc::c_ulong = SECBIT_NOROOT
    | SECBIT_NOROOT_LOCKED
    | SECBIT_KEEP_CAPS_LOCKED
    | SECBIT_NO_CAP_AMBIENT_RAISE
    | SECBIT_NO_CAP_AMBIENT_RAISE_LOCKED;

/// Bounding set, ambient set, securebits, then effective, permitted and
/// inheritable (the last step gives up CAP_SETPCAP, needed by the others).
/// The caps crate drops what it knows; `verify` then checks every number the
/// kernel knows, so a capability newer than the crate still fails closed.
/// [`drop_all`] for a process that then becomes an unprivileged user:
/// bounding and ambient sets and securebits go while it is still root,
/// `become_user(uid, gid)` switches ids, then the remaining sets are
/// cleared and every set checked empty.
pub(crate) fn drop_all_becoming(
    uid: u32,
    gid: u32,
    become_user: impl FnOnce(u32, u32) -> std::io::Result<()>,
) -> Result<(), JailError> {
    for set in [CapSet::Bounding, CapSet::Ambient] {
        caps::clear(None, set).map_err(|e| JailError::ClearCapabilities {
            set: set_name(set),
            source: e,
        })?;
    }
    sys::prctl(libc::PR_SET_SECUREBITS, SECUREBITS, 0).map_err(JailError::DropCapabilities)?;
    become_user(uid, gid).map_err(JailError::DropCapabilities)?;
    for set in [CapSet::Inheritable, CapSet::Effective, CapSet::Permitted] {
        caps::clear(None, set).map_err(|e| JailError::ClearCapabilities {
            set: set_name(set),
            source: e,
        })?;
    }
    verify()
}

pub(crate) fn drop_all() -> Result<(), JailError> {
    for set in [CapSet::Bounding, CapSet::Ambient] {
        caps::clear(None, set).map_err(|e| JailError::ClearCapabilities {
            set: set_name(set),
            source: e,
        })?;
    }
    sys::prctl(libc::PR_SET_SECUREBITS, SECUREBITS, 0).map_err(JailError::DropCapabilities)?;
    for set in [CapSet::Inheritable, CapSet::Effective, CapSet::Permitted] {
        caps::clear(None, set).map_err(|e| JailError::ClearCapabilities {
            set: set_name(set),
            source: e,
        })?;
    }
    verify()
}

fn set_name(set: CapSet) -> &'static str {
    match set {
        CapSet::Ambient => "ambient",
        CapSet::Bounding => "bounding",
        CapSet::Effective => "effective",
        CapSet::Inheritable => "inheritable",
        CapSet::Permitted => "permitted",
    }
}

pub(crate) fn verify() -> Result<(), JailError> {
    let (effective, permitted, inheritable) = sys::capget().map_err(JailError::DropCapabilities)?;
    for (set, mask) in [
        ("effective", effective),
        ("permitted", permitted),
        ("inheritable", inheritable),
    ] {
        if mask != 0 {
            return Err(JailError::CapabilityRemains {
                set,
                cap: mask.trailing_zeros(),
            });
        }
    }
    for cap in 0..=MAX_CAP {
        match sys::prctl(libc::PR_CAPBSET_READ, cap.into(), 0) {
            Ok(0) => {}
            Ok(_) => {
                return Err(JailError::CapabilityRemains {
                    set: "bounding",
                    cap,
                });
            }
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => break,
            Err(e) => return Err(JailError::DropCapabilities(e)),
        }
        match sys::prctl(
            libc::PR_CAP_AMBIENT,
            libc::PR_CAP_AMBIENT_IS_SET as libc::c_ulong,
            cap.into(),
        ) {
            Ok(0) => {}
            Ok(_) => {
                return Err(JailError::CapabilityRemains {
                    set: "ambient",
                    cap,
                });
            }
            // A kernel without ambient capabilities (gVisor) holds none.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {}
            Err(e) => return Err(JailError::DropCapabilities(e)),
        }
    }
    Ok(())
}
