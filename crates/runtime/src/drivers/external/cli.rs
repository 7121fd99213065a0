//! What each agent CLI's adapter says: how it is started, and how its
//! JSON lines read.

use std::collections::BTreeMap;

use serde_json::Value;

use super::bridged::Bridged;

/// What a CLI is started with.
#[derive(Debug, Clone)]
pub(crate) struct Invocation<'a> {
    /// The CLI's executable, inside the sandbox.
    pub(crate) program: &'a str,
    pub(crate) prompt: &'a str,
    /// Where the CLI keeps its state and config, inside the sandbox.
    pub(crate) home: &'a str,
    pub(crate) model: Option<&'a str>,
    /// The model provider's base URL the CLI calls (through the egress proxy).
    pub(crate) base_url: &'a str,
    /// The CLI's own session to go on with.
    pub(crate) resume: Option<&'a str>,
}

/// A CLI's command line, its variables and the config files written
/// before it starts (paths inside the sandbox).
#[derive(Debug, Clone, Default)]
pub(crate) struct Launch {
    pub(crate) argv: Vec<String>,
    pub(crate) env: BTreeMap<String, String>,
    pub(crate) files: Vec<(String, Vec<u8>)>,
}

/// One agent CLI: its launch, and a reader of its JSON lines (which keeps
/// what it needs across lines: calls by id, totals counted).
pub(crate) trait CliAdapter: Send {
    fn launch(&self, inv: &Invocation<'_>) -> Launch;

    /// What one line of the CLI's output reports.
    fn read(&mut self, line: &Value) -> Vec<Bridged>;
}
