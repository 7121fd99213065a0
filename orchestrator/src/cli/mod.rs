//! The command line surface: one file per command's arguments, and the
//! flag groups several commands share ([`common`]). A command takes only
//! the groups that apply to it, so its `--help` lists only those.

mod common;
mod doctor;
mod files;
mod memory;
mod process;
mod run;
mod runs;
mod sandbox;
mod serve;
mod session;
mod snapshot;
mod volume;
mod workspace;

use clap::{Parser, Subcommand};

use crate::logging::LogFormat;

pub use common::{
    BackendArgs, DEFAULT_DATA_DIR, DataDirArgs, EgressArgs, Layer, LimitArgs, NetworkArgs, RmArgs,
    SecretArg, ServerArgs, ServerBackendArgs,
};
pub use doctor::DoctorCli;
pub use files::{FilesCli, FilesCommand};
pub use memory::{MemoryCli, MemoryCommand};
pub use process::{ProcessCli, ProcessCommand};
pub use run::{GoalArgs, Mode};
pub use runs::{RunsCli, RunsCommand};
pub use sandbox::{
    CreateArgs, ExecArgs, InfoArgs, LsArgs, NetworkChangeArgs, PauseArgs, PauseModeArg,
    PortForwardArgs, ResumeArgs, RunArgs, SandboxCommand, ShellArgs,
};
pub use serve::ServeArgs;
pub use session::{SessionCli, SessionCommand};
pub use snapshot::{RestoreArgs, SnapshotCli, SnapshotCommand};
pub use volume::{VolumeCli, VolumeCommand, VolumeSnapshotCommand};
pub use workspace::{WorkspaceCli, WorkspaceCommand};

#[derive(Debug, Parser)]
#[command(name = "paddock", version, about = "Sandboxed agent orchestrator")]
pub struct Cli {
    /// How paddock's own warnings are printed on stderr: human sentences, or
    /// one JSON object per line.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Human, env = "PADDOCK_LOG_FORMAT")]
    pub log_format: LogFormat,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the HTTP API server that owns long-lived sandboxes.
    Serve(ServeArgs),
    /// Create, use and inspect sandboxes.
    #[command(subcommand)]
    Sandbox(SandboxCommand),
    /// Files of a server's sandbox (needs --server).
    Files(FilesCli),
    /// Workspace snapshots on the server: take, list, restore, fork, move archives.
    Snapshot(SnapshotCli),
    /// Workspaces on the server: create (from a directory), list, download, delete (needs --server).
    Workspace(WorkspaceCli),
    /// Named volumes on the server, with a size quota: create, list, delete (needs --server).
    Volume(VolumeCli),
    /// Background processes of a server's sandbox: start, list, read output,
    /// write stdin, signal (needs --server).
    Process(ProcessCli),
    /// Run a goal with an agent, here (embedded store, native sandboxes), or
    /// on the server of --server / PADDOCK_SERVER.
    ///
    /// Streams the plan, tool calls, results and progress, then prints the
    /// review. With a server, the workspace directory is uploaded as one
    /// archive and the run happens there (never here); Ctrl-C cancels it.
    /// Exit codes: 0 the goal is met; 1 not met or unsure (or the
    /// agent asked a question); 2 usage error; 3 the run failed or a budget
    /// ran out; 125 paddock itself failed (or the server is unreachable);
    /// 130 cancelled (Ctrl-C).
    Run(Box<GoalArgs>),
    /// One run: show, cancel, list its subagent runs, print its events
    /// (local data dir, or the server of --server).
    Runs(RunsCli),
    /// Agent sessions: list, show, rename, archive, delete, fork, read events
    /// (local data dir, or the server of --server).
    Session(SessionCli),
    /// Project memory kept across sessions: list, search, add, show,
    /// approve a proposed record, remove (local data dir, or the server of
    /// --server). Exit codes: 2 bad input; 125 paddock itself failed.
    Memory(MemoryCli),
    /// List the stored rows that failed validation when read (quarantined
    /// and skipped so their sessions go on): local data dir, or the
    /// caller's own on the server of --server.
    Doctor(DoctorCli),
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use clap::CommandFactory;
    use paddock_proto::NetworkPolicy;

