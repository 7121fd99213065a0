//! Compiles the seccomp table into one BPF program and installs it.
//!
//! seccompiler expresses the allowlist (one match action per filter). What it
//! cannot say is a short hand-written prelude put in front of its program:
//!
//! ```text
//! arch != AUDIT_ARCH_X86_64        -> KILL_PROCESS
//! nr >= 0x40000000 (x32 ABI)       -> ERRNO(EPERM)   seccompiler would miss
//!                                                    these aliases of denied calls
//! nr == clone3 (and other ENOSYS)  -> ERRNO(ENOSYS)
//! otherwise                        -> seccompiler's program (its own arch
//!                                     check, then the allowlist -> ALLOW,
//!                                     else ERRNO(EPERM))
//! ```

use std::collections::BTreeMap;

use paddock_proto::LayerState;
use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch, sock_filter,
};

use crate::JailError;
use crate::seccomp::rules::{
    ALLOWED, Allowed, COMMAND_RULES, Check, DEFAULT_DENY, Deny, REFUSED, Refused,
};

pub(crate) const AUDIT_ARCH_X86_64: u32 = 0xc000_003e;
pub(crate) const X32_SYSCALL_BIT: u32 = 0x4000_0000;
pub(crate) const SECCOMP_RET_KILL_PROCESS: u32 = 0x8000_0000;
pub(crate) const SECCOMP_RET_ERRNO: u32 = 0x0005_0000;
#[cfg(test)]
pub(crate) const SECCOMP_RET_ALLOW: u32 = 0x7fff_0000;

const BPF_LD_W_ABS: u16 = 0x20;
const BPF_JMP_JEQ_K: u16 = 0x15;
const BPF_JMP_JGE_K: u16 = 0x35;
const BPF_JMP_JA: u16 = 0x05;
const BPF_RET_K: u16 = 0x06;
const OFFSET_NR: u32 = 0;
const OFFSET_ARCH: u32 = 4;

fn stmt(code: u16, k: u32) -> sock_filter {
    sock_filter {
        code,
        jt: 0,
        jf: 0,
        k,
    }
}

fn jump(code: u16, k: u32, jt: u8, jf: u8) -> sock_filter {
    sock_filter { code, jt, jf, k }
}

/// The prelude described in the module docs; falls through into the next
/// instruction for everything it does not decide.
fn prelude(enosys: &[u32]) -> Result<Vec<sock_filter>, JailError> {
    let k =
        u8::try_from(enosys.len())
            .ok()
            .filter(|k| *k < 200)
            .ok_or(JailError::SeccompCompile(
                seccompiler::BackendError::FilterTooLarge(enosys.len()),
            ))?;
    let mut p = vec![
        stmt(BPF_LD_W_ABS, OFFSET_ARCH),
        jump(BPF_JMP_JEQ_K, AUDIT_ARCH_X86_64, 1, 0),
        stmt(BPF_RET_K, SECCOMP_RET_KILL_PROCESS),
        stmt(BPF_LD_W_ABS, OFFSET_NR),
        // -> RET EPERM, past the k JEQs and the JA.
        jump(BPF_JMP_JGE_K, X32_SYSCALL_BIT, k + 1, 0),
    ];
    for (i, nr) in enosys.iter().enumerate() {
        // -> RET ENOSYS: past the remaining JEQs, the JA and RET EPERM.
        let i = i as u8;
        p.push(jump(BPF_JMP_JEQ_K, *nr, k - i + 1, 0));
    }
    p.push(stmt(BPF_JMP_JA, 2));
    p.push(stmt(BPF_RET_K, SECCOMP_RET_ERRNO | libc::EPERM as u32));
    p.push(stmt(BPF_RET_K, SECCOMP_RET_ERRNO | libc::ENOSYS as u32));
    Ok(p)
}

