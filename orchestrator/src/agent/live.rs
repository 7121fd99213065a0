//! A run's events on a terminal, as they happen: the model's text as it
//! streams (`model.delta`), a command's output while it runs
//! (`tool.output`), and a spinner on stderr while nothing arrives. Only when
//! stdout is a terminal and the output is for people: with `--json` or a
//! pipe, the stored events are printed as before and the transient ones
//! left out. `-v` prints every tool result whole instead of one line.

use std::io::{IsTerminal, Write};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use paddock_core::store::RunEvent;
use paddock_runtime::events::{
    Event, ModelDelta, RESULT_EVENT_CAP, ToolOutputChunk, ToolResultEvent,
};

use super::render::{self, Format};
use crate::printable::printable;

const TICK: Duration = Duration::from_millis(100);
/// Where the agent's streamed text continues after a line break.
const TEXT_INDENT: &str = "        ";
/// What starts each line of a command's live output or a full result.
const OUTPUT_PREFIX: &str = "    | ";

/// What is open on the current line.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Line {
    Clear,
    /// The agent's text of this turn, streaming.
    Text {
        turn: u32,
    },
    /// A command's output (`mid_line`: its last chunk did not end a line).
    Output {
        call_id: String,
        mid_line: bool,
    },
}

#[derive(Debug)]
pub struct Screen {
    format: Format,
    /// Transient events are shown (stdout is a terminal, output for people).
    live: bool,
    /// A spinner is drawn (stderr is a terminal too).
    spin: bool,
    verbose: bool,
    line: Line,
    /// The last turn whose text was shown streaming (its `model.message`
    /// text is then not printed again).
    streamed_turn: Option<u32>,
    spinner: Option<ProgressBar>,
    /// What the spinner says: what the run is waiting for.
    waiting: String,
}

impl Screen {
    /// For this process's stdout and stderr.
    pub fn new(format: Format, verbose: bool) -> Self {
        let live = format == Format::Human && std::io::stdout().is_terminal();
        let spin = live && std::io::stderr().is_terminal();
        Self::with(format, live, spin, verbose)
    }

    fn with(format: Format, live: bool, spin: bool, verbose: bool) -> Self {
        Self {
            format,
            live,
            spin,
            verbose,
            line: Line::Clear,
            streamed_turn: None,
            spinner: None,
            waiting: "starting".to_owned(),
        }
    }

    /// Shows one event of the run (stored or transient).
    pub fn show(&mut self, out: &mut impl Write, event: &RunEvent) {
        self.stop_spinner();
        if event.is_transient() {
            if self.live {
                self.transient(out, event);
            }
        } else {
            self.stored(out, event);
        }
        let _ = out.flush();
        self.start_spinner();
    }

    /// Ends what is open and removes the spinner (before the result).
    pub fn finish(&mut self, out: &mut impl Write) {
        self.stop_spinner();
        self.end_line(out);
        let _ = out.flush();
    }

    fn transient(&mut self, out: &mut impl Write, event: &RunEvent) {
        match Event::of(event) {
            Event::ModelDelta(ModelDelta::Text { turn, text }) => {
                if self.line != (Line::Text { turn }) {
                    self.end_line(out);
                    let _ = write!(out, "[agent] ");
                    self.line = Line::Text { turn };
                }
                let text = text.replace('\n', &format!("\n{TEXT_INDENT}"));
                let _ = write!(out, "{}", printable(&text));
                self.streamed_turn = Some(turn);
            }
            Event::ModelDelta(ModelDelta::ToolCall { tool, .. }) => {
                self.waiting = format!("the model is writing a {tool} call");
            }
            Event::ModelDelta(ModelDelta::ToolArguments { .. }) => {}
            Event::ToolOutput(chunk) => self.output(out, &chunk),
            Event::StoreWaiting(_) => {
                if let Some(line) = render::human_event(event) {
                    self.end_line(out);
                    let _ = writeln!(out, "{}", printable(&line));
                }
            }
            _ => {}
        }
    }

    fn output(&mut self, out: &mut impl Write, chunk: &ToolOutputChunk) {
        let mut mid_line = match &self.line {
            Line::Output { call_id, mid_line } if *call_id == chunk.call_id => *mid_line,
            _ => {
                self.end_line(out);
                false
            }
        };
        for piece in chunk.text.split_inclusive('\n') {
            if !mid_line {
                let _ = write!(out, "{OUTPUT_PREFIX}");
            }
            let _ = write!(out, "{}", printable(piece));
            mid_line = !piece.ends_with('\n');
        }
        if chunk.truncated {
            if mid_line {
                let _ = writeln!(out);
            }
            let _ = writeln!(out, "{OUTPUT_PREFIX}[more output: only in the result]");
            mid_line = false;
        }
        self.line = Line::Output {
            call_id: chunk.call_id.clone(),
            mid_line,
        };
    }

    fn stored(&mut self, out: &mut impl Write, event: &RunEvent) {
        self.end_line(out);
        let typed = Event::of(event);
        self.waiting = match &typed {
            Event::ToolCall(call) => format!("running {}", call.tool),
            Event::RunFinished(_) => String::new(),
            _ => "waiting for the model".to_owned(),
        };
        if self.format == Format::Json {
            render::print_event(out, self.format, event);
            return;
        }
        match typed {
            // its text was on the screen already, as it streamed
            Event::ModelMessage(message) if self.streamed_turn == Some(message.turn) => {}
            Event::ToolResult(result) if self.verbose => {
                let _ = writeln!(out, "{}", printable(&full_result(&result)));
            }
            _ => render::print_event(out, self.format, event),
        }
    }

