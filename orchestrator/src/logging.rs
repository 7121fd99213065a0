//! Where paddock's own logs go: stderr, filtered by RUST_LOG (default:
//! warnings and errors), so a sandboxed command's output passes through
//! unmixed. On the command line a warning reads as a sentence
//! (`paddock: warning: ...`); `--log-format json` gives one JSON object per
//! line for machines; the server keeps the usual timestamped lines.
//!
//! Writing a log line never fails and never panics: a closed stderr (the
//! terminal gone, `2>&1 | head -1`) must not change what a run does.

use std::fmt;
use std::io::{self, IsTerminal, Write};

use clap::ValueEnum;
use tracing::field::{Field, Visit};
use tracing::{Event, Level, Subscriber};
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::Writer;
use tracing_subscriber::fmt::{FmtContext, FormatEvent, FormatFields, MakeWriter};
use tracing_subscriber::registry::LookupSpan;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, ValueEnum)]
pub enum LogFormat {
    /// Sentences on the command line; timestamped lines for `paddock serve`.
    #[default]
    Human,
    /// One JSON object per line.
    Json,
}

/// Who reads the logs: a person at a command line, or a server's operator.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Audience {
    Cli,
    Server,
}

pub fn init(format: LogFormat, audience: Audience) {
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("warn"));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(Stderr)
        .log_internal_errors(false);
    match (format, audience) {
        (LogFormat::Json, _) => builder.json().init(),
        (LogFormat::Human, Audience::Server) => {
            builder.with_ansi(io::stderr().is_terminal()).init()
        }
        (LogFormat::Human, Audience::Cli) => builder.event_format(Sentence).init(),
    }
}

/// Prints a line for a person on stderr; a closed stderr is ignored (as a
/// log line is), where `eprintln!` would panic.
pub fn note(args: fmt::Arguments<'_>) {
    let _ = writeln!(io::stderr(), "{args}");
}

/// stderr whose write errors are dropped: nothing to tell them to.
struct Stderr;

impl<'a> MakeWriter<'a> for Stderr {
    type Writer = Lossy;

    fn make_writer(&'a self) -> Self::Writer {
        Lossy
    }
}

struct Lossy;

impl Write for Lossy {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let _ = io::stderr().write_all(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        let _ = io::stderr().flush();
        Ok(())
    }
}

/// `paddock: warning: end-of-run snapshot failed (error: too many files)`.
struct Sentence;

impl<S, N> FormatEvent<S, N> for Sentence
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    N: for<'a> FormatFields<'a> + 'static,
{
    fn format_event(
        &self,
        _ctx: &FmtContext<'_, S, N>,
        mut writer: Writer<'_>,
        event: &Event<'_>,
    ) -> fmt::Result {
        let mut fields = Fields::default();
        event.record(&mut fields);
        writeln!(writer, "{}", sentence(*event.metadata().level(), &fields))
    }
}

fn sentence(level: Level, fields: &Fields) -> String {
    let kind = match level {
        Level::ERROR => "error",
        Level::WARN => "warning",
        Level::INFO => "note",
        Level::DEBUG | Level::TRACE => "debug",
    };
    let mut line = format!("paddock: {kind}: {}", fields.message);
    if !fields.context.is_empty() {
        let context: Vec<String> = fields
            .context
            .iter()
            .map(|(name, value)| format!("{}: {value}", name.replace('_', " ")))
            .collect();
        line.push_str(&format!(" ({})", context.join(", ")));
    }
    line
}

#[derive(Debug, Default)]
struct Fields {
    message: String,
    context: Vec<(&'static str, String)>,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        self.record(field, value.to_owned());
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        self.record(field, format!("{value:?}"));
    }
}

impl Fields {
    fn record(&mut self, field: &Field, value: String) {
        if field.name() == "message" {
            self.message = value;
        } else {
            self.context.push((field.name(), value));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_warning_is_a_sentence_with_its_context() {
        let fields = Fields {
            message: "end-of-run snapshot failed".to_owned(),
            context: vec![
                ("error", "too many files".to_owned()),
                ("run_id", "run_1".to_owned()),
            ],
        };
        assert_eq!(
            sentence(Level::WARN, &fields),
            "paddock: warning: end-of-run snapshot failed (error: too many files, run id: run_1)"
        );
        let bare = Fields {
            message: "gone".to_owned(),
            context: Vec::new(),
        };
        assert_eq!(sentence(Level::ERROR, &bare), "paddock: error: gone");
    }
}
