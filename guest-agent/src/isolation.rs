//! What keeps a command from reading or impersonating the guest, as the
//! guest reports it (`Enforcement.guest`): the init and the agent are not
//! dumpable and the connection lives in the agent alone (both done by
//! `paddock_jail::fork_reaper` and the start-up before it), a container's
//! attached streams have mode 0 (`conn::take_stdio`), and commands run as
//! the guest's own uid for the reason the tier gives here.

use paddock_proto::{GuestIsolation, LayerState};

/// Where the guest serves, as far as its isolation from its commands goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Tier {
    /// `serve`: nothing is confined.
    Unconfined,
    /// The native jail's user namespace.
    Jail,
    /// A runc container (docker).
    Docker,
    /// A gVisor container.
    Gvisor,
    /// A microVM.
    MicroVm,
}

impl Tier {
    /// Why this tier's commands run as the guest's own uid.
    fn shared_uid_reason(self) -> &'static str {
        match self {
            Tier::Unconfined => "unconfined: the guest runs as its caller and so do its commands",
            Tier::Jail => {
                "the workspace is bound idmapped so that its owner is sandbox root, the uid the \
                 guest serves file requests as; commands must write the workspace as that owner \
                 too, and the guest holds no capability with which to run them as another uid"
            }
            Tier::Docker | Tier::Gvisor => {
                "the engine starts the guest as the workspace owner's uid with every capability \
                 dropped; commands must write the workspace as that owner too, and without \
                 CAP_SETUID the guest cannot run them as another uid"
            }
            Tier::MicroVm => {
                "the guest drops to the workspace owner before serving, so that what it and the \
                 commands write over 9p is the owner's; running commands as another uid would \
                 mean keeping root and its capabilities in the guest beside them"
            }
        }
    }

    fn not_dumpable(self) -> LayerState {
        match self {
            Tier::Gvisor => LayerState::Downgraded {
                reason: "set, but gVisor's sentry does not check it: any process of the sandbox \
                         may open /proc/PID/fd/* and read /proc/PID/environ of any other; the \
                         connection's mode 0 and the wiped environment stand in, and /proc/PID/mem \
                         stays refused by uid"
                    .to_owned(),
            },
            _ => LayerState::Enforced,
        }
    }
}

/// The report once `fork_reaper` returned in the agent: it checked that the
/// process is not dumpable, and the connection was taken off fds 0 and 1
/// before it, so the init closed its copy. `sealed`: the connection was
/// given mode 0 (`conn::Seal::ModeZero`).
pub(crate) fn report(tier: Tier, sealed: bool) -> GuestIsolation {
    let uid = nix::unistd::geteuid().as_raw();
    GuestIsolation {
        not_dumpable: tier.not_dumpable(),
        connection_in_agent_only: true,
        connection_mode_zero: sealed,
        guest_uid: uid,
        // The spawner changes no credential: commands run as the agent.
        command_uid: uid,
        shared_uid_reason: Some(tier.shared_uid_reason().to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gvisor_reports_the_dumpable_flag_downgraded_and_every_tier_says_why_uids_are_shared() {
        for tier in [
            Tier::Unconfined,
            Tier::Jail,
            Tier::Docker,
            Tier::Gvisor,
            Tier::MicroVm,
        ] {
            let report = report(tier, tier == Tier::Gvisor);
            assert_eq!(report.command_uid, report.guest_uid);
            assert!(report.connection_in_agent_only);
            assert_eq!(report.connection_mode_zero, tier == Tier::Gvisor);
            assert!(
                report
                    .shared_uid_reason
                    .as_deref()
                    .is_some_and(|r| !r.is_empty())
            );
            match tier {
                Tier::Gvisor => assert!(
                    matches!(report.not_dumpable, LayerState::Downgraded { ref reason } if reason.contains("gVisor")),
                    "{report:?}"
                ),
                _ => assert_eq!(report.not_dumpable, LayerState::Enforced),
            }
        }
    }
}
