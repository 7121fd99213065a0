//! `paddock-fake-provider`: the scripted fake model provider
//! ([`paddock_tests::fake_provider`]) on 127.0.0.1:PORT, for running the
//! agent CLIs by hand. Logs every request as one JSON line (method, path,
//! headers, body, turn).
//!
//! A script file is `{"turns": [...]}` or a list of turns, each one of
//! `{"tool_call": {"tool": "Bash", "arguments": {...}}}`, `{"text": "..."}`
//! or `{"deltas": {"count": N, "every_ms": MS}}`, with optional
//! `"usage": {"input_tokens": I, "output_tokens": O}` and `"delay_ms"`.
//! Without `--script`, `--shell CLI` runs `echo hi > note.txt && cat
//! note.txt` with that CLI's shell tool, then answers text.
//!
//! Verified against the real CLIs (lab installs in /work/agents-lab), each in
//! a fresh empty directory $W, with note.txt = "hi" afterwards:
//!
//! ```text
//! # Claude Code 2.1.332 (Bash)
//! paddock-fake-provider --port 18787 --shell claude --log claude.jsonl &
//! cd $W && HOME=$W/home IS_SANDBOX=1 CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1 \
//!   ANTHROPIC_BASE_URL=http://127.0.0.1:18787 ANTHROPIC_API_KEY=sk-ant-placeholder \
//!   timeout 120 /work/agents-lab/npm-claude/node_modules/.bin/claude -p "create note.txt" \
//!   --output-format stream-json --verbose --dangerously-skip-permissions </dev/null
//!
//! # Codex 0.171.0 (exec_command), $W/codex/config.toml = the lab's
//! # codex-config/config.toml with base_url = "http://127.0.0.1:18788/v1"
//! paddock-fake-provider --port 18788 --shell codex --log codex.jsonl &
//! cd $W && HOME=$W/home CODEX_HOME=$W/codex OPENAI_API_KEY=sk-placeholder \
//!   timeout 120 /work/agents-lab/npm-codex/node_modules/@openai/codex-linux-x64/vendor/x86_64-unknown-linux-musl/bin/codex \
//!   exec --json --skip-git-repo-check --dangerously-bypass-approvals-and-sandbox "create note.txt" </dev/null
//!
//! # opencode 1.18.33 (bash), $W/opencode.json = the lab's
//! # opencode-config/opencode-chat.json with baseURL "http://127.0.0.1:18789/v1"
//! paddock-fake-provider --port 18789 --shell opencode --log opencode.jsonl &
//! cd $W && PWD=$W HOME=$W/home OPENCODE_CONFIG=$W/opencode.json FAKE_API_KEY=sk-placeholder \
//!   OPENCODE_DISABLE_MODELS_FETCH=1 OPENCODE_DISABLE_AUTOUPDATE=1 \
//!   timeout 120 /work/agents-lab/npm-opencode/node_modules/.bin/opencode run --format json "create note.txt" </dev/null
//! ```

use std::io::Write;
use std::path::PathBuf;
use std::sync::Mutex;

use anyhow::Context;
use clap::Parser;
use paddock_tests::fake_provider::{FakeProvider, Script};

#[derive(Debug, Parser)]
#[command(
    name = "paddock-fake-provider",
    about = "A scripted fake model provider on 127.0.0.1"
)]
struct Args {
    /// The port on 127.0.0.1 (0: any free port, printed on stderr).
    #[arg(long, default_value_t = 8787)]
    port: u16,
    /// The script (JSON).
    #[arg(long, conflicts_with = "shell")]
    script: Option<PathBuf>,
    /// No script file: run `echo hi > note.txt && cat note.txt` with this
    /// CLI's shell tool (claude, codex or opencode), then answer text.
    #[arg(long, default_value = "claude")]
    shell: String,
    /// Append the request log (JSON lines) to this file instead of stdout.
    #[arg(long)]
    log: Option<PathBuf>,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let script = match &args.script {
        Some(path) => {
            let text = std::fs::read_to_string(path).with_context(|| path.display().to_string())?;
            Script::from_json(&text).with_context(|| format!("reading {}", path.display()))?
        }
        None => Script::shell_then_text(
            &args.shell,
            "echo hi > note.txt && cat note.txt",
            "Done: I created note.txt containing 'hi'.",
        ),
    };
    let out: Box<dyn Write + Send> = match &args.log {
        Some(path) => Box::new(
            std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .open(path)
                .with_context(|| path.display().to_string())?,
        ),
        None => Box::new(std::io::stdout()),
    };
    let out = Mutex::new(out);
    let provider = FakeProvider::start_on(("127.0.0.1", args.port), script)?;
    provider.on_request(move |r| {
        eprintln!("{} {} turn={:?}", r.method, r.path, r.turn);
        if let (Ok(line), Ok(mut out)) = (serde_json::to_string(r), out.lock()) {
            let _ = writeln!(out, "{line}");
            let _ = out.flush();
        }
    });
    eprintln!("fake provider on {}", provider.base_url());
    loop {
        std::thread::park();
    }
}