    use super::*;

    fn run_args(argv: &[&str]) -> RunArgs {
        let cli = Cli::try_parse_from(argv).unwrap();
        match cli.command {
            Command::Sandbox(SandboxCommand::Run(args)) => *args,
            other => panic!("not a run: {other:?}"),
        }
    }

    #[test]
    fn volume_takes_name_path_and_an_optional_read_only_mark() {
        let cli = Cli::try_parse_from([
            "paddock",
            "sandbox",
            "create",
            "--volume",
            "cache:/cache",
            "--volume",
            "data:/srv/data:ro",
        ])
        .unwrap();
        let Command::Sandbox(SandboxCommand::Create(args)) = cli.command else {
            panic!("not a create");
        };
        let mounts: Vec<_> = args
            .volumes
            .iter()
            .map(|m| (m.name.as_str(), m.path.as_str(), m.read_only))
            .collect();
        assert_eq!(
            mounts,
            [("cache", "/cache", false), ("data", "/srv/data", true)]
        );
        for bad in ["cache", "cache:/etc/x", "cache:relative", "cache:/"] {
            let err = Cli::try_parse_from(["paddock", "sandbox", "create", "--volume", bad])
                .unwrap_err()
                .to_string();
            assert!(err.contains(bad), "{bad}: {err}");
        }
    }

    #[test]
    fn the_cli_is_consistent() {
        Cli::command().debug_assert();
    }

    #[test]
    fn writable_is_repeatable_and_one_path_each() {
        let args = run_args(&[
            "paddock",
            "sandbox",
            "run",
            "--writable",
            "src",
            "--writable",
            "docs/a.md",
            "--",
            "true",
        ]);
        assert_eq!(args.writable, ["src", "docs/a.md"]);
        assert_eq!(args.command, ["true"]);
        assert!(!args.read_only);
    }

    #[test]
    fn run_parses_every_option_and_keeps_the_command_verbatim() {
        let args = run_args(&[
            "paddock",
            "sandbox",
            "run",
            "--workspace",
            "/w",
            "--read-only",
            "--network",
            "full",
            "--memory",
            "512M",
            "--pids",
            "64",
            "--cpus",
            "1.5",
            "--timeout",
            "2",
            "--allow-downgrade",
            "landlock",
            "seccomp",
            "--json",
            "--",
            "sh",
            "-c",
            "echo --json",
        ]);
        assert_eq!(args.workspace, Some(PathBuf::from("/w")));
        assert!(args.read_only && args.json);
        assert_eq!(args.network.policy, NetworkPolicy::Full);
        assert_eq!(
            (
                args.limits.memory,
                args.limits.pids,
                args.limits.cpus,
                args.timeout
            ),
            (Some(512 << 20), Some(64), Some(1500), Some(2000))
        );
        assert_eq!(args.allow_downgrade, vec![Layer::Landlock, Layer::Seccomp]);
        assert_eq!(args.command, ["sh", "-c", "echo --json"]);
    }

    #[test]
    fn the_command_may_follow_without_a_separator() {
        let args = run_args(&["paddock", "sandbox", "run", "-e", "A=b=c", "ls", "-la"]);
        assert_eq!(args.command, ["ls", "-la"]);
        assert_eq!(args.env, [("A".to_owned(), "b=c".to_owned())]);
        assert_eq!(args.network.policy, NetworkPolicy::None);
    }

