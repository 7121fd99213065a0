//! Progress of long snapshot commands on stderr: a byte bar with the rate
//! for transfers this client makes (export, import), a spinner with the
//! elapsed time for work the server does (create, restore, fork), and one
//! summary line at the end. Bars are drawn only when stderr is a terminal;
//! with `--json` nothing at all goes to stderr, so stdout stays the one
//! machine-readable document.

use std::io::IsTerminal;
use std::time::{Duration, Instant};

use indicatif::{HumanBytes, HumanDuration, ProgressBar, ProgressDrawTarget, ProgressStyle};

const BAR: &str =
    "{spinner} {msg} [{bar:30}] {bytes}/{total_bytes} {binary_bytes_per_sec} eta {eta}";
const SPINNER: &str = "{spinner} {msg} {elapsed}";
const TICK: Duration = Duration::from_millis(120);

#[derive(Debug)]
pub struct Progress {
    bar: ProgressBar,
    start: Instant,
    /// `--json`: no bar and no summary.
    quiet: bool,
}

impl Progress {
    /// A bar over `total` bytes (a byte counter when the total is unknown).
    pub fn bytes(message: impl Into<String>, total: Option<u64>, json: bool) -> Self {
        let bar = match total {
            Some(total) => ProgressBar::with_draw_target(Some(total), target(json)),
            None => ProgressBar::with_draw_target(None, target(json)),
        };
        let template = if total.is_some() {
            BAR
        } else {
            "{spinner} {msg} {bytes} {binary_bytes_per_sec} {elapsed}"
        };
        if let Ok(style) = ProgressStyle::with_template(template) {
            bar.set_style(style.progress_chars("=> "));
        }
        Self::started(bar, message, json)
    }

    /// A spinner for work whose progress only the server sees.
    pub fn spinner(message: impl Into<String>, json: bool) -> Self {
        let bar = ProgressBar::with_draw_target(None, target(json));
        if let Ok(style) = ProgressStyle::with_template(SPINNER) {
            bar.set_style(style);
        }
        Self::started(bar, message, json)
    }

    fn started(bar: ProgressBar, message: impl Into<String>, json: bool) -> Self {
        bar.set_message(message.into());
        bar.enable_steady_tick(TICK);
        Self {
            bar,
            start: Instant::now(),
            quiet: json,
        }
    }

    /// A handle that counts bytes from another task (an upload stream).
    pub fn counter(&self) -> ProgressBar {
        self.bar.clone()
    }

    pub fn inc(&self, bytes: u64) {
        self.bar.inc(bytes);
    }

    pub fn elapsed(&self) -> Duration {
        self.start.elapsed()
    }

    /// Removes the bar and prints `summary` (unless `--json`).
    pub fn finish(self, summary: impl AsRef<str>) {
        self.bar.finish_and_clear();
        if !self.quiet {
            eprintln!("{}", summary.as_ref());
        }
    }

    /// Removes the bar without a summary (the command failed).
    pub fn abandon(self) {
        self.bar.finish_and_clear();
    }
}

/// stderr when it is a terminal and the output is for people; else nowhere.
fn target(json: bool) -> ProgressDrawTarget {
    if !json && std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    }
}

/// "12.5 MiB in 1.2s (10.4 MiB/s)".
pub fn amount(bytes: u64, elapsed: Duration) -> String {
    let secs = elapsed.as_secs_f64().max(1e-3);
    format!(
        "{} in {} ({}/s)",
        HumanBytes(bytes),
        precise(elapsed),
        HumanBytes((bytes as f64 / secs) as u64)
    )
}

/// Seconds with one decimal under a minute, else indicatif's human form.
fn precise(elapsed: Duration) -> String {
    if elapsed < Duration::from_secs(60) {
        format!("{:.1}s", elapsed.as_secs_f64())
    } else {
        HumanDuration(elapsed).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_name_bytes_time_and_rate() {
        assert_eq!(
            amount(10 * 1024 * 1024, Duration::from_secs(2)),
            "10.00 MiB in 2.0s (5.00 MiB/s)"
        );
        assert_eq!(amount(0, Duration::ZERO), "0 B in 0.0s (0 B/s)");
    }

    #[test]
    fn json_output_never_draws() {
        let progress = Progress::bytes("x", Some(10), true);
        assert!(progress.counter().is_hidden());
        progress.finish("not printed");
    }
}
