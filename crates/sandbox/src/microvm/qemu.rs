//! The QEMU command line of one VM, planned as data: every device is listed
//! here with why it is there, and nothing else is (`-nodefaults`).

use std::path::{Path, PathBuf};

use super::accel::Accelerator;

/// Marks a VM's command line: `-name paddock:<owner tag>:<sandbox id>`.
pub(super) const NAME_PREFIX: &str = "paddock:";

/// Kernel arguments of every boot. `quiet`: the serial console is slow under
/// TCG; `panic=-1` with `-no-reboot`: the VM ends when its init exits; the
/// rest skips probing hardware a microvm does not have.
const KERNEL_ARGS: &str = "console=ttyS0 quiet panic=-1 pci=off i8042.noaux i8042.nomux \
                           i8042.nopnp i8042.dumbkbd cryptomgr.notests random.trust_cpu=on";
/// Under TCG the kernel cannot calibrate the TSC against a timer microvm
/// lacks (pit=off); it is told the emulated frequency instead.
const TCG_KERNEL_ARGS: &str = "tsc_early_khz=2000000";
/// The translation cache of TCG, in MiB (QEMU's default is 1 GiB): resident
/// once filled, so it is most of the VMM's own memory; the kernel and a
/// shell's working set fit (a full cache is flushed and refilled).
const TCG_TB_SIZE_MIB: u32 = 32;
/// The id of the guest RAM's memory backend.
const RAM_ID: &str = "ram";

/// One VM to start.
#[derive(Debug, Clone)]
pub(super) struct VmPlan {
    pub name: String,
    pub accelerator: Accelerator,
    pub vcpus: u32,
    pub memory_mib: u64,
    pub kernel: PathBuf,
    pub initrd: PathBuf,
    /// The unix socket (the backend listens) behind the guest's port.
    pub socket: PathBuf,
    /// The read-only disk image the guest mounts as /usr.
    pub system_disk: PathBuf,
    /// Host dirs shared over 9p: (tag, path, read-only).
    pub shares: Vec<(String, PathBuf, bool)>,
    /// QEMU's QMP monitor socket (QEMU listens): saving and loading the VM.
    pub monitor: Option<PathBuf>,
    /// Start stopped, waiting for the saved VM to load (`migrate-incoming`).
    pub incoming: bool,
    /// QEMU drops to this uid:gid once its devices are open.
    pub run_as: Option<(u32, u32)>,
    /// Boot only to a marker in the init and power off (probe, bench).
    pub marker_only: bool,
    /// The network device of a sandbox with network; None: no device at all.
    pub net: Option<VmNet>,
}

/// A virtio-net device backed by the tap in the sandbox's namespace (QEMU
/// is started in that namespace and opens it by name, as root, before
/// `-runas`), and the address the image's init gives eth0.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct VmNet {
    pub tap: String,
    /// The VM's address with its prefix (`a.b.c.d/n`).
    pub address: String,
    pub gateway: String,
}

/// Fixed: one NIC per VM, on a link of its own.
const VM_MAC: &str = "52:54:00:70:64:6b";

fn path(p: &Path) -> String {
    p.display().to_string()
}

/// QEMU's option values separate fields with commas; a comma in a value is
/// doubled.
fn escape(value: &str) -> String {
    value.replace(',', ",,")
}

