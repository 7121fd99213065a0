//! Paddock's own Python SDK (sdk/python) against `paddock serve`: its pytest
//! suite (sdk/python/tests) drives sandboxes, exec, files, processes,
//! snapshots, forks, archives, and agent sessions and runs with a scripted
//! model, their events read live and resumed after a dropped connection,
//! pointed at the server by `PADDOCK_URL` with a tenant's `PADDOCK_TOKEN`.
//!
//! The suite needs the venv's python as `PADDOCK_SDK_PYTHON`
//! (scripts/sdk-python-setup.sh installs the SDK there from the wheel it
//! builds, so the package as packed is what runs); without it the test
//! says SKIPPED, unless `PADDOCK_REQUIRE_SDK=1` or `CI` is set, when it
//! fails: the rule of `paddock_test_support::require`, whose `Need` has no
//! SDK variant yet.
//!
//! Beside it, without Python: the OpenAPI document the SDK is generated
//! from (sdk/openapi.json) must be the one the built server serves, so an
//! API change that leaves the SDK behind fails here, saying how to refresh
//! it (sdk/python/generate.sh --refresh).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use paddock_tests::host::require_root;
use paddock_tests::serve;

/// The suite's tenant (a token at least the server's shortest, 16 characters).
const TENANT: (&str, &str) = ("sdk-python", "sdk-python-suite-tenant-token");

/// The whole suite's bound (it takes about 15 s here).
const SUITE_TIMEOUT: Duration = Duration::from_secs(600);

/// The variable naming the venv's python, and the one that requires it.
const PYTHON_VAR: &str = "PADDOCK_SDK_PYTHON";
const REQUIRE_VAR: &str = "PADDOCK_REQUIRE_SDK";

/// The native backend, and room for the suite's sandboxes and runs at once
/// (a fork of three beside its source, runs' sandboxes beside the API's).
const CONFIG: &str = "[[backends]]\nkind = \"native\"\n\n\
                      [quotas.tenant]\nsandboxes = 16\nruns = 8\n";

#[test]
fn the_python_sdk_suite_passes_against_paddock_serve() {
    let what = "the Python SDK suite";
    let Some(python) = sdk_python(what) else {
        return;
    };
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let server_log = dir.path().join("server.log");
    let server = Server::start(dir.path(), &server_log, "suite");

    let out_path = dir.path().join("pytest.out");
    let sdk = repo_root().join("sdk/python");
    let mut pytest = Command::new(&python);
    pytest
        .args(["-m", "pytest", "-q", "-rA", "--tb=short", "--color=no"])
        .args(["-p", "no:cacheprovider"])
        .arg(sdk.join("tests"))
        .current_dir(&sdk)
        .env("PADDOCK_URL", &server.url)
        .env("PADDOCK_TOKEN", TENANT.1)
        .env("PYTHONDONTWRITEBYTECODE", "1")
        // the SDK as installed from its wheel, never the sources beside it
        .env_remove("PYTHONPATH")
        .env_remove("PADDOCK_SERVER")
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
    // exit 0 with every case run: pytest's last line counts passes only
    let last = output.lines().last().unwrap_or_default();
    assert!(
        last.contains(" passed")
            && !last.contains("skipped")
            && !last.contains("deselected")
            && !last.contains("xfail"),
        "{what}: {last}"
    );
    server.stop();
}

#[test]
fn the_sdks_openapi_document_is_the_one_the_server_serves() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let server_log = dir.path().join("server.log");
    let server = Server::start(dir.path(), &server_log, "openapi");
    let served = http_get(&server.url, "/v1/openapi.json");
    server.stop();
    let served: serde_json::Value = serde_json::from_str(&served).unwrap();
    let path = repo_root().join("sdk/openapi.json");
    let committed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert!(
        served == committed,
        "{} is not the document this build serves: run `sdk/python/generate.sh --refresh` \
         (it takes the document from the built server and regenerates the Python SDK's \
         models) and commit what changed",
        path.display()
    );
}

/// The venv's python from `PADDOCK_SDK_PYTHON`, or None after printing
/// SKIPPED; panics instead when the run requires the suite.
fn sdk_python(what: &str) -> Option<PathBuf> {
    match std::env::var_os(PYTHON_VAR).filter(|v| !v.is_empty()) {
        Some(python) => {
            let python = PathBuf::from(python);
            assert!(
                python.is_file(),
                "{what}: {PYTHON_VAR}={} is not a file (run scripts/sdk-python-setup.sh)",
                python.display()
            );
            Some(python)
        }
        None => {
            let reason = format!(
                "{PYTHON_VAR} is not set (scripts/sdk-python-setup.sh builds and installs the SDK and prints it)"
            );
            let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.is_empty());
            let required = std::env::var(REQUIRE_VAR).as_deref() == Ok("1") || set("CI");
            assert!(
                !required,
                "{what}: the Python SDK is required here ({REQUIRE_VAR} or CI is set) but {reason}"
            );
            eprintln!("SKIPPED: {what}: {reason}");
            None
        }
    }
}

/// The body of a GET of `path` (HTTP/1.0: the whole body, then the close).
fn http_get(url: &str, path: &str) -> String {
    let address = url.trim_start_matches("http://");
    let mut stream = TcpStream::connect(address).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    write!(stream, "GET {path} HTTP/1.0\r\nHost: {address}\r\n\r\n").unwrap();
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).unwrap();
    let answer = String::from_utf8(answer).unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(
        head.starts_with("HTTP/1.0 200") || head.starts_with("HTTP/1.1 200"),
        "GET {path}: {head}"
    );
    body.to_owned()
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

/// `paddock serve` for the suite's tenant with [`CONFIG`], its log in a
/// file; stopped with SIGTERM (its sandboxes and runs go with it), killed
/// if it does not stop. (e2b_sdk.rs keeps the same one for its tenants.)
struct Server {
    child: Option<Child>,
    url: String,
}

impl Server {
    /// `name` tells this test's server from the others of this process:
    /// servers on one host need node names of their own.
    fn start(dir: &Path, log: &Path, name: &str) -> Self {
        let config = dir.join("serve.toml");
        std::fs::write(&config, CONFIG).unwrap();
        let tokens = format!("{}:{}", TENANT.0, TENANT.1);
        let node = format!("sdk-python-{name}-{}", std::process::id());
        let mut command = serve::command(&node, &dir.join("server"), &tokens);
        command
            .arg("--config")
            .arg(&config)
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
