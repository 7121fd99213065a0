//! Resume after `kill -9`, to the first model call, beside a fresh run's
//! start to its first model call, in one run. The floor: a resume
//! reaches its first model call in under 1 s after the kill.
//!
//! Each round starts `paddock run` (a scripted model) in a fresh workspace,
//! waits until its command runs, SIGKILLs it, and at once starts `paddock
//! run --resume`: the clock runs from the kill to the resumed run's first
//! `model.message` line (the scripted model answers at once, so that line
//! follows the model call's start by the loop's own latency). The baseline
//! is the same `paddock run` from its spawn to its first `model.message`.
//! The resume's time includes recovering the dead run (its owner's process
//! is gone), answering its unfinished call and starting a fresh sandbox.
//! Needs root and release binaries:
//!
//!     cargo build --release --workspace --bins
//!     target/x86_64-unknown-linux-gnu/release/paddock-bench-resume [--runs N]

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail, ensure};
use paddock_bench_support::figures::{median, percentile};
use paddock_bench_support::wants_help;
use serde_json::{Value, json};

const FLOOR: Duration = Duration::from_secs(1);

const USAGE: &str = "\
usage: paddock-bench-resume [--runs N]

Resume after kill -9 to the first model call, beside a fresh paddock run's
start to its first model call. Needs root and the release paddock and
paddock-guest next to this binary (cargo build --release --workspace --bins).
  --runs N   timed rounds (default 10; medians and p90 are reported)";

fn main() -> Result<()> {
    if wants_help() {
        println!("{USAGE}");
        return Ok(());
    }
    let runs = parse_args()?;
    let paddock = sibling("paddock")?;
    let scratch = tempfile::Builder::new()
        .prefix("paddock-bench-resume-")
        .tempdir()?;
    let data = scratch.path().join("data");
    let full = script(
        scratch.path(),
        "full.json",
        &[command("sleep 30"), json!({"tool_calls": [complete()]})],
    )?;
    let rest = script(
        scratch.path(),
        "rest.json",
        &[json!({"tool_calls": [complete()]})],
    )?;
    let mut fresh = Vec::with_capacity(runs);
    let mut resumed = Vec::with_capacity(runs);
    // one untimed round first: the data dir's migrations, cold caches
    for round in 0..=runs {
        let ws = scratch.path().join(format!("ws{round}"));
        std::fs::create_dir(&ws)?;
        let (started, mut run) = spawn(
            &paddock,
            &data,
            &[
                "run",
                "bench",
                "--workspace",
                path(&ws)?,
                "--model",
                &full,
                "--json",
            ],
        )?;
        let mut run_lines = lines(&mut run)?;
        let first = until(&mut run_lines, |l| l["kind"] == "model.message")?;
        let to_first_call = started.elapsed();
        let run_id = first["run"].as_str().context("the run's id")?.to_owned();
        until(&mut run_lines, |l| {
            l["kind"] == "tool.call" && l["data"]["tool"] == "run_command"
        })?;
        // the command is running: kill the driver
        let killed = Instant::now();
        run.kill()?;
        run.wait()?;
        let (_, mut resume) = spawn(
            &paddock,
            &data,
            &["run", "--resume", &run_id, "--model", &rest, "--json"],
        )?;
        let mut resume_lines = lines(&mut resume)?;
        until(&mut resume_lines, |l| l["kind"] == "model.message")?;
        let to_resumed_call = killed.elapsed();
        let result = until(&mut resume_lines, |l| l["type"] == "result")?;
        ensure!(
            result["run"]["resumed_from"] == run_id.as_str(),
            "the resume did not continue {run_id}: {result}"
        );
        resume.wait()?;
        if round > 0 {
            fresh.push(to_first_call);
            resumed.push(to_resumed_call);
        }
    }
    fresh.sort();
    resumed.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!("{runs} rounds (medians, p90):");
    println!(
        "  fresh run, spawn -> first model call        {:8.1} ms  p90 {:8.1} ms  (baseline)",
        ms(median(&fresh)),
        ms(percentile(&fresh, 0.9))
    );
    println!(
        "  resume, kill -9 -> first model call         {:8.1} ms  p90 {:8.1} ms  ({:.2}x the baseline)",
        ms(median(&resumed)),
        ms(percentile(&resumed, 0.9)),
        median(&resumed).as_secs_f64() / median(&fresh).as_secs_f64()
    );
    let met = median(&resumed) < FLOOR;
    println!(
        "  floor: resume < {} ms: {}",
        FLOOR.as_millis(),
        if met { "met" } else { "NOT met" }
    );
    Ok(())
}

fn parse_args() -> Result<usize> {
    let mut runs = 10;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match (arg.as_str(), args.next()) {
            ("--runs", Some(n)) => runs = n.parse().context("--runs takes a number")?,
            _ => bail!("unknown argument {arg:?}\n{USAGE}"),
        }
    }
    ensure!(runs > 0, "--runs must be more than 0");
    Ok(runs)
}

/// A binary next to this one (the same build profile).
fn sibling(name: &str) -> Result<PathBuf> {
    let exe = std::env::current_exe()?;
    let path = exe.with_file_name(name);
    ensure!(
        path.is_file(),
        "{} is missing: cargo build --release --workspace --bins",
        path.display()
    );
    Ok(path)
}

fn path(p: &Path) -> Result<&str> {
    p.to_str().context("a path that is not UTF-8")
}

fn command(text: &str) -> Value {
    json!({"tool_calls": [{"name": "run_command", "arguments": {"command": text}}]})
}

fn complete() -> Value {
    json!({"name": "complete_task", "arguments": {
        "verdict": "met", "summary": "done", "evidence": ["none"]}})
}

fn script(dir: &Path, name: &str, turns: &[Value]) -> Result<String> {
    let file = dir.join(name);
    std::fs::write(&file, json!({ "turns": turns }).to_string())?;
    Ok(format!("scripted:{}", path(&file)?))
}

fn spawn(paddock: &Path, data: &Path, args: &[&str]) -> Result<(Instant, Child)> {
    let started = Instant::now();
    let child = Command::new(paddock)
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .env_remove("PADDOCK_SERVER")
        .env_remove("PADDOCK_MODEL")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("spawning paddock {args:?}"))?;
    Ok((started, child))
}

type Lines = std::io::Lines<BufReader<std::process::ChildStdout>>;

fn lines(child: &mut Child) -> Result<Lines> {
    let stdout = child.stdout.take().context("the child's stdout is piped")?;
    Ok(BufReader::new(stdout).lines())
}

/// Reads JSON lines until one matches; an early end is an error.
fn until(lines: &mut Lines, matches: impl Fn(&Value) -> bool) -> Result<Value> {
    for line in lines {
        let value: Value = serde_json::from_str(&line?)?;
        if matches(&value) {
            return Ok(value);
        }
    }
    bail!("the run ended before the line it was waited for")
}
