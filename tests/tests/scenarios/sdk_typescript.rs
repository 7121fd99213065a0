//! Paddock's own TypeScript SDK (sdk/typescript) against `paddock serve`:
//! its suite, sdk/typescript/test/*.test.mjs, run by Node's built-in test
//! runner (`node --test`), drives a live server through the SDK as the
//! packed tarball installed it (scripts/sdk-typescript-setup.sh packs it,
//! installs it into a directory of its own and prints that directory):
//! sandboxes, exec, files, processes, snapshots restored and forked,
//! archives, sessions and runs with a scripted model, steering, cancel,
//! events read live and resumed after a dropped connection, typed errors,
//! and the packed OpenAPI document against the one the server serves.
//!
//! The suite needs that directory as `PADDOCK_SDK_TYPESCRIPT`; without it
//! the test says SKIPPED, unless `PADDOCK_REQUIRE_SDK=1` or `CI` is set,
//! when it fails: the rule of `paddock_test_support::require`, whose `Need`
//! has no SDK variant yet.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use paddock_tests::host::require_root;
use paddock_tests::serve;

/// The suite's tenant; a token at least the server's shortest (16 characters).
const TENANT: (&str, &str) = ("sdk-ts", "sdk-typescript-suite-token");

/// The whole suite's bound (it takes about 20 s here).
const SUITE_TIMEOUT: Duration = Duration::from_secs(600);

/// The variable naming the installed SDK's directory, and the one that requires it.
const SDK_VAR: &str = "PADDOCK_SDK_TYPESCRIPT";
const REQUIRE_VAR: &str = "PADDOCK_REQUIRE_SDK";

/// The server the suite expects: the native backend, agent runs (every
/// `paddock serve` runs them; the suite's runs use an inline scripted model).
const CONFIG: &str = "[[backends]]\nkind = \"native\"\n";

#[test]
fn the_typescript_sdk_works_against_paddock_serve() {
    let what = "the TypeScript SDK suite";
    let Some(sdk_dir) = sdk_dir(what) else {
        return;
    };
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("serve.toml");
    std::fs::write(&config, CONFIG).unwrap();
    let server_log = dir.path().join("server.log");
    let server = Server::start(dir.path(), &config, &server_log);

    let sdk = repo_root().join("sdk/typescript");
    let out_path = dir.path().join("node.out");
    // `node --test` over test/*.test.mjs, one file at a time (they share the
    // tenant's sandbox quota), reporting TAP
    let mut node = Command::new("node");
    node.arg("scripts/test.mjs")
        .current_dir(&sdk)
        .env("PADDOCK_URL", &server.url)
        .env("PADDOCK_TOKEN", TENANT.1)
        .env(SDK_VAR, &sdk_dir)
        .env_remove("NODE_OPTIONS")
        .env_remove("NODE_PATH")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(Stdio::from(
            std::fs::File::options()
                .append(true)
                .open(&out_path)
                .unwrap(),
        ));
    let started = Instant::now();
    let mut child = node
        .spawn()
        .unwrap_or_else(|e| panic!("{what}: starting node: {e} (is Node.js installed?)"));
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > SUITE_TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(Duration::from_millis(200));
    };
    let output = read_lossy(&out_path);
    if !status.is_some_and(|s| s.success()) {
        server.stop();
        panic!(
            "{what} {} after {} s:\n{output}\n--- the server's log (last 80 lines):\n{}",
            match status {
                Some(status) => format!("failed ({status})"),
                None => format!("did not end within {} s", SUITE_TIMEOUT.as_secs()),
            },
            started.elapsed().as_secs(),
            tail(&read_lossy(&server_log), 80),
        );
    }
    print!("{output}");
    // exit 0 with every case run and passed: the TAP totals say so
    let totals = Totals::of(&output);
    assert!(
        totals.pass > 0
            && totals.fail == 0
            && totals.skipped == 0
            && totals.todo == 0
            && totals.cancelled == 0,
        "{what}: {totals:?}"
    );
    server.stop();
}

/// The counts of a TAP run's closing comments (`# pass 21`, ...), summed
/// over runs (an older Node.js runs the files one by one).
#[derive(Debug, Default)]
struct Totals {
    pass: u64,
    fail: u64,
    skipped: u64,
    todo: u64,
    cancelled: u64,
}

impl Totals {
    fn of(output: &str) -> Self {
        let mut totals = Totals::default();
        for line in output.lines() {
            let mut words = line.split_whitespace();
            let (Some("#"), Some(name), Some(count), None) =
                (words.next(), words.next(), words.next(), words.next())
            else {
                continue;
            };
            let Ok(count) = count.parse::<u64>() else {
                continue;
            };
            match name {
                "pass" => totals.pass += count,
                "fail" => totals.fail += count,
                "skipped" => totals.skipped += count,
                "todo" => totals.todo += count,
                "cancelled" => totals.cancelled += count,
                _ => {}
            }
        }
        totals
    }
}

/// The installed SDK's directory from `PADDOCK_SDK_TYPESCRIPT`, or None
/// after printing SKIPPED; panics instead when the run requires the suite.
fn sdk_dir(what: &str) -> Option<PathBuf> {
    match std::env::var_os(SDK_VAR).filter(|v| !v.is_empty()) {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            assert!(
                dir.join("node_modules/@paddock/sdk/package.json").is_file(),
                "{what}: {SDK_VAR}={} holds no installed @paddock/sdk (run scripts/sdk-typescript-setup.sh)",
                dir.display()
            );
            Some(dir)
        }
        None => {
            let reason = format!(
                "{SDK_VAR} is not set (scripts/sdk-typescript-setup.sh packs and installs the SDK and prints it)"
            );
            let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty());
            let required = std::env::var(REQUIRE_VAR).as_deref() == Ok("1") || set("CI");
            assert!(
                !required,
                "{what}: the SDK suite is required here ({REQUIRE_VAR} or CI is set) but {reason}"
            );
            eprintln!("SKIPPED: {what}: {reason}");
            None
        }
    }
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("the tests crate lies in the repository")
        .to_path_buf()
}

fn read_lossy(path: &Path) -> String {
    let mut bytes = Vec::new();
    if let Ok(mut file) = std::fs::File::open(path) {
        let _ = file.read_to_end(&mut bytes);
    }
    String::from_utf8_lossy(&bytes).into_owned()
}

fn tail(text: &str, lines: usize) -> String {
    let all: Vec<&str> = text.lines().collect();
    all[all.len().saturating_sub(lines)..].join("\n")
}

/// `paddock serve` for the suite's tenant, its log in a file; stopped with
/// SIGTERM (its sandboxes and runs go with it), killed if it does not stop.
struct Server {
    child: Option<Child>,
    url: String,
}

impl Server {
    fn start(dir: &Path, config: &Path, log: &Path) -> Self {
        let tokens = format!("{}:{}", TENANT.0, TENANT.1);
        let node = format!("sdk-ts-{}", std::process::id());
        let mut command = serve::command(&node, &dir.join("server"), &tokens);
        command
            .arg("--config")
            .arg(config)
            .stderr(std::fs::File::create(log).unwrap());
        let (child, url) = serve::spawn(command).unwrap();
        Self {
            child: Some(child),
            url: url.trim_end_matches('/').to_owned(),
        }
    }

    fn stop(mut self) {
        self.terminate();
    }

    fn terminate(&mut self) {
        let Some(mut child) = self.child.take() else {
            return;
        };
        let _ = kill(Pid::from_raw(child.id() as i32), Signal::SIGTERM);
        let deadline = Instant::now() + Duration::from_secs(30);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.terminate();
    }
}