    #[test]
    fn client_commands_parse_with_a_server() {
        let cli = Cli::try_parse_from([
            "paddock",
            "sandbox",
            "exec",
            "--server",
            "http://127.0.0.1:1",
            "sb-1",
            "-e",
            "A=1",
            "--",
            "sh",
            "-c",
            "echo --json",
        ])
        .unwrap();
        match cli.command {
            Command::Sandbox(SandboxCommand::Exec(args)) => {
                assert_eq!(args.server.server.as_deref(), Some("http://127.0.0.1:1"));
                assert_eq!(args.id, "sb-1");
                assert_eq!(args.command, ["sh", "-c", "echo --json"]);
                assert!(!args.json);
            }
            other => panic!("not an exec: {other:?}"),
        }
        let cli = Cli::try_parse_from(["paddock", "sandbox", "info", "sb-1", "--json"]).unwrap();
        assert!(matches!(
            cli.command,
            Command::Sandbox(SandboxCommand::Info(InfoArgs {
                id: Some(_),
                json: true,
                ..
            }))
        ));
        let cli = Cli::try_parse_from(["paddock", "serve", "--listen", "127.0.0.1:0"]).unwrap();
        assert!(
            matches!(cli.command, Command::Serve(ServeArgs { ref listen, .. }) if listen == "127.0.0.1:0")
        );
    }

    #[test]
    fn a_volume_is_created_with_a_size_in_bytes_or_units() {
        let cli = Cli::try_parse_from([
            "paddock",
            "volume",
            "create",
            "cache",
            "--size",
            "64M",
            "--server",
            "http://h:1",
        ])
        .unwrap();
        let Command::Volume(VolumeCli {
            command:
                VolumeCommand::Create {
                    name,
                    size,
                    json,
                    from_snapshot: None,
                },
            ..
        }) = cli.command
        else {
            panic!("not volume create: {:?}", cli.command);
        };
        assert_eq!((name.as_str(), size, json), ("cache", 64 << 20, false));
        // the size is required: a volume has a quota
        assert!(
            Cli::try_parse_from([
                "paddock",
                "volume",
                "create",
                "cache",
                "--server",
                "http://h:1"
            ])
            .is_err()
        );
        let rm = Cli::try_parse_from([
            "paddock",
            "volume",
            "rm",
            "a",
            "b",
            "--server",
            "http://h:1",
        ]);
        assert!(rm.is_ok());
        let from = Cli::try_parse_from([
            "paddock",
            "volume",
            "create",
            "copy",
            "--size",
            "1G",
            "--from-snapshot",
            "cache/monday",
            "--server",
            "http://h:1",
        ])
        .unwrap();
        assert!(matches!(
            from.command,
            Command::Volume(VolumeCli {
                command: VolumeCommand::Create { from_snapshot: Some(ref s), .. },
                ..
            }) if s == "cache/monday"
        ));
        for args in [
            &["paddock", "volume", "snapshot", "create", "cache", "monday"][..],
            &["paddock", "volume", "snapshot", "ls", "cache"],
            &[
                "paddock", "volume", "snapshot", "rm", "cache", "monday", "tuesday",
            ][..],
        ] {
            let with_server = [args, &["--server", "http://h:1"][..]].concat();
            assert!(Cli::try_parse_from(&with_server).is_ok(), "{args:?}");
        }
    }

    #[test]
    fn sandbox_create_takes_an_on_idle_action_or_leaves_it_to_the_server() {
        let on_idle = |extra: &[&str]| {
            let mut argv = vec!["paddock", "sandbox", "create", "--server", "http://h:1"];
            argv.extend_from_slice(extra);
            match Cli::try_parse_from(argv).map(|cli| cli.command) {
                Ok(Command::Sandbox(SandboxCommand::Create(args))) => Ok(args.on_idle),
                Ok(other) => panic!("not sandbox create: {other:?}"),
                Err(err) => Err(err.to_string()),
            }
        };
        use paddock_core::store::OnIdle;
        assert_eq!(on_idle(&[]), Ok(None));
        assert_eq!(on_idle(&["--on-idle", "pause"]), Ok(Some(OnIdle::Pause)));
        assert_eq!(on_idle(&["--on-idle", "stop"]), Ok(Some(OnIdle::Stop)));
        let refused = on_idle(&["--on-idle", "sleep"]).unwrap_err();
        assert!(
            refused.contains("`sleep` is not `stop` or `pause`"),
            "{refused}"
        );
    }

