//! Driving `paddock sandbox run` and reading its `--json` result.

use std::ffi::OsString;
use std::path::Path;
use std::process::Command;
use std::time::Duration;

use paddock_proto::{EgressDecision, Enforcement};
use serde::Deserialize;

use crate::bins;
use crate::run::{Finished, run_with_deadline};

/// How long any single CLI call may take before the test calls it hung.
pub const DEFAULT_DEADLINE: Duration = Duration::from_secs(60);

/// The object `paddock sandbox run --json` prints.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct RunJson {
    /// Null when a signal ended the command or it never ran.
    pub exit_code: Option<i32>,
    pub signal: Option<i32>,
    pub timed_out: bool,
    /// Output went past --output-cap.
    pub truncated: bool,
    /// The out-of-memory killer ended the command.
    pub oom_killed: bool,
    pub duration_ms: u64,
    pub sandbox_id: String,
    /// Null only when the sandbox never answered `info`.
    pub enforcement: Option<Enforcement>,
    /// The egress decisions of a sandbox with network.
    #[serde(default)]
    pub egress: Vec<EgressDecision>,
    /// Why the command could not be started.
    pub error: Option<String>,
    pub stdout: String,
    pub stderr: String,
}

impl RunJson {
    /// The enforcement report; panics when the CLI printed none.
    pub fn enforcement(&self) -> &Enforcement {
        self.enforcement
            .as_ref()
            .unwrap_or_else(|| panic!("no enforcement in the result: {self:?}"))
    }
}

/// A `paddock sandbox run` invocation under construction.
#[derive(Debug, Clone, Default)]
pub struct SandboxRun {
    options: Vec<OsString>,
    command: Vec<OsString>,
    stdin: Vec<u8>,
    deadline: Option<Duration>,
    env: Vec<(OsString, OsString)>,
}

impl SandboxRun {
    /// `paddock sandbox run [options] -- argv...`
    pub fn new<S: Into<OsString>>(argv: impl IntoIterator<Item = S>) -> Self {
        Self {
            command: argv.into_iter().map(Into::into).collect(),
            ..Self::default()
        }
    }

    /// `paddock sandbox run [options] -- sh -c script`
    pub fn shell(script: &str) -> Self {
        Self::new(["sh", "-c", script])
    }

    pub fn workspace(mut self, dir: &Path) -> Self {
        self.options.push("--workspace".into());
        self.options.push(dir.into());
        self
    }

    pub fn read_only(mut self) -> Self {
        self.options.push("--read-only".into());
        self
    }

    pub fn network(mut self, mode: &str) -> Self {
        self.options.push("--network".into());
        self.options.push(mode.into());
        self
    }

    pub fn memory(mut self, bytes: u64) -> Self {
        self.options.push("--memory".into());
        self.options.push(bytes.to_string().into());
        self
    }

    pub fn pids(mut self, n: u64) -> Self {
        self.options.push("--pids".into());
        self.options.push(n.to_string().into());
        self
    }

    pub fn cpus(mut self, n: &str) -> Self {
        self.options.push("--cpus".into());
        self.options.push(n.into());
        self
    }

    pub fn tmp_size(mut self, bytes: u64) -> Self {
        self.options.push("--tmp-size".into());
        self.options.push(bytes.to_string().into());
        self
    }

    pub fn output_cap(mut self, bytes: u64) -> Self {
        self.options.push("--output-cap".into());
        self.options.push(bytes.to_string().into());
        self
    }

    /// Any other option, verbatim.
    pub fn option(mut self, arg: &str) -> Self {
        self.options.push(arg.into());
        self
    }

    pub fn timeout_secs(mut self, secs: u64) -> Self {
        self.options.push("--timeout".into());
        self.options.push(secs.to_string().into());
        self
    }

    pub fn stdin(mut self, bytes: &[u8]) -> Self {
        self.stdin = bytes.to_vec();
        self
    }

    pub fn deadline(mut self, d: Duration) -> Self {
        self.deadline = Some(d);
        self
    }

    /// The full command line, without running it.
    /// An environment variable of the paddock process (not the sandbox's).
    pub fn env(mut self, name: &str, value: &str) -> Self {
        self.env.push((name.into(), value.into()));
        self
    }

    pub fn command(&self, json: bool) -> Command {
        let mut cmd = Command::new(bins::paddock());
        cmd.envs(self.env.iter().map(|(k, v)| (k, v)));
        cmd.args(["sandbox", "run"]);
        if json {
            cmd.arg("--json");
        }
        cmd.args(&self.options).arg("--").args(&self.command);
        cmd
    }

    /// Runs with stdio passed through (captured here).
    pub fn run(&self) -> Finished {
        let mut cmd = self.command(false);
        run_with_deadline(
            &mut cmd,
            &self.stdin,
            self.deadline.unwrap_or(DEFAULT_DEADLINE),
        )
    }

    /// Runs with `--json`; panics unless the CLI printed exactly one valid object.
    pub fn run_json(&self) -> (RunJson, Finished) {
        let mut cmd = self.command(true);
        let finished = run_with_deadline(
            &mut cmd,
            &self.stdin,
            self.deadline.unwrap_or(DEFAULT_DEADLINE),
        );
        let parsed: RunJson = serde_json::from_slice(&finished.stdout).unwrap_or_else(|e| {
            panic!(
                "`paddock sandbox run --json` printed no valid result object ({e}); \
                 exit {} stdout:\n{}\nstderr:\n{}",
                finished.code(),
                finished.stdout_str(),
                finished.stderr_str()
            )
        });
        (parsed, finished)
    }
}