fn condition(check: Check) -> Result<SeccompCondition, JailError> {
    let (arg, op, value) = match check {
        Check::Eq { arg, value } => (arg, SeccompCmpOp::Eq, value),
        Check::Ne { arg, value } => (arg, SeccompCmpOp::Ne, value),
        Check::MaskedEq { arg, mask, value } => (arg, SeccompCmpOp::MaskedEq(mask.into()), value),
    };
    SeccompCondition::new(arg, SeccompCmpArgLen::Dword, op, value.into())
        .map_err(JailError::SeccompCompile)
}

/// seccompiler's part. With an allowlist: the listed calls (within their
/// argument limits) are allowed, everything else gets [`DEFAULT_DENY`]. Without
/// one (the command filter, stacked on the sandbox's): everything is allowed.
fn seccompiler_program(allowlist: Option<&[Allowed]>) -> Result<BpfProgram, JailError> {
    let mut map: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for a in allowlist.unwrap_or_default() {
        let chain = map.entry(a.nr).or_default();
        // An empty chain matches the syscall whatever its arguments.
        for alternative in a.args.map(|l| l.allowed_when).unwrap_or_default() {
            let conditions = alternative
                .iter()
                .map(|c| condition(*c))
                .collect::<Result<Vec<_>, _>>()?;
            chain.push(SeccompRule::new(conditions).map_err(JailError::SeccompCompile)?);
        }
    }
    let deny = SeccompAction::Errno(errno(DEFAULT_DENY));
    let (mismatch, matched) = match allowlist {
        Some(_) => (deny, SeccompAction::Allow),
        None => (SeccompAction::Allow, deny),
    };
    let filter = SeccompFilter::new(map, mismatch, matched, TargetArch::x86_64)
        .map_err(JailError::SeccompCompile)?;
    BpfProgram::try_from(filter).map_err(JailError::SeccompCompile)
}

fn errno(deny: Deny) -> u32 {
    match deny {
        Deny::Eperm => libc::EPERM as u32,
        Deny::Enosys => libc::ENOSYS as u32,
    }
}

/// The complete program: the prelude (ENOSYS for the `Enosys` entries of
/// `refused`) and seccompiler's program for `allowlist`.
fn compile(refused: &[Refused], allowlist: Option<&[Allowed]>) -> Result<BpfProgram, JailError> {
    let enosys: Vec<u32> = refused
        .iter()
        .filter(|r| r.deny == Deny::Enosys)
        .map(|r| r.nr as u32)
        .collect();
    let mut program = prelude(&enosys)?;
    program.extend(seccompiler_program(allowlist)?);
    Ok(program)
}

/// The sandbox's filter: the allowlist, default deny.
pub(crate) fn compile_table() -> Result<BpfProgram, JailError> {
    compile(REFUSED, Some(ALLOWED))
}

/// The extra seccomp filter for the commands the guest agent runs, stacked
/// on top of the sandbox filter: it makes `openat2` fail with ENOSYS (its
/// mode cannot be inspected, so it could create setuid files in the
/// workspace), which the guest itself needs and its commands do not.
///
/// Build it once in the guest; [`CommandFilter::apply`] installs it on the
/// calling thread only, so the guest installs it on the one thread that
/// starts commands (with posix_spawn: the children inherit it) and its
/// other threads keep openat2. It only makes system calls and never
/// allocates.
#[derive(Debug, Clone)]
pub struct CommandFilter {
    program: BpfProgram,
}

impl CommandFilter {
    pub fn new() -> Result<Self, JailError> {
        Ok(Self {
            program: compile(COMMAND_RULES, None)?,
        })
    }

    /// Installs the filter on the calling thread (no_new_privs is set again,
    /// a no-op inside the sandbox).
    pub fn apply(&self) -> std::io::Result<()> {
        crate::sys::install_seccomp(&self.program)
    }
}