    #[test]
    fn options_are_taken_only_by_the_commands_they_apply_to() {
        let parses = |args: &[&str]| Cli::try_parse_from(args).is_ok();
        // A server for the commands that talk to one.
        for args in [
            &["paddock", "sandbox", "ls", "--server", "http://h:1"][..],
            &["paddock", "files", "ls", "--server", "http://h:1", "sb-1"],
            &["paddock", "snapshot", "ls", "--server", "http://h:1"],
            &["paddock", "session", "ls", "--server", "http://h:1"],
            &["paddock", "runs", "show", "--server", "http://h:1", "run_1"],
            &["paddock", "workspace", "ls", "--server", "http://h:1"],
            &["paddock", "volume", "ls", "--server", "http://h:1"],
            &["paddock", "process", "ls", "--server", "http://h:1", "sb-1"],
            // `paddock run` runs on a named server.
            &[
                "paddock",
                "run",
                "goal",
                "--model",
                "scripted:x",
                "--server",
                "http://h:1",
            ],
        ] {
            assert!(parses(args), "{args:?}");
        }
        // A guest binary for the commands that make sandboxes here.
        for args in [
            &["paddock", "serve", "--guest-bin", "/g"][..],
            &["paddock", "sandbox", "run", "--guest-bin", "/g", "true"],
            // info checks each backend, which needs the guest binary.
            &["paddock", "sandbox", "info", "--guest-bin", "/g"],
            &[
                "paddock",
                "run",
                "goal",
                "--model",
                "scripted:x",
                "--guest-bin",
                "/g",
            ],
        ] {
            assert!(parses(args), "{args:?}");
        }
        for args in [
            &["paddock", "serve", "--server", "http://h:1"][..],
            &[
                "paddock",
                "sandbox",
                "exec",
                "--guest-bin",
                "/g",
                "sb-1",
                "true",
            ],
            &["paddock", "files", "ls", "--guest-bin", "/g", "sb-1"],
            &["paddock", "runs", "show", "--guest-bin", "/g", "run_1"],
            // reading the data dir or a server makes no sandbox here
            &["paddock", "session", "ls", "--guest-bin", "/g"],
            &["paddock", "memory", "ls", "--backend", "docker"],
            &["paddock", "doctor", "--image", "x"],
            // no network here: no egress settings
            &["paddock", "sandbox", "shell", "--egress-ca", "/ca.pem"],
            &[
                "paddock",
                "sandbox",
                "info",
                "--egress-nat-pool",
                "10.1.0.0/16",
            ],
        ] {
            assert!(!parses(args), "{args:?} should be refused");
        }
        // --log-format is everyone's.
        assert!(parses(&[
            "paddock",
            "sandbox",
            "info",
            "--log-format",
            "json"
        ]));
    }

    /// Every command, by its words after `paddock`, with its long help
    /// as `paddock CMD --help` prints it.
    fn every_help() -> Vec<(String, String)> {
        fn walk(command: &mut clap::Command, path: &str, out: &mut Vec<(String, String)>) {
            if path != "paddock" {
                out.push((
                    path.trim_start_matches("paddock ").to_owned(),
                    command.render_long_help().to_string(),
                ));
            }
            for sub in command.get_subcommands_mut() {
                if sub.get_name() != "help" {
                    let name = format!("{path} {}", sub.get_name());
                    walk(sub, &name, out);
                }
            }
        }
        let mut root = Cli::command();
        root.build();
        let mut out = Vec::new();
        walk(&mut root, "paddock", &mut out);
        out
    }

