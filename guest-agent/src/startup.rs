//! The guest's start-up before it serves: `serve` unconfined, or one
//! confined start-up for every tier, driven by the one spec frame
//! (`paddock_jail::GuestSpec`) the host writes first: read it (fd 0, or the
//! microVM's port), check it is for this sandbox and this subcommand, enter
//! the tier's layers while the process has one thread, then take the host
//! connection the tier's way.

use std::path::PathBuf;

use paddock_jail::{GuestSpec, Tier};
use paddock_proto::{Enforcement, WORKSPACE_MOUNT, error_chain};

use crate::cli::{Mode, ServeArgs};
use crate::{EXIT_NO_INPUT, EXIT_SOFTWARE, EXIT_USAGE, Startup, conn, isolation, microvm};

pub(crate) fn serve(args: &ServeArgs) -> Result<Startup, u8> {
    let root = std::fs::canonicalize(&args.workspace).map_err(|e| {
        eprintln!("paddock-guest: workspace {}: {e}", args.workspace.display());
        EXIT_NO_INPUT
    })?;
    // Outside a jail, orphans of our commands come to the reaper instead of
    // the host's init.
    if let Err(e) = nix::sys::prctl::set_child_subreaper(true) {
        eprintln!("paddock-guest: cannot become a child subreaper: {e}");
    }
    Ok(Startup {
        root,
        enforcement: Enforcement::unconfined(),
        command_filter: None,
        sandbox_id: None,
        connection: host_connection(conn::take_connection())?,
        egress_env: Vec::new(),
        tier: isolation::Tier::Unconfined,
        connection_sealed: false,
    })
}

/// The subcommand's name and the sandbox id its command line names (the
/// microVM's init has none: its command line is the image's).
fn expected(mode: &Mode) -> (&'static str, Option<&str>) {
    match mode {
        Mode::Serve(_) => ("serve", None),
        Mode::Jail(args) => ("jail", Some(&args.sandbox)),
        Mode::Container(args) => ("container", Some(&args.sandbox)),
        Mode::Microvm => ("microvm", None),
    }
}

/// Reads, checks and enters the spec of a confined `mode`, then takes the
/// host connection.
pub(crate) fn confined(mode: &Mode) -> Result<Startup, u8> {
    let spec = match mode {
        // The port goes onto fds 0 and 1 once its frame is read.
        Mode::Microvm => microvm::read_spec()?,
        _ => GuestSpec::read_frame(std::io::stdin()).map_err(|e| {
            eprintln!("paddock-guest: {}", error_chain(&e));
            EXIT_USAGE
        })?,
    };
    let (subcommand, sandbox) = expected(mode);
    if let Some(sandbox) = sandbox
        && spec.sandbox_id != sandbox
    {
        eprintln!(
            "paddock-guest: invalid spec: it is for sandbox {}, the command line says {sandbox}",
            spec.sandbox_id
        );
        return Err(EXIT_USAGE);
    }
    if spec.tier.mode() != subcommand {
        eprintln!(
            "paddock-guest: invalid spec: it is for `paddock-guest {}`, this is `{subcommand}`",
            spec.tier.mode()
        );
        return Err(EXIT_USAGE);
    }
    let sandbox_id = spec.sandbox_id.clone();
    let setup_failed = |what: &str, e: paddock_jail::JailError| {
        eprintln!("paddock-guest: {what} setup failed: {}", error_chain(&e));
        EXIT_SOFTWARE
    };
    // Before anything else: the jail's clone, landlock and seccomp need a
    // process with a single thread.
    let (spec, tier) = spec.split();
    let (enforcement, connection, egress_env, tier, sealed) = match tier {
        Tier::Jail(jail) => {
            let egress_env = jail.egress_env.clone();
            let spec = spec.with_tier(jail);
            let enforcement = paddock_jail::enter(&spec).map_err(|e| setup_failed("sandbox", e))?;
            let connection = host_connection(conn::take_connection())?;
            (
                enforcement,
                connection,
                egress_env,
                isolation::Tier::Jail,
                false,
            )
        }
        Tier::Container(container) => {
            let tier = if container.engine == "gvisor" {
                isolation::Tier::Gvisor
            } else {
                isolation::Tier::Docker
            };
            let egress_env = container.egress_env.clone();
            let spec = spec.with_tier(container);
            let enforcement =
                paddock_jail::enter_container(&spec).map_err(|e| setup_failed("container", e))?;
            let connect = match mode {
                Mode::Container(args) => args.connect.as_deref(),
                _ => None,
            };
            let connection = container_connection(connect)?;
            (enforcement, connection, egress_env, tier, connect.is_none())
        }
        Tier::MicroVm(vm) => {
            let egress_env = vm
                .network
                .as_ref()
                .map(|n| n.egress_env.clone())
                .unwrap_or_default();
            let spec = spec.with_tier(vm);
            let enforcement =
                paddock_jail::enter_microvm(&spec).map_err(|e| setup_failed("microvm", e))?;
            let connection = host_connection(conn::take_stdio(conn::Seal::None))?;
            (
                enforcement,
                connection,
                egress_env,
                isolation::Tier::MicroVm,
                false,
            )
        }
    };
    Ok(Startup {
        root: PathBuf::from(WORKSPACE_MOUNT),
        enforcement,
        command_filter: Some(command_filter()?),
        sandbox_id: Some(sandbox_id),
        connection,
        egress_env,
        tier,
        connection_sealed: sealed,
    })
}

/// A container's connection, taken once confined (hardening closes every
/// inherited fd above stderr; landlock does not govern connecting to a
/// socket, the seccomp table allows AF_UNIX): the host's socket, which it
/// listens on already, or the attached stdio given mode 0.
fn container_connection(connect: Option<&std::path::Path>) -> Result<conn::Connection, u8> {
    match connect {
        Some(path) => std::os::unix::net::UnixStream::connect(path)
            .and_then(|stream| stream.set_nonblocking(true).map(|()| stream))
            .map(conn::Connection::Socket)
            .map_err(|e| {
                eprintln!(
                    "paddock-guest: connecting to the host at {}: {e}",
                    path.display()
                );
                EXIT_SOFTWARE
            }),
        None => host_connection(conn::take_stdio(conn::Seal::ModeZero)),
    }
}

/// Commands lose openat2 on top of the sandbox filter (see CommandFilter).
fn command_filter() -> Result<paddock_jail::CommandFilter, u8> {
    paddock_jail::CommandFilter::new().map_err(|e| {
        eprintln!(
            "paddock-guest: building the command filter: {}",
            error_chain(&e)
        );
        EXIT_SOFTWARE
    })
}

/// The connection taken, or its error printed (logging starts later).
fn host_connection(taken: anyhow::Result<conn::Connection>) -> Result<conn::Connection, u8> {
    taken.map_err(|e| {
        eprintln!("paddock-guest: taking the host connection: {e:#}");
        EXIT_SOFTWARE
    })
}
