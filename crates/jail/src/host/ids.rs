//! Which host ids the sandbox's ids map to, and the idmapping of the
//! workspace bind. Pure logic; the monitor writes the result.

use crate::{IdMapping, JailError};

/// One line of a uid_map/gid_map file: `inside outside count`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IdMap {
    pub inside: u32,
    pub outside: u32,
    pub count: u32,
}

impl IdMap {
    pub(crate) fn line(&self) -> String {
        format!("{} {} {}\n", self.inside, self.outside, self.count)
    }

    pub(crate) fn as_tuple(&self) -> (u32, u32, u32) {
        (self.inside, self.outside, self.count)
    }

    /// The host id sandbox root maps to: every plan's one range starts at
    /// sandbox id 0.
    pub(crate) fn root_outside(&self) -> u32 {
        self.outside
    }
}

/// Host uid/gid of the process calling `enter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Caller {
    pub euid: u32,
    pub egid: u32,
}

/// On-disk owner of the workspace directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Owner {
    pub uid: u32,
    pub gid: u32,
}

/// The idmapping of the workspace bind: the on-disk owner (inside) shows as
/// the host id that sandbox root maps to (outside).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct WorkspaceIdmap {
    pub uid: IdMap,
    pub gid: IdMap,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct IdPlan {
    pub uid: IdMap,
    pub gid: IdMap,
    /// An unprivileged caller must write "deny" to setgroups before gid_map,
    /// and then cannot drop its supplementary groups inside.
    pub deny_setgroups: bool,
    /// Set when the workspace must be bound through an idmapped mount.
    pub workspace_idmap: Option<WorkspaceIdmap>,
    /// Host root creates the user namespace as this host uid:gid (what
    /// sandbox root maps to), so the kernel charges the sandbox's per-user
    /// counters to it rather than to host root. None: as the caller.
    pub namespace_owner: Option<Owner>,
}

/// Decides the mapping. Host root maps the given range (the operator's, or
/// the sandbox's own block of the id pool), which never contains host uid 0;
/// anyone else maps sandbox root to itself, one id.
pub(crate) fn plan(
    caller: Caller,
    requested: Option<IdMapping>,
    owner: Owner,
) -> Result<IdPlan, JailError> {
    if caller.euid != 0 {
        if let Some(m) = requested
            && (m.host_base != caller.euid || m.count != 1)
        {
            return Err(JailError::InvalidSpec {
                field: "id_mapping",
                reason: format!(
                    "an unprivileged caller (uid {}) can only map sandbox root to itself",
                    caller.euid
                ),
            });
        }
        return Ok(IdPlan {
            uid: single(caller.euid),
            gid: single(caller.egid),
            deny_setgroups: true,
            workspace_idmap: None,
            namespace_owner: None,
        });
    }
    let Some(m) = requested else {
        return Err(JailError::InvalidSpec {
            field: "id_mapping",
            reason: "host root needs a range to map (the id pool gives one)".into(),
        });
    };
    if m.host_base == 0 {
        return Err(JailError::InvalidSpec {
            field: "id_mapping",
            reason: "sandbox root must never map to host uid 0".into(),
        });
    }
    if m.count == 0 || m.host_base.checked_add(m.count).is_none() {
        return Err(JailError::InvalidSpec {
            field: "id_mapping",
            reason: format!("{} ids from {} do not fit in u32", m.count, m.host_base),
        });
    }
    let range = IdMap {
        inside: 0,
        outside: m.host_base,
        count: m.count,
    };
    let already_owned = owner.uid == m.host_base && owner.gid == m.host_base;
    Ok(IdPlan {
        uid: range,
        gid: range,
        deny_setgroups: false,
        namespace_owner: Some(Owner {
            uid: m.host_base,
            gid: m.host_base,
        }),
        workspace_idmap: (!already_owned).then_some(WorkspaceIdmap {
            uid: IdMap {
                inside: owner.uid,
                outside: m.host_base,
                count: 1,
            },
            gid: IdMap {
                inside: owner.gid,
                outside: m.host_base,
                count: 1,
            },
        }),
    })
}