    #[test]
    fn help_lists_backend_and_egress_flags_only_where_they_apply() {
        // The commands that make or check sandboxes on this host.
        const BACKEND_HERE: [&str; 5] = [
            "serve",
            "sandbox run",
            "sandbox shell",
            "sandbox info",
            "run",
        ];
        // Of those, the ones whose sandboxes may have network.
        const EGRESS_HERE: [&str; 3] = ["serve", "sandbox run", "run"];
        let helps = every_help();
        assert!(helps.len() > 50, "{} commands", helps.len());
        for (command, help) in &helps {
            let backend = BACKEND_HERE.contains(&command.as_str());
            let egress = EGRESS_HERE.contains(&command.as_str());
            for flag in ["--guest-bin", "--egress-"] {
                let expected = if flag == "--guest-bin" {
                    backend
                } else {
                    egress
                };
                assert_eq!(
                    help.contains(flag),
                    expected,
                    "`paddock {command} --help` {} {flag}:\n{help}",
                    if expected { "misses" } else { "lists" }
                );
            }
        }
        // The ones that read the local data dir or talk to a server only.
        for command in [
            "session ls",
            "memory ls",
            "doctor",
            "runs show",
            "sandbox exec",
            "files ls",
        ] {
            let (_, help) = helps.iter().find(|(c, _)| c == command).unwrap();
            for flag in ["--guest-bin", "--image", "--egress-nat-pool", "--egress-ca"] {
                assert!(
                    !help.contains(flag),
                    "`paddock {command} --help` lists {flag}"
                );
            }
        }
    }

    #[test]
    fn the_limits_are_one_group_for_every_command_that_takes_them() {
        let helps = every_help();
        let with_memory: Vec<&str> = helps
            .iter()
            .filter(|(_, help)| help.contains("--memory <BYTES>"))
            .map(|(command, _)| command.as_str())
            .collect();
        assert_eq!(
            with_memory,
            [
                "sandbox run",
                "sandbox create",
                "snapshot restore",
                "snapshot fork"
            ]
        );
        for (command, help) in &helps {
            if with_memory.contains(&command.as_str()) {
                for flag in ["--pids <N>", "--cpus <N>", "--tmp-size <BYTES>"] {
                    assert!(
                        help.contains(flag),
                        "`paddock {command} --help` misses {flag}"
                    );
                }
            }
        }
        let parsed = Cli::try_parse_from([
            "paddock",
            "snapshot",
            "restore",
            "snap_1",
            "--cpus",
            "0.5",
            "--tmp-size",
            "64M",
        ])
        .unwrap();
        let Command::Snapshot(SnapshotCli {
            command: SnapshotCommand::Restore(restore),
            ..
        }) = parsed.command
        else {
            panic!("not a restore");
        };
        let limits = restore.limits.request();
        assert_eq!(
            (
                limits.memory_bytes,
                limits.pids,
                limits.cpu_millis,
                limits.tmp_bytes
            ),
            (None, None, Some(500), Some(64 << 20))
        );
    }

    #[test]
    fn every_argument_has_a_help_line() {
        fn walk(command: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in command.get_arguments() {
                if arg.is_hide_set() || ["help", "version"].contains(&arg.get_id().as_str()) {
                    continue;
                }
                if arg.get_help().is_none() {
                    missing.push(format!("{path} {}", arg.get_id()));
                }
            }
            for sub in command.get_subcommands() {
                if sub.get_about().is_none() && sub.get_name() != "help" {
                    missing.push(format!("{path} {} (the command)", sub.get_name()));
                }
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let mut missing = Vec::new();
        walk(
            &<Cli as clap::CommandFactory>::command(),
            "paddock",
            &mut missing,
        );
        assert!(missing.is_empty(), "no help line: {missing:#?}");
    }

    #[test]
    fn a_command_is_required() {
        assert!(Cli::try_parse_from(["paddock", "sandbox", "run"]).is_err());
        assert!(
            Cli::try_parse_from(["paddock", "sandbox", "run", "--memory", "12Q", "true"]).is_err()
        );
    }
}
