//! One rule for every test that needs something a host may lack (a Postgres
//! server, a sandbox backend, the browser, loop devices): where it is missing
//! the test says `SKIPPED: {what}: {reason}` and passes, unless the run
//! requires it, when the test fails instead. A run requires it when its
//! `PADDOCK_REQUIRE_*` variable says so (scripts/test.sh sets them all) or
//! when `CI` is set: no test passes there without running.
//!
//! Plain std and anyhow only, so crates below this one (the store's tests)
//! can include the file by path.

use anyhow::{Result, bail};

/// The variable scripts/postgres-test.sh sets to its throwaway server's URL.
pub const POSTGRES_URL: &str = "PADDOCK_TEST_POSTGRES_URL";

/// Something a test needs that a host may lack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Need<'a> {
    /// A Postgres server at `PADDOCK_TEST_POSTGRES_URL`
    /// (required by `PADDOCK_REQUIRE_POSTGRES=1`).
    Postgres,
    /// A sandbox backend by name (required when `PADDOCK_REQUIRE_BACKENDS`,
    /// a comma-separated list, names it).
    Backend(&'a str),
    /// node and the headless browser (`PADDOCK_REQUIRE_BROWSER=1`).
    Browser,
    /// Loop devices, for the full-disk tests (`PADDOCK_REQUIRE_LOOP=1`).
    Loop,
    /// The agent CLIs of images/agents (`PADDOCK_REQUIRE_AGENTS=1`).
    AgentClis,
}

impl Need<'_> {
    /// The variable that makes this need a requirement.
    pub fn variable(self) -> &'static str {
        match self {
            Need::Postgres => "PADDOCK_REQUIRE_POSTGRES",
            Need::Backend(_) => "PADDOCK_REQUIRE_BACKENDS",
            Need::Browser => "PADDOCK_REQUIRE_BROWSER",
            Need::Loop => "PADDOCK_REQUIRE_LOOP",
            Need::AgentClis => "PADDOCK_REQUIRE_AGENTS",
        }
    }

    /// Whether this run must have it: its variable says so, or `CI` is set.
    pub fn required(self) -> bool {
        let ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty());
        self.required_by(ci, &std::env::var(self.variable()).unwrap_or_default())
    }

    /// Whether `value` of its variable (or `ci`) requires it.
    fn required_by(self, ci: bool, value: &str) -> bool {
        ci || match self {
            Need::Backend(name) => value.split(',').any(|b| b.trim() == name),
            _ => value == "1",
        }
    }
}

/// Where `need` is missing for `reason`: an error when the run requires it,
/// else `Ok(())` after printing `SKIPPED: {what}: {reason}` (the caller then
/// returns without running).
pub fn skip_or_fail(need: Need<'_>, what: &str, reason: &str) -> Result<()> {
    if need.required() {
        bail!(
            "{what}: {need:?} is required here ({} or CI is set) but {reason}",
            need.variable()
        );
    }
    eprintln!("SKIPPED: {what}: {reason}");
    Ok(())
}

/// [`skip_or_fail`] for tests that report by panicking: panics with the
/// error when the run requires `need`, else prints SKIPPED.
pub fn skip_or_panic(need: Need<'_>, what: &str, reason: &str) {
    if let Err(err) = skip_or_fail(need, what, reason) {
        panic!("{err:#}");
    }
}

/// The URL of the test Postgres (`PADDOCK_TEST_POSTGRES_URL`), or `None`
/// after printing SKIPPED when it is unset and not required; an error when
/// it is unset and required.
pub fn postgres_url(what: &str) -> Result<Option<String>> {
    match std::env::var(POSTGRES_URL) {
        Ok(url) if !url.is_empty() => Ok(Some(url)),
        _ => {
            skip_or_fail(
                Need::Postgres,
                what,
                &format!(
                    "{POSTGRES_URL} is not set (scripts/postgres-test.sh starts a server and sets it)"
                ),
            )?;
            Ok(None)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::process::Command;

    #[test]
    fn each_variable_requires_what_it_names() {
        assert!(Need::Backend("docker").required_by(false, "native, docker,gvisor"));
        assert!(!Need::Backend("microvm").required_by(false, "native,docker"));
        assert!(Need::Postgres.required_by(false, "1"));
        assert!(!Need::Postgres.required_by(false, ""));
        assert!(!Need::Browser.required_by(false, "0"));
        assert!(Need::Loop.required_by(true, ""), "CI requires everything");
    }

    /// Not a test of its own: what the child process of the next test runs.
    #[test]
    #[ignore = "run by a_missing_postgres_skips_or_fails_as_the_run_requires"]
    fn probe_postgres_url() {
        postgres_url("the probe").unwrap();
    }

    /// This test binary again, running the probe with a chosen environment.
    fn probe(require: Option<&str>) -> std::process::Output {
        // this module's test path in whichever binary includes the file
        // (the crate's own, or a suite's `#[path]` module), crate name off
        let module = module_path!().split_once("::").map_or("", |(_, rest)| rest);
        let probe = format!("{module}::probe_postgres_url");
        let mut child = Command::new(std::env::current_exe().unwrap());
        child
            .args(["--exact", probe.as_str(), "--ignored"])
            .args(["--nocapture", "--test-threads=1"])
            .env_remove(POSTGRES_URL)
            .env_remove("CI")
            .env_remove(Need::Postgres.variable());
        if let Some(value) = require {
            child.env(Need::Postgres.variable(), value);
        }
        child.output().unwrap()
    }

    #[test]
    fn a_missing_postgres_skips_or_fails_as_the_run_requires() {
        let skipped = probe(None);
        let stderr = String::from_utf8_lossy(&skipped.stderr);
        assert!(skipped.status.success(), "{stderr}");
        assert!(
            stderr.contains("SKIPPED: the probe: PADDOCK_TEST_POSTGRES_URL is not set"),
            "{stderr}"
        );
        let failed = probe(Some("1"));
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&failed.stdout),
            String::from_utf8_lossy(&failed.stderr)
        );
        assert!(!failed.status.success(), "{said}");
        assert!(said.contains("PADDOCK_REQUIRE_POSTGRES"), "{said}");
        assert!(!said.contains("SKIPPED"), "{said}");
    }
}