/// The downgrade when the idmapped workspace cannot be made and the operator
/// allowed that: sandbox root becomes the workspace owner itself (one id), so
/// the workspace stays usable and the reported uid_map says so. Impossible
/// when the owner is host root.
pub(crate) fn without_idmap(owner: Owner) -> Option<IdPlan> {
    (owner.uid != 0 && owner.gid != 0).then_some(IdPlan {
        uid: single(owner.uid),
        gid: single(owner.gid),
        deny_setgroups: false,
        workspace_idmap: None,
        namespace_owner: Some(owner),
    })
}

fn single(host: u32) -> IdMap {
    IdMap {
        inside: 0,
        outside: host,
        count: 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROOT: Caller = Caller { euid: 0, egid: 0 };
    const ROOT_OWNED: Owner = Owner { uid: 0, gid: 0 };

    #[test]
    fn host_root_gets_the_default_range_and_an_idmapped_workspace() {
        let block = IdMapping {
            host_base: 100_000,
            count: 65_536,
        };
        let p = plan(
            ROOT,
            Some(block),
            Owner {
                uid: 1000,
                gid: 1001,
            },
        )
        .unwrap();
        let range = IdMap {
            inside: 0,
            outside: 100_000,
            count: 65_536,
        };
        assert_eq!(
            p,
            IdPlan {
                uid: range,
                gid: range,
                deny_setgroups: false,
                workspace_idmap: Some(WorkspaceIdmap {
                    uid: IdMap {
                        inside: 1000,
                        outside: 100_000,
                        count: 1
                    },
                    gid: IdMap {
                        inside: 1001,
                        outside: 100_000,
                        count: 1
                    },
                }),
                namespace_owner: Some(Owner {
                    uid: 100_000,
                    gid: 100_000
                }),
            }
        );
        assert_eq!(p.uid.line(), "0 100000 65536\n");
        assert!(matches!(
            plan(ROOT, None, ROOT_OWNED),
            Err(JailError::InvalidSpec { .. })
        ));
    }

    #[test]
    fn sandbox_root_never_maps_to_host_root() {
        let err = plan(
            ROOT,
            Some(IdMapping {
                host_base: 0,
                count: 10,
            }),
            ROOT_OWNED,
        );
        assert!(matches!(err, Err(JailError::InvalidSpec { .. })));
        let overflow = plan(
            ROOT,
            Some(IdMapping {
                host_base: u32::MAX - 1,
                count: 10,
            }),
            ROOT_OWNED,
        );
        assert!(matches!(overflow, Err(JailError::InvalidSpec { .. })));
    }

    #[test]
    fn no_idmap_when_the_workspace_already_belongs_to_sandbox_root() {
        let p = plan(
            ROOT,
            Some(IdMapping {
                host_base: 200_000,
                count: 1000,
            }),
            Owner {
                uid: 200_000,
                gid: 200_000,
            },
        )
        .unwrap();
        assert_eq!(p.workspace_idmap, None);
        assert_eq!(p.uid.as_tuple(), (0, 200_000, 1000));
    }

    #[test]
    fn unprivileged_callers_map_root_to_themselves_only() {
        let me = Caller {
            euid: 1000,
            egid: 100,
        };
        let p = plan(
            me,
            None,
            Owner {
                uid: 1000,
                gid: 100,
            },
        )
        .unwrap();
        assert_eq!(p.uid.as_tuple(), (0, 1000, 1));
        assert_eq!(p.gid.as_tuple(), (0, 100, 1));
        assert!(p.deny_setgroups);
        assert_eq!(p.workspace_idmap, None);
        assert_eq!(p.namespace_owner, None);
        let range = plan(
            me,
            Some(IdMapping {
                host_base: 100_000,
                count: 65_536,
            }),
            ROOT_OWNED,
        );
        assert!(matches!(range, Err(JailError::InvalidSpec { .. })));
    }

    #[test]
    fn the_downgrade_maps_root_to_the_owner_but_never_to_host_root() {
        let p = without_idmap(Owner {
            uid: 1000,
            gid: 1000,
        })
        .unwrap();
        assert_eq!(p.uid.as_tuple(), (0, 1000, 1));
        assert_eq!(
            p.namespace_owner,
            Some(Owner {
                uid: 1000,
                gid: 1000
            })
        );
        assert_eq!(without_idmap(ROOT_OWNED), None);
        assert_eq!(without_idmap(Owner { uid: 1000, gid: 0 }), None);
    }
}