impl VmPlan {
    pub(super) fn args(&self) -> Vec<String> {
        let mut args: Vec<String> = Vec::new();
        let mut push = |a: &str, b: String| {
            args.push(a.to_owned());
            args.push(b);
        };
        push("-name", escape(&self.name));
        // No legacy PC devices: no PIT, PIC, RTC; the ISA serial port stays
        // as the console (logs and errors on QEMU's stdout).
        // The RAM is a memfd (shmem), not QEMU's default anonymous memory,
        // which it madvises for transparent huge pages: every 4 KiB the
        // guest touches would make 2 MiB resident on the host.
        push(
            "-M",
            format!(
                "microvm,pit=off,pic=off,rtc=off,isa-serial=on,acpi=on,memory-backend={RAM_ID}"
            ),
        );
        push(
            "-object",
            format!("memory-backend-memfd,id={RAM_ID},size={}M", self.memory_mib),
        );
        match self.accelerator {
            Accelerator::Kvm => {
                push("-accel", "kvm".to_owned());
                push("-cpu", "host".to_owned());
            }
            Accelerator::Tcg => {
                push("-accel", format!("tcg,tb-size={TCG_TB_SIZE_MIB}"));
                push("-cpu", "max".to_owned());
            }
        }
        push("-m", format!("{}M", self.memory_mib));
        push("-smp", self.vcpus.to_string());
        // No default devices, no config file, no display, no reboot loop.
        for flag in ["-nodefaults", "-no-user-config", "-nographic", "-no-reboot"] {
            push(flag, String::new());
        }
        // The seccomp filter of QEMU itself: no obsolete calls, no new
        // processes, no scheduler/resource changes; set*id only for -runas.
        push(
            "-sandbox",
            "on,obsolete=deny,elevateprivileges=allow,spawn=deny,resourcecontrol=deny".to_owned(),
        );
        push("-serial", "stdio".to_owned());
        push("-kernel", path(&self.kernel));
        push("-initrd", path(&self.initrd));
        let mut cmdline = KERNEL_ARGS.to_owned();
        if self.accelerator == Accelerator::Tcg {
            cmdline.push(' ');
            cmdline.push_str(TCG_KERNEL_ARGS);
        }
        if self.marker_only {
            cmdline.push_str(" paddock.marker");
        }
        if let (Some(net), false) = (&self.net, self.marker_only) {
            // Read by the image's init, which configures eth0 from it.
            cmdline.push_str(&format!(" paddock.net={},{}", net.address, net.gateway));
        }
        push("-append", cmdline);
        if !self.marker_only {
            // Free-page reporting: the guest's balloon driver reports the
            // pages it frees and QEMU returns them to the host, so a VM's
            // footprint falls back after a workload. No inflation is asked.
            push(
                "-device",
                "virtio-balloon-device,free-page-reporting=on".to_owned(),
            );
            // The host connection: a virtio-serial port whose other end is
            // the backend's socket (QEMU connects as the client).
            push("-device", "virtio-serial-device".to_owned());
            push(
                "-chardev",
                format!("socket,id=guest,path={}", escape(&path(&self.socket))),
            );
            push(
                "-device",
                format!(
                    "virtserialport,chardev=guest,name={}",
                    paddock_jail::GUEST_PORT
                ),
            );
            // /usr: the image's read-only disk. Not 9p: QEMU cannot save a VM
            // while a 9p export is mounted in it, and /usr is for its whole life.
            push(
                "-drive",
                format!(
                    "file={},if=none,id=usr,format=raw,readonly=on",
                    escape(&path(&self.system_disk))
                ),
            );
            push("-device", "virtio-blk-device,drive=usr".to_owned());
            if let Some(net) = &self.net {
                // The sandbox's only way out: the tap, no helper script
                // (QEMU's seccomp denies spawning one anyway).
                push(
                    "-netdev",
                    format!(
                        "tap,id=net0,ifname={},script=no,downscript=no",
                        escape(&net.tap)
                    ),
                );
                push(
                    "-device",
                    format!("virtio-net-device,netdev=net0,mac={VM_MAC}"),
                );
            }
            for (i, (tag, dir, read_only)) in self.shares.iter().enumerate() {
                let ro = if *read_only { ",readonly=on" } else { "" };
                push(
                    "-fsdev",
                    format!(
                        "local,id=fs{i},path={},security_model=none{ro}",
                        escape(&path(dir))
                    ),
                );
                push(
                    "-device",
                    format!("virtio-9p-device,fsdev=fs{i},mount_tag={tag}"),
                );
            }
        }
        if let (Some(monitor), false) = (&self.monitor, self.marker_only) {
            push(
                "-qmp",
                format!("unix:{},server=on,wait=off", escape(&path(monitor))),
            );
        }
        if self.incoming {
            push("-incoming", "defer".to_owned());
        }
        if let Some((uid, gid)) = self.run_as {
            push("-runas", format!("{uid}:{gid}"));
        }
        args.retain(|a| !a.is_empty());
        args
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn plan() -> VmPlan {
        VmPlan {
            name: "paddock:tag:sb-1".to_owned(),
            accelerator: Accelerator::Tcg,
            vcpus: 1,
            memory_mib: 256,
            kernel: "/img/vmlinuz".into(),
            initrd: "/img/initrd.img".into(),
            socket: "/run/x/guest.sock".into(),
            system_disk: "/img/usr.img".into(),
            shares: vec![("workspace".to_owned(), "/ws,odd".into(), false)],
            monitor: Some("/run/x/qmp.sock".into()),
            incoming: false,
            run_as: Some((100_000, 100_000)),
            marker_only: false,
            net: None,
        }
    }

    fn value_of<'a>(args: &'a [String], flag: &str) -> Vec<&'a str> {
        args.windows(2)
            .filter(|w| w[0] == flag)
            .map(|w| w[1].as_str())
            .collect()
    }

    #[test]
    fn only_the_listed_devices_and_no_network() {
        let args = plan().args();
        assert!(args.iter().any(|a| a == "-nodefaults"));
        assert_eq!(
            value_of(&args, "-device"),
            vec![
                "virtio-balloon-device,free-page-reporting=on",
                "virtio-serial-device",
                "virtserialport,chardev=guest,name=org.paddock.guest",
                "virtio-blk-device,drive=usr",
                "virtio-9p-device,fsdev=fs0,mount_tag=workspace",
            ]
        );
        assert_eq!(
            value_of(&args, "-drive"),
            vec!["file=/img/usr.img,if=none,id=usr,format=raw,readonly=on"]
        );
        assert!(value_of(&args, "-netdev").is_empty());
        assert!(value_of(&args, "-nic").is_empty());
        assert_eq!(
            value_of(&args, "-fsdev"),
            vec!["local,id=fs0,path=/ws,,odd,security_model=none"]
        );
        assert_eq!(
            value_of(&args, "-qmp"),
            vec!["unix:/run/x/qmp.sock,server=on,wait=off"]
        );
        assert!(value_of(&args, "-incoming").is_empty());
        assert_eq!(value_of(&args, "-runas"), vec!["100000:100000"]);
        assert!(value_of(&args, "-sandbox")[0].starts_with("on,"));
        assert!(value_of(&args, "-M")[0].ends_with(",memory-backend=ram"));
        assert_eq!(
            value_of(&args, "-object"),
            vec!["memory-backend-memfd,id=ram,size=256M"]
        );
    }

    #[test]
    fn tcg_gets_its_clock_and_a_bounded_cache_kvm_does_not() {
        let tcg = plan().args();
        assert!(value_of(&tcg, "-append")[0].contains("tsc_early_khz="));
        assert_eq!(value_of(&tcg, "-accel"), vec!["tcg,tb-size=32"]);
        let kvm = VmPlan {
            accelerator: Accelerator::Kvm,
            ..plan()
        }
        .args();
        assert!(!value_of(&kvm, "-append")[0].contains("tsc_early_khz="));
        assert_eq!(value_of(&kvm, "-cpu"), vec!["host"]);
    }

    #[test]
    fn network_is_one_virtio_net_on_the_tap_and_its_address_on_the_command_line() {
        let args = VmPlan {
            net: Some(VmNet {
                tap: "vmtap0".to_owned(),
                address: "100.127.255.254/30".to_owned(),
                gateway: "100.127.255.253".to_owned(),
            }),
            ..plan()
        }
        .args();
        assert_eq!(
            value_of(&args, "-netdev"),
            vec!["tap,id=net0,ifname=vmtap0,script=no,downscript=no"]
        );
        let devices = value_of(&args, "-device");
        assert_eq!(
            devices
                .iter()
                .filter(|d| d.starts_with("virtio-net-device,netdev=net0,"))
                .count(),
            1,
            "{devices:?}"
        );
        assert!(
            value_of(&args, "-append")[0]
                .ends_with(" paddock.net=100.127.255.254/30,100.127.255.253")
        );
        // no network: no device and nothing on the command line
        let none = plan().args();
        assert!(!value_of(&none, "-append")[0].contains("paddock.net"));
    }

    #[test]
    fn a_restore_starts_waiting_for_the_saved_vm_with_the_same_devices() {
        let fresh = plan().args();
        let restore = VmPlan {
            incoming: true,
            ..plan()
        }
        .args();
        assert_eq!(value_of(&restore, "-incoming"), vec!["defer"]);
        assert_eq!(value_of(&restore, "-device"), value_of(&fresh, "-device"));
    }

    #[test]
    fn a_marker_boot_has_no_devices() {
        let args = VmPlan {
            marker_only: true,
            ..plan()
        }
        .args();
        assert!(value_of(&args, "-device").is_empty());
        assert!(value_of(&args, "-drive").is_empty());
        assert!(value_of(&args, "-qmp").is_empty());
        assert!(value_of(&args, "-append")[0].ends_with(" paddock.marker"));
    }
}
