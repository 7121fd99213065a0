//! The real E2B Python SDK against `paddock serve`: the pytest suite in
//! tests/e2b/python (the `e2b` package pinned by scripts/e2b-setup.sh)
//! drives the server's E2B REST API and its envd routes, pointed at the
//! server by `E2B_API_URL` and `E2B_SANDBOX_URL`, with a tenant's token as
//! `E2B_API_KEY` and a second tenant's for the isolation cases.
//!
//! The same server then runs the real E2B JavaScript SDK's suite,
//! tests/e2b/js (the `e2b` npm package pinned by its package-lock.json and
//! installed by scripts/e2b-js-setup.sh), with Node's own test runner.
//!
//! The suites need the venv's python as `PADDOCK_E2B_PYTHON` and the JS
//! SDK's directory (node_modules' parent) as `PADDOCK_E2B_JS`; without one
//! the test says SKIPPED, unless `PADDOCK_REQUIRE_E2B=1` or `CI` is set
//! (scripts/test.sh sets all three), when it fails: the rule of
//! `paddock_test_support::require`, whose `Need` has no E2B variant yet.
//!
//! One test per backend the suite runs on (native, docker, gVisor), each a
//! server whose config names that backend alone, so E2B's template "base"
//! (the server's default backend) is it. A backend this host cannot run is
//! skipped with its reason, or fails the run where it is required.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use paddock_tests::backends::{self, Kind};
use paddock_tests::host::require_root;
use paddock_tests::serve;

/// Two tenants, each at least the server's shortest token (16 characters).
const TENANT: (&str, &str) = ("e2b-a", "e2b-sdk-suite-tenant-a-token");
const OTHER_TENANT: (&str, &str) = ("e2b-b", "e2b-sdk-suite-tenant-b-token");

/// The ports domain the server routes envd's host names under.
const ENVD_DOMAIN: &str = "e2b.paddock.test";

/// The whole suite's bound; one test's sandboxes live 120 s at most.
const SUITE_TIMEOUT: Duration = Duration::from_secs(600);

/// The variable naming the venv's python, the one naming the JS SDK's
/// directory, and the one that requires them.
const PYTHON_VAR: &str = "PADDOCK_E2B_PYTHON";
const JS_VAR: &str = "PADDOCK_E2B_JS";
const REQUIRE_VAR: &str = "PADDOCK_REQUIRE_E2B";

#[test]
fn the_e2b_sdks_work_against_a_native_backend() {
    suite_on("native", "[[backends]]\nkind = \"native\"\n");
}

#[test]
fn the_e2b_sdks_work_against_a_docker_backend() {
    if available(Kind::Docker) {
        suite_on("docker", &container_table("docker"));
    }
}

#[test]
fn the_e2b_sdks_work_against_a_gvisor_backend() {
    if available(Kind::Gvisor) {
        // gVisor offers no landlock: the server must allow the downgrade
        let table = format!(
            "allow_downgrade = [\"landlock\"]\n{}",
            container_table("gvisor")
        );
        suite_on("gvisor", &table);
    }
}

/// The smoke subset (`-m smoke`): a microVM boots under TCG here, seconds
/// per sandbox, so the whole suite would cost minutes.
#[test]
fn the_e2b_python_sdk_smoke_works_against_a_microvm_backend() {
    if available(Kind::Microvm) {
        suite_with(
            "microvm",
            "[[backends]]\nkind = \"microvm\"\n",
            Some("smoke"),
        );
    }
}

fn container_table(kind: &str) -> String {
    format!("[[backends]]\nkind = \"{kind}\"\nimage = \"paddock-sandbox:bookworm\"\n")
}

/// Whether this host runs `kind`; says SKIPPED (or panics where the run
/// requires it) when it does not.
fn available(kind: Kind) -> bool {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime
        .block_on(backends::for_test(kind, "the E2B SDK suite"))
        .is_some()
}

/// Runs the suite against a server whose only backend is `table`.
fn suite_on(backend: &str, table: &str) {
    suite_with(backend, table, None);
}