/// Installs the program on every thread (TSYNC; there is only one anyway).
/// A failure is an error unless the operator allowed running without seccomp.
pub(crate) fn install(program: &BpfProgram, allow_missing: bool) -> Result<LayerState, JailError> {
    match seccompiler::apply_filter_all_threads(program) {
        Ok(()) => Ok(LayerState::Enforced),
        Err(e) if allow_missing => Ok(LayerState::Downgraded {
            reason: paddock_proto::error_chain(&JailError::SeccompInstall(e)),
        }),
        Err(e) => Err(JailError::SeccompInstall(e)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A classic-BPF interpreter for the instructions seccomp filters use.
    fn run(program: &[sock_filter], arch: u32, nr: u32, args: [u64; 6]) -> u32 {
        let mut data = [0u8; 64];
        data[0..4].copy_from_slice(&nr.to_le_bytes());
        data[4..8].copy_from_slice(&arch.to_le_bytes());
        for (i, a) in args.iter().enumerate() {
            data[16 + 8 * i..24 + 8 * i].copy_from_slice(&a.to_le_bytes());
        }
        let (mut acc, mut pc) = (0u32, 0usize);
        loop {
            let ins = &program[pc];
            pc += 1;
            match ins.code {
                0x20 => {
                    let o = ins.k as usize;
                    acc = u32::from_le_bytes(data[o..o + 4].try_into().unwrap());
                }
                0x54 => acc &= ins.k,
                0x05 => pc += ins.k as usize,
                0x06 => return ins.k,
                code => {
                    let taken = match code {
                        0x15 => acc == ins.k,
                        0x25 => acc > ins.k,
                        0x35 => acc >= ins.k,
                        0x45 => acc & ins.k != 0,
                        other => panic!("unknown BPF opcode {other:#x}"),
                    };
                    pc += usize::from(if taken { ins.jt } else { ins.jf });
                }
            }
        }
    }

    const EPERM: u32 = SECCOMP_RET_ERRNO | libc::EPERM as u32;
    const ENOSYS: u32 = SECCOMP_RET_ERRNO | libc::ENOSYS as u32;

    fn call(nr: libc::c_long, args: [u64; 6]) -> u32 {
        let program = compile_table().unwrap();
        run(&program, AUDIT_ARCH_X86_64, nr as u32, args)
    }

    fn call1(nr: libc::c_long, a0: u64, a1: u64, a2: u64) -> u32 {
        call(nr, [a0, a1, a2, 0, 0, 0])
    }

    #[test]
    fn every_unconditional_rule_is_denied_and_plain_calls_pass() {
        for r in REFUSED {
            let expected = match r.deny {
                Deny::Eperm => EPERM,
                Deny::Enosys => ENOSYS,
            };
            assert_eq!(call(r.nr, [0; 6]), expected, "{}", r.label);
        }
        for nr in [
            libc::SYS_read,
            libc::SYS_write,
            libc::SYS_openat,
            libc::SYS_execve,
            libc::SYS_landlock_restrict_self,
        ] {
            assert_eq!(call(nr, [0; 6]), SECCOMP_RET_ALLOW, "nr {nr}");
        }
    }

    #[test]
    fn every_unconditionally_allowed_call_passes_and_unlisted_ones_get_eperm() {
        for a in ALLOWED.iter().filter(|a| a.args.is_none()) {
            assert_eq!(call(a.nr, [0; 6]), SECCOMP_RET_ALLOW, "{}", a.name);
        }
        for nr in [
            libc::SYS_modify_ldt,
            libc::SYS_fanotify_init,
            libc::SYS_sethostname,
            libc::SYS_vhangup,
            libc::SYS_memfd_secret,
        ] {
            assert_eq!(call(nr, [0; 6]), EPERM, "nr {nr}");
        }
        // Numbers no kernel has yet are refused too.
        assert_eq!(call(1000, [0; 6]), EPERM);
        assert_eq!(call(470, [0; 6]), EPERM);
    }

    #[test]
    fn other_architectures_are_killed_and_x32_aliases_denied() {
        let program = compile_table().unwrap();
        const AUDIT_ARCH_I386: u32 = 0x4000_0003;
        assert_eq!(
            run(&program, AUDIT_ARCH_I386, 3, [0; 6]),
            SECCOMP_RET_KILL_PROCESS
        );
        let x32_mount = X32_SYSCALL_BIT | libc::SYS_mount as u32;
        assert_eq!(run(&program, AUDIT_ARCH_X86_64, x32_mount, [0; 6]), EPERM);
        let x32_read = X32_SYSCALL_BIT;
        assert_eq!(run(&program, AUDIT_ARCH_X86_64, x32_read, [0; 6]), EPERM);
    }

    #[test]
    fn clone_is_allowed_without_namespace_flags() {
        let fork = libc::SIGCHLD as u64;
        let thread = (libc::CLONE_VM
            | libc::CLONE_FS
            | libc::CLONE_FILES
            | libc::CLONE_SIGHAND
            | libc::CLONE_THREAD
            | libc::CLONE_SYSVSEM
            | libc::CLONE_SETTLS
            | libc::CLONE_PARENT_SETTID
            | libc::CLONE_CHILD_CLEARTID) as u64;
        assert_eq!(call1(libc::SYS_clone, fork, 0, 0), SECCOMP_RET_ALLOW);
        assert_eq!(call1(libc::SYS_clone, thread, 0, 0), SECCOMP_RET_ALLOW);
        for flag in [
            libc::CLONE_NEWUSER,
            libc::CLONE_NEWNS,
            libc::CLONE_NEWNET,
            libc::CLONE_NEWPID,
            libc::CLONE_NEWCGROUP,
            libc::CLONE_NEWIPC,
            libc::CLONE_NEWUTS,
        ] {
            assert_eq!(
                call1(libc::SYS_clone, fork | flag as u64, 0, 0),
                EPERM,
                "{flag:#x}"
            );
            // High bits cannot hide the flag: the kernel ignores them, so does the filter.
            assert_eq!(call1(libc::SYS_clone, (1 << 40) | flag as u64, 0, 0), EPERM);
        }
    }

    #[test]
    fn only_device_nodes_are_refused_by_mknod() {
        let mode = |t: u32| u64::from(t | 0o644);
        assert_eq!(call1(libc::SYS_mknod, 0, mode(libc::S_IFCHR), 0), EPERM);
        assert_eq!(call1(libc::SYS_mknod, 0, mode(libc::S_IFBLK), 0), EPERM);
        assert_eq!(
            call1(libc::SYS_mknod, 0, mode(libc::S_IFIFO), 0),
            SECCOMP_RET_ALLOW
        );
        assert_eq!(
            call1(libc::SYS_mknod, 0, mode(libc::S_IFREG), 0),
            SECCOMP_RET_ALLOW
        );
        assert_eq!(call1(libc::SYS_mknodat, 0, 0, mode(libc::S_IFCHR)), EPERM);
        assert_eq!(call1(libc::SYS_mknodat, 0, 0, mode(libc::S_IFBLK)), EPERM);
        assert_eq!(
            call1(libc::SYS_mknodat, 0, 0, mode(libc::S_IFSOCK)),
            SECCOMP_RET_ALLOW
        );
    }

    #[test]
    fn setuid_and_setgid_bits_cannot_be_set() {
        let setuid = 0o4755;
        let setgid = 0o2755;
        assert_eq!(call1(libc::SYS_chmod, 0, setuid, 0), EPERM);
        assert_eq!(call1(libc::SYS_chmod, 0, setgid, 0), EPERM);
        assert_eq!(call1(libc::SYS_chmod, 0, 0o755, 0), SECCOMP_RET_ALLOW);
        assert_eq!(call1(libc::SYS_fchmod, 3, 0o6755, 0), EPERM);
        assert_eq!(call1(libc::SYS_fchmodat, 0, 0, setuid), EPERM);
        assert_eq!(call1(libc::SYS_fchmodat, 0, 0, 0o1777), SECCOMP_RET_ALLOW);
        assert_eq!(call1(libc::SYS_fchmodat2, 0, 0, setgid), EPERM);
        assert_eq!(call1(libc::SYS_creat, 0, setuid, 0), EPERM);
        assert_eq!(call1(libc::SYS_creat, 0, 0o644, 0), SECCOMP_RET_ALLOW);
        assert_eq!(
            call1(libc::SYS_mknod, 0, (libc::S_IFREG | 0o4755) as u64, 0),
            EPERM
        );

        let creat = (libc::O_CREAT | libc::O_WRONLY | libc::O_CLOEXEC) as u64;
        let tmpfile = (libc::O_TMPFILE | libc::O_RDWR) as u64;
        let plain = (libc::O_RDONLY | libc::O_CLOEXEC) as u64;
        let openat = |flags: u64, mode: u64| call(libc::SYS_openat, [0, 0, flags, mode, 0, 0]);
        assert_eq!(openat(creat, setuid), EPERM);
        assert_eq!(openat(creat, setgid), EPERM);
        assert_eq!(openat(tmpfile, setuid), EPERM);
        assert_eq!(openat(creat, 0o644), SECCOMP_RET_ALLOW);
        // Without O_CREAT the mode is unused, whatever garbage it holds.
        assert_eq!(openat(plain, setuid), SECCOMP_RET_ALLOW);
        assert_eq!(call1(libc::SYS_open, 0, creat, setuid), EPERM);
        assert_eq!(call1(libc::SYS_open, 0, plain, 0), SECCOMP_RET_ALLOW);
        // The guest's own path resolution needs openat2; commands lose it
        // through CommandFilter.
        assert_eq!(call1(libc::SYS_openat2, 0, 0, 0), SECCOMP_RET_ALLOW);
        let commands = CommandFilter::new().unwrap();
        let run_cmd =
            |nr: libc::c_long| run(&commands.program, AUDIT_ARCH_X86_64, nr as u32, [0; 6]);
        assert_eq!(run_cmd(libc::SYS_openat2), ENOSYS);
        assert_eq!(run_cmd(libc::SYS_openat), SECCOMP_RET_ALLOW);
        assert_eq!(run_cmd(libc::SYS_read), SECCOMP_RET_ALLOW);
        assert_eq!(
            run(&commands.program, 0x4000_0003, 5, [0; 6]),
            SECCOMP_RET_KILL_PROCESS
        );
    }

    #[test]
    fn packet_raw_and_vsock_sockets_are_refused_others_pass() {
        let s = |domain: i32, ty: i32| call1(libc::SYS_socket, domain as u64, ty as u64, 0);
        assert_eq!(s(libc::AF_PACKET, libc::SOCK_RAW), EPERM);
        assert_eq!(s(libc::AF_PACKET, libc::SOCK_DGRAM), EPERM);
        assert_eq!(s(libc::AF_INET, libc::SOCK_RAW), EPERM);
        assert_eq!(s(libc::AF_INET, libc::SOCK_RAW | libc::SOCK_CLOEXEC), EPERM);
        assert_eq!(
            s(libc::AF_INET6, libc::SOCK_RAW | libc::SOCK_NONBLOCK),
            EPERM
        );
        assert_eq!(s(libc::AF_INET, 10 /* SOCK_PACKET */), EPERM);
        assert_eq!(s(libc::AF_VSOCK, libc::SOCK_STREAM), EPERM);
        assert_eq!(
            s(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC),
            SECCOMP_RET_ALLOW
        );
        assert_eq!(s(libc::AF_INET6, libc::SOCK_DGRAM), SECCOMP_RET_ALLOW);
        assert_eq!(s(libc::AF_UNIX, libc::SOCK_STREAM), SECCOMP_RET_ALLOW);
        assert_eq!(s(libc::AF_NETLINK, libc::SOCK_RAW), SECCOMP_RET_ALLOW);
    }

    #[test]
    fn only_unix_inet_and_route_netlink_sockets_exist() {
        let s = |domain: i32, ty: i32, protocol: i32| {
            call1(libc::SYS_socket, domain as u64, ty as u64, protocol as u64)
        };
        assert_eq!(
            s(
                libc::AF_NETLINK,
                libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
                libc::NETLINK_ROUTE
            ),
            SECCOMP_RET_ALLOW
        );
        assert_eq!(s(libc::AF_UNIX, libc::SOCK_SEQPACKET, 0), SECCOMP_RET_ALLOW);
        assert_eq!(
            s(libc::AF_INET, libc::SOCK_DGRAM, libc::IPPROTO_ICMP),
            SECCOMP_RET_ALLOW
        );
        assert_eq!(
            s(libc::AF_NETLINK, libc::SOCK_RAW, libc::NETLINK_AUDIT),
            EPERM
        );
        assert_eq!(
            s(
                libc::AF_NETLINK,
                libc::SOCK_RAW,
                libc::NETLINK_KOBJECT_UEVENT
            ),
            EPERM
        );
        assert_eq!(s(libc::AF_ALG, libc::SOCK_SEQPACKET, 0), EPERM);
        assert_eq!(s(libc::AF_BLUETOOTH, libc::SOCK_STREAM, 0), EPERM);
        assert_eq!(s(libc::AF_INET, libc::SOCK_SEQPACKET, 0), EPERM);
        // The high half of the family cannot turn a refused one into AF_UNIX.
        assert_eq!(
            call1(libc::SYS_socket, (1 << 32) | libc::AF_PACKET as u64, 3, 0),
            EPERM
        );
        let pair = |domain: i32| call1(libc::SYS_socketpair, domain as u64, 1, 0);
        assert_eq!(pair(libc::AF_UNIX), SECCOMP_RET_ALLOW);
        assert_eq!(pair(libc::AF_INET), EPERM);
    }

    #[test]
    fn terminal_injection_ioctls_are_refused() {
        let ioctl = |req: u64| call1(libc::SYS_ioctl, 0, req, 0);
        assert_eq!(ioctl(libc::TIOCSTI), EPERM);
        assert_eq!(ioctl(libc::TIOCLINUX), EPERM);
        assert_eq!(ioctl((1 << 32) | libc::TIOCSTI), EPERM);
        assert_eq!(ioctl(libc::TCGETS), SECCOMP_RET_ALLOW);
        assert_eq!(ioctl(libc::TIOCGWINSZ), SECCOMP_RET_ALLOW);
    }

    #[test]
    fn personality_may_only_be_queried_or_reset() {
        let p = |v: u64| call1(libc::SYS_personality, v, 0, 0);
        assert_eq!(p(0xffff_ffff), SECCOMP_RET_ALLOW);
        assert_eq!(p(0), SECCOMP_RET_ALLOW);
        assert_eq!(p(0x0040_0000), EPERM, "READ_IMPLIES_EXEC");
        assert_eq!(p(0x0004_0000), EPERM, "ADDR_NO_RANDOMIZE");
        assert_eq!(p(0x0008), EPERM, "PER_LINUX32");
    }

    #[test]
    fn prelude_jumps_land_on_the_right_returns() {
        let p = prelude(&[435, 436]).unwrap();
        let tail = [stmt(BPF_RET_K, SECCOMP_RET_ALLOW)];
        let program: Vec<sock_filter> = p.into_iter().chain(tail).collect();
        assert_eq!(run(&program, AUDIT_ARCH_X86_64, 435, [0; 6]), ENOSYS);
        assert_eq!(run(&program, AUDIT_ARCH_X86_64, 436, [0; 6]), ENOSYS);
        assert_eq!(
            run(&program, AUDIT_ARCH_X86_64, 437, [0; 6]),
            SECCOMP_RET_ALLOW
        );
        assert_eq!(
            run(&program, AUDIT_ARCH_X86_64, X32_SYSCALL_BIT | 1, [0; 6]),
            EPERM
        );
    }
}