    fn end_line(&mut self, out: &mut impl Write) {
        let open = match &self.line {
            Line::Clear => false,
            Line::Text { .. } => true,
            Line::Output { mid_line, .. } => *mid_line,
        };
        if open {
            let _ = writeln!(out);
        }
        self.line = Line::Clear;
    }

    fn start_spinner(&mut self) {
        // a line being written stays as it is; an ended run has no wait
        if !self.spin || self.line != Line::Clear || self.waiting.is_empty() {
            return;
        }
        let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
        if let Ok(style) = ProgressStyle::with_template("{spinner} {msg} {elapsed}") {
            bar.set_style(style);
        }
        bar.set_message(self.waiting.clone());
        bar.enable_steady_tick(TICK);
        self.spinner = Some(bar);
    }

    fn stop_spinner(&mut self) {
        if let Some(bar) = self.spinner.take() {
            bar.finish_and_clear();
        }
    }
}

/// A tool result whole (`-v`): its summary line, then every line of it.
fn full_result(result: &ToolResultEvent) -> String {
    let mut out = render::result_summary(result);
    for line in result.content.lines() {
        out.push('\n');
        out.push_str(OUTPUT_PREFIX);
        out.push_str(line);
    }
    if result.truncated {
        out.push_str(&format!(
            "\n{OUTPUT_PREFIX}[cut at {RESULT_EVENT_CAP} characters; the model got it whole]"
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use paddock_core::ids::{SessionId, TenantId};
    use paddock_core::store::Timestamp;
    use paddock_runtime::events::{CallStatus, EventPayload, ModelMessage};

    use super::*;

    fn event<P: EventPayload>(seq: u64, payload: P) -> RunEvent {
        RunEvent {
            tenant: TenantId::parse("t").unwrap(),
            session: SessionId::generate(),
            seq,
            run: None,
            kind: P::KIND.into(),
            payload: serde_json::to_string(&payload).unwrap(),
            created_at: Timestamp::from_millis(0),
        }
    }

    fn text(t: &str) -> RunEvent {
        event(
            0,
            ModelDelta::Text {
                turn: 1,
                text: t.into(),
            },
        )
    }

    fn chunk(t: &str) -> RunEvent {
        event(
            0,
            ToolOutputChunk {
                call_id: "c1".into(),
                tool: "run_command".into(),
                stream: "stdout".into(),
                text: t.into(),
                truncated: false,
            },
        )
    }

    fn message(seq: u64) -> RunEvent {
        event(
            seq,
            ModelMessage {
                turn: 1,
                text: "Let me look.\nThen fix it.".into(),
                tool_calls: vec![],
                usage: None,
                compacted: false,
            },
        )
    }

    fn shown(screen: &mut Screen, events: &[RunEvent]) -> String {
        let mut out = Vec::new();
        for e in events {
            screen.show(&mut out, e);
        }
        screen.finish(&mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn a_terminal_sees_text_stream_and_output_as_it_comes_once_each() {
        let mut screen = Screen::with(Format::Human, true, false, false);
        let out = shown(
            &mut screen,
            &[
                text("Let me "),
                text("look.\nThen fix it."),
                message(5),
                chunk("one\ntw"),
                chunk("o\n"),
            ],
        );
        assert_eq!(
            out,
            "[agent] Let me look.\n        Then fix it.\n    | one\n    | two\n"
        );
    }

    #[test]
    fn json_and_pipes_never_see_transient_events() {
        for (format, live) in [(Format::Json, false), (Format::Human, false)] {
            let mut screen = Screen::with(format, live, false, false);
            let out = shown(&mut screen, &[text("Let me "), chunk("one\n"), message(5)]);
            assert!(!out.contains("| one"), "{out}");
            assert!(!out.contains("model.delta"), "{out}");
            match format {
                Format::Json => assert!(out.contains("\"seq\":5") && out.lines().count() == 1),
                Format::Human => {
                    assert_eq!(out, "[agent] Let me look.\n        Then fix it.\n");
                }
            }
        }
    }

    #[test]
    fn verbose_results_are_shown_whole() {
        let result = ToolResultEvent {
            call_id: "c1".into(),
            tool: "run_command".into(),
            invocation_id: None,
            status: CallStatus::Succeeded,
            is_error: false,
            content: "a\nb\n[exit code 0 after 0.1s]".into(),
            truncated: false,
            duration_ms: 3,
        };
        let mut quiet = Screen::with(Format::Human, true, false, false);
        let mut verbose = Screen::with(Format::Human, true, false, true);
        let short = shown(&mut quiet, &[event(3, result.clone())]);
        let long = shown(&mut verbose, &[event(3, result)]);
        assert_eq!(short, "    <- run_command exit 0: b (+1 lines)\n");
        assert_eq!(
            long,
            "    <- run_command exit 0: b (+1 lines)\n    | a\n    | b\n    | [exit code 0 after 0.1s]\n"
        );
    }
}
