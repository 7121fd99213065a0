//! The web console end to end in a real browser: `paddock serve` as a real
//! process with the console embedded, and crates/console/web/tests/e2e.mjs
//! (playwright-core driving Debian's chromium headless) signing in, running
//! a scripted agent, editing a file, using the terminal (and ending it with
//! ^D and End shell), forking and reloading mid-run, watching model text and
//! command output stream live and an egress decision denied. Screenshots
//! land in target/console-artifacts/.
//!
//! Needs chromium and the console's npm packages (scripts/console-setup.sh
//! installs both). Without them the test says it skipped and why, unless
//! PADDOCK_REQUIRE_BROWSER=1 (scripts/test.sh sets it): then it fails.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use common::{ServerProcess, unique};

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

/// The session view's handling of live events (web/tests/session.test.mjs),
/// in Node without a browser: needs node only.
#[test]
fn the_session_view_replaces_live_events_with_the_stored_ones() -> Result<()> {
    if Command::new("node").arg("--version").output().is_err() {
        if std::env::var("PADDOCK_REQUIRE_BROWSER").as_deref() == Ok("1") {
            bail!("PADDOCK_REQUIRE_BROWSER=1 but node is not installed");
        }
        eprintln!("SKIPPED: the session view test: node is not installed");
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
        if std::env::var("PADDOCK_REQUIRE_BROWSER").as_deref() == Ok("1") {
            bail!("PADDOCK_REQUIRE_BROWSER=1 but {reason}");
        }
        eprintln!("SKIPPED: the console browser test: {reason}");
        return Ok(());
    }
    let data = tempfile::tempdir()?;
    let tenant = unique("console");
    let server = ServerProcess::start(data.path(), &unique("node"), &format!("{tenant}:{TOKEN}"))?;
    let artifacts = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/console-artifacts");
    let output = Command::new("node")
        .arg("tests/e2e.mjs")
        .current_dir(web_dir())
        .env("PADDOCK_URL", &server.url)
        .env("PADDOCK_TOKEN", TOKEN)
        .env("ARTIFACTS", &artifacts)
        .output()
        .context("running node tests/e2e.mjs")?;
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