/// Runs the suite, or the cases of one pytest marker, against a server
/// whose only backend is `table`.
fn suite_with(backend: &str, table: &str, marker: Option<&str>) {
    let what = match marker {
        Some(marker) => format!("the E2B SDK suite's {marker} cases [{backend}]"),
        None => format!("the E2B SDK suite [{backend}]"),
    };
    let Some(python) = e2b_python(&what) else {
        return;
    };
    // the JS suite runs with the whole Python suite, not a marker's cases
    let js = match marker {
        None => e2b_js(&what),
        Some(_) => None,
    };
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("serve.toml");
    // E2B's host routing of envd (`49983-{id}.{domain}`) on this domain
    std::fs::write(
        &config,
        format!("{table}[ports]\ndomain = \"{ENVD_DOMAIN}\"\n"),
    )
    .unwrap();
    let server_log = dir.path().join("server.log");
    let server = Server::start(backend, dir.path(), &config, &server_log);

    let out_path = dir.path().join("pytest.out");
    let suite = repo_root().join("tests/e2b/python");
    let mut pytest = Command::new(&python);
    pytest
        .args(["-m", "pytest", "-q", "-rA", "--tb=short", "--color=no"])
        .args(["-p", "no:cacheprovider"])
        .args(marker.map(|m| ["-m", m]).into_iter().flatten())
        .arg(&suite)
        .current_dir(&suite)
        .env("E2B_API_URL", &server.url)
        .env("E2B_SANDBOX_URL", &server.url)
        .env("E2B_API_KEY", TENANT.1)
        .env("E2B_TEST_OTHER_API_KEY", OTHER_TENANT.1)
        .env("E2B_TEST_ENVD_DOMAIN", ENVD_DOMAIN)
        // the E2B home on Paddock is the workspace (docs/e2b.md)
        .env("E2B_TEST_DIR", "/workspace")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env_remove("E2B_DEBUG")
        .env_remove("E2B_DOMAIN")
        .env_remove("E2B_ACCESS_TOKEN")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&out_path).unwrap())
        .stderr(Stdio::from(
            std::fs::File::options()
                .append(true)
                .open(&out_path)
                .unwrap(),
        ));
    let started = Instant::now();
    let mut child = pytest
        .spawn()
        .unwrap_or_else(|e| panic!("starting {} -m pytest: {e}", python.display()));
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
    // exit 0 with every case run (of the marker's, when one is given):
    // pytest's last line counts passes only, and deselections
    let last = output.lines().last().unwrap_or_default();
    assert!(
        last.contains(" passed")
            && !last.contains("skipped")
            && (marker.is_some() || !last.contains("deselected")),
        "{what}: {last}"
    );
    if let Some(js) = js {
        let out_path = dir.path().join("node.out");
        match run_js_suite(&server.url, &js, &out_path) {
            Ok(output) => print!("{output}"),
            Err(failure) => {
                server.stop();
                panic!(
                    "the E2B JS SDK suite [{backend}] {failure}\n\
                     --- the server's log (last 80 lines):\n{}",
                    tail(&read_lossy(&server_log), 80),
                );
            }
        }
    }
    server.stop();
}

/// Runs tests/e2b/js with Node's test runner (`node --test`, TAP output)
/// against the server at `server_url`, with the SDK scripts/e2b-js-setup.sh
/// installed in `js_dir` on `NODE_PATH`, its output in `out_path`: the
/// output when every case ran and passed, else what went wrong and it.
fn run_js_suite(server_url: &str, js_dir: &Path, out_path: &Path) -> Result<String, String> {
    let suite = repo_root().join("tests/e2b/js");
    // each *.test.mjs by name: `node --test DIR` reads a path on Node 20, a
    // glob pattern from Node 21 on
    let mut files: Vec<PathBuf> = std::fs::read_dir(&suite)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|p| p.to_str().is_some_and(|p| p.ends_with(".test.mjs")))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no *.test.mjs in {}", suite.display());
    let mut node = Command::new("node");
    node.args(["--test", "--test-reporter=tap", "--test-concurrency=1"])
        .args(&files)
        .current_dir(&suite)
        // the suite loads the SDK with require(), which reads NODE_PATH (an
        // ES import would not)
        .env("NODE_PATH", js_dir.join("node_modules"))
        .env_remove("NODE_OPTIONS")
        .env("E2B_API_URL", server_url)
        .env("E2B_SANDBOX_URL", server_url)
        .env("E2B_API_KEY", TENANT.1)
        .env("E2B_TEST_OTHER_API_KEY", OTHER_TENANT.1)
        // the E2B home on Paddock is the workspace (docs/e2b.md)
        .env("E2B_TEST_DIR", "/workspace")
        .env_remove("E2B_DEBUG")
        .env_remove("E2B_DOMAIN")
        .env_remove("E2B_ACCESS_TOKEN")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(out_path).unwrap())
        .stderr(Stdio::from(
            std::fs::File::options()
                .append(true)
                .open(out_path)
                .unwrap(),
        ));
    let started = Instant::now();
    let mut child = node
        .spawn()
        .unwrap_or_else(|e| panic!("starting node --test (is Node.js installed?): {e}"));
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
    let output = read_lossy(out_path);
    let took = started.elapsed().as_secs();
    match status {
        None => {
            return Err(format!(
                "did not end within {} s:\n{output}",
                SUITE_TIMEOUT.as_secs()
            ));
        }
        Some(status) if !status.success() => {
            return Err(format!("failed ({status}) after {took} s:\n{output}"));
        }
        Some(_) => {}
    }
    // exit 0 with every case run: the TAP summary counts each kind of end
    let count = |kind: &str| {
        let prefix = format!("# {kind} ");
        output
            .lines()
            .find_map(|line| line.strip_prefix(prefix.as_str()))
            .and_then(|n| n.trim().parse::<u64>().ok())
    };
    let tests = count("tests").unwrap_or(0);
    let all_passed = tests > 0
        && count("pass") == Some(tests)
        && ["fail", "cancelled", "skipped", "todo"]
            .iter()
            .all(|kind| count(kind) == Some(0));
    if all_passed {
        Ok(output)
    } else {
        Err(format!(
            "did not run every case to a pass in {took} s:\n{output}"
        ))
    }
}

