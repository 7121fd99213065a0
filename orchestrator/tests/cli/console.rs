//! The web console end to end in a real browser: `paddock serve` as a real
//! process with the console embedded, and crates/console/web/tests/e2e.mjs
//! (playwright-core driving Debian's chromium headless) signing in, running
//! a scripted agent, editing a file, using the terminal (and ending it with
//! ^D and End shell), forking and reloading mid-run, watching model text and
//! command output stream live and an egress decision denied, and change a
//! sandbox's allowlist on its page. Screenshots
//! land in target/console-artifacts/.
//!
//! Needs chromium and the console's npm packages (scripts/console-setup.sh
//! installs both). Without them the test says it skipped and why, unless
//! PADDOCK_REQUIRE_BROWSER=1 (scripts/test.sh sets it): then it fails.
//!
//! The browser test checks every request the console sends and every answer
//! it gets against the OpenAPI document the server serves; with
//! PADDOCK_RECORD_ANSWERS=1 it also records those answers into
//! crates/console/web/tests/fixtures/answers.json, which the contract test
//! here checks against the document the code generates now.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};
use common::{ServerProcess, unique};
use paddock_test_support::require::{self, Need};

const TOKEN: &str = "console-e2e-token-0123456789";

fn web_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../crates/console/web")
}

/// Why the browser test cannot run here, if it cannot.
fn missing_prerequisite() -> Option<String> {
    if Command::new("chromium").arg("--version").output().is_err() {
        return Some("chromium is not installed (apt-get install chromium)".into());
    }
    if Command::new("node").arg("--version").output().is_err() {
        return Some("node is not installed".into());
    }
    if !web_dir().join("node_modules/playwright-core").is_dir() {
        return Some(
            "the console's npm packages are not installed (scripts/console-setup.sh)".into(),
        );
    }
    None
}

/// Skips (or, under PADDOCK_REQUIRE_BROWSER=1, fails) a test that needs node
/// when node is not installed: Some(result) to return.
fn without_node(what: &str) -> Option<Result<()>> {
    if Command::new("node").arg("--version").output().is_ok() {
        return None;
    }
    if std::env::var("PADDOCK_REQUIRE_BROWSER").as_deref() == Ok("1") {
        return Some(Err(anyhow::anyhow!(
            "PADDOCK_REQUIRE_BROWSER=1 but node is not installed"
        )));
    }
    eprintln!("SKIPPED: {what}: node is not installed");
    Some(Ok(()))
}

/// The console's recorded server answers (web/tests/fixtures/answers.json)
/// against the OpenAPI document as this build generates it, and every route
/// its source calls against the document's routes (web/tests/contract.test.mjs):
/// needs node only.
#[test]
fn the_recorded_answers_fit_the_current_openapi_document() -> Result<()> {
    if let Some(result) = without_node("the console contract test") {
        return result;
    }
    let dir = tempfile::tempdir()?;
    let document = dir.path().join("openapi.json");
    std::fs::write(&document, paddock_api::http::OPENAPI.as_bytes())?;
    let output = Command::new("node")
        .args(["--test", "tests/contract.test.mjs"])
        .current_dir(web_dir())
        .env("OPENAPI_FILE", &document)
        .output()
        .context("running node --test tests/contract.test.mjs")?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    print!("{stdout}");
    eprint!("{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        output.status.success(),
        "the console contract test failed: {stdout}"
    );
    assert!(stdout.contains("# fail 0"), "{stdout}");
    assert!(stdout.contains("# pass 4"), "{stdout}");
    Ok(())
}

/// The session view's handling of live events (web/tests/session.test.mjs),
/// in Node without a browser: needs node only.
#[test]
fn the_session_view_replaces_live_events_with_the_stored_ones() -> Result<()> {
    if Command::new("node").arg("--version").output().is_err() {
        require::skip_or_fail(
            Need::Browser,
            "the session view test",
            "node is not installed",
        )?;
        return Ok(());
    }
    let output = Command::new("node")
        .args(["--test", "tests/session.test.mjs"])
        .current_dir(web_dir())
        .output()
        .context("running node --test tests/session.test.mjs")?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    print!("{stdout}");
    eprint!("{}", String::from_utf8_lossy(&output.stderr));
    assert!(
        output.status.success(),
        "the session view test failed: {stdout}"
    );
    assert!(stdout.contains("# fail 0"), "{stdout}");
    Ok(())
}

#[test]
fn the_console_drives_a_session_end_to_end_in_a_real_browser() -> Result<()> {
    if let Some(reason) = missing_prerequisite() {
        require::skip_or_fail(Need::Browser, "the console browser test", &reason)?;
        return Ok(());
    }
    let data = tempfile::tempdir()?;
    let tenant = unique("console");
    let server = ServerProcess::start(data.path(), &unique("node"), &format!("{tenant}:{TOKEN}"))?;
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/console-artifacts");
    let mut e2e = Command::new("node");
    e2e.arg("tests/e2e.mjs")
        .current_dir(web_dir())
        .env("PADDOCK_URL", &server.url)
        .env("PADDOCK_TOKEN", TOKEN)
        .env("ARTIFACTS", &artifacts);
    if std::env::var("PADDOCK_RECORD_ANSWERS").as_deref() == Ok("1") {
        e2e.env(
            "RECORD_ANSWERS",
            web_dir().join("tests/fixtures/answers.json"),
        );
    }
    let output = e2e.output().context("running node tests/e2e.mjs")?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    print!("{stdout}");
    eprint!("{}", String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success(), "the browser test failed: {stdout}");
    assert!(
        stdout.contains("console e2e: every step passed"),
        "{stdout}"
    );
    for shot in [
        "02-run-live-plan",
        "06-editor",
        "08-terminal",
        "10-subagents",
        "13-narrow",
        "14-streaming-text",
        "15-streaming-output",
        "16-egress-denied",
        "17-terminal-ended",
        "19-sandbox-allowlist",
    ] {
        let path = artifacts.join(format!("{shot}.png"));
        let size = std::fs::metadata(&path)
            .with_context(|| format!("screenshot {}", path.display()))?
            .len();
        assert!(size > 1000, "{} is only {size} bytes", path.display());
    }
    server.terminate()?;
    Ok(())
}