/// The venv's python from `PADDOCK_E2B_PYTHON`, or None after printing
/// SKIPPED; panics instead when the run requires the suite.
fn e2b_python(what: &str) -> Option<PathBuf> {
    match std::env::var_os(PYTHON_VAR).filter(|v| !v.is_empty()) {
        Some(python) => {
            let python = PathBuf::from(python);
            assert!(
                python.is_file(),
                "{what}: {PYTHON_VAR}={} is not a file (run scripts/e2b-setup.sh)",
                python.display()
            );
            Some(python)
        }
        None => {
            let reason = format!(
                "{PYTHON_VAR} is not set (scripts/e2b-setup.sh installs the SDK and prints it)"
            );
            let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty());
            let required = std::env::var(REQUIRE_VAR).as_deref() == Ok("1") || set("CI");
            assert!(
                !required,
                "{what}: the E2B SDK is required here ({REQUIRE_VAR} or CI is set) but {reason}"
            );
            eprintln!("SKIPPED: {what}: {reason}");
            None
        }
    }
}

/// The JS SDK's directory from `PADDOCK_E2B_JS`, or None after printing
/// SKIPPED; panics instead when the run requires the suite.
fn e2b_js(what: &str) -> Option<PathBuf> {
    match std::env::var_os(JS_VAR).filter(|v| !v.is_empty()) {
        Some(dir) => {
            let dir = PathBuf::from(dir);
            assert!(
                dir.join("node_modules/e2b/package.json").is_file(),
                "{what}: {JS_VAR}={} holds no node_modules/e2b (run scripts/e2b-js-setup.sh)",
                dir.display()
            );
            Some(dir)
        }
        None => {
            let reason = format!(
                "{JS_VAR} is not set (scripts/e2b-js-setup.sh installs the JS SDK and prints it)"
            );
            let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty());
            let required = std::env::var(REQUIRE_VAR).as_deref() == Ok("1") || set("CI");
            assert!(
                !required,
                "{what}: the E2B JS SDK is required here ({REQUIRE_VAR} or CI is set) but {reason}"
            );
            eprintln!("SKIPPED: {what}, JS: {reason}");
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

/// `paddock serve` for the two tenants, its log in a file; stopped with
/// SIGTERM (its sandboxes go with it), killed if it does not stop.
struct Server {
    child: Option<Child>,
    url: String,
}

impl Server {
    fn start(backend: &str, dir: &Path, config: &Path, log: &Path) -> Self {
        let tokens = format!(
            "{}:{},{}:{}",
            TENANT.0, TENANT.1, OTHER_TENANT.0, OTHER_TENANT.1
        );
        // a node of its own: a starting server clears what its node left
        // (sandboxes, cgroups), and the backends' tests run at once
        let node = format!("e2b-sdk-{backend}-{}", std::process::id());
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
