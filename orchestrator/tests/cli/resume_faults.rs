//! Fault rounds: a real `paddock run` child with a scripted model is killed
//! with SIGKILL at a random point (in a model stream, in a command, in a file
//! write), then `paddock run --resume --force` finishes the run. After each round: no
//! event its streaming clients (the two `--json` processes) were shown is
//! lost or duplicated in the store, the store's sequence has no gap or
//! repeat, the resumed run started from the dead run's last checkpoint (its
//! `restored_checkpoint`, and its own start checkpoint equal to it) and the
//! workspace at the end is its own last checkpoint: the last checkpoint plus
//! what the resumed run did (the seed, every file write done, a command not
//! safe to repeat run at most once and missing only when its outcome was
//! reported unknown, not run or undone), and no sandbox process, mount or
//! cgroup is left. Needs root and `paddock-guest`.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use common::{PADDOCK, cgroups_below, processes_with, wait_until};
use serde_json::{Value, json};

const ROUNDS: usize = 20;
const GOAL: &str = "Write a.txt, b.txt and c.txt and log two steps";
/// How long each model turn "thinks" before it streams.
const THINK_MS: u64 = 60;
/// The cgroup parent of `paddock run`'s sandboxes.
const CGROUP_PARENT: &str = "paddock-run";

/// The files the script writes, and the log lines its commands append.
const FILES: [(&str, &str); 3] = [
    ("a.txt", "alpha\n"),
    ("b.txt", "bravo\n"),
    ("c.txt", "charlie\n"),
];
const LOG_LINES: [&str; 2] = ["two", "four"];

fn write(path: &str, content: &str) -> Value {
    json!({"name": "write_file", "arguments": {"path": path, "content": content}})
}

fn command(text: &str) -> Value {
    json!({"name": "run_command", "arguments": {"command": text}})
}

fn think(calls: Vec<Value>) -> Value {
    json!({"delay_ms": THINK_MS, "tool_calls": calls})
}

/// The whole trajectory; a resume replays the turns its predecessor did
/// not record.
fn turns() -> Vec<Value> {
    vec![
        think(vec![write(FILES[0].0, FILES[0].1)]),
        think(vec![command("echo two >> log.txt && sleep 0.2")]),
        think(vec![
            write(FILES[1].0, FILES[1].1),
            write(FILES[2].0, FILES[2].1),
        ]),
        think(vec![command("echo four >> log.txt && sleep 0.2")]),
        think(vec![command("cat a.txt b.txt c.txt")]),
        think(vec![json!({"name": "complete_task", "arguments": {
            "verdict": "met", "summary": "wrote the files", "evidence": ["cat a.txt b.txt c.txt"]}})]),
    ]
}

/// A small deterministic generator, seeded per run of the test (the seed is
/// printed so a failing round can be replayed with PADDOCK_FAULT_SEED).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// Where a round kills the run.
#[derive(Debug, Clone, Copy)]
enum Point {
    /// While the model streams its `nth` turn.
    ModelStream { nth: usize, after_ms: u64 },
    /// While the `nth` command runs.
    Command { nth: usize, after_ms: u64 },
    /// As the `nth` file write is applied.
    Apply { nth: usize, after_ms: u64 },
}

impl Point {
    fn pick(round: usize, rng: &mut Rng) -> Self {
        match round % 3 {
            0 => Point::ModelStream {
                nth: 1 + rng.below(5) as usize,
                after_ms: rng.below(THINK_MS),
            },
            1 => Point::Command {
                nth: 1 + rng.below(2) as usize,
                after_ms: rng.below(220),
            },
            _ => Point::Apply {
                nth: 1 + rng.below(3) as usize,
                after_ms: rng.below(4),
            },
        }
    }

    /// Whether `event` is the one to kill after (then wait `after_ms`).
    fn trigger(&self, event: &Value, counts: &mut HashMap<&'static str, usize>) -> Option<u64> {
        let (key, nth, after_ms) = match *self {
            Point::ModelStream { nth, after_ms } => {
                let planning = event["kind"] == "run.state" && event["data"]["state"] == "planning";
                (planning.then_some("planning"), nth, after_ms)
            }
            Point::Command { nth, after_ms } => {
                let command =
                    event["kind"] == "tool.call" && event["data"]["tool"] == "run_command";
                (command.then_some("command"), nth, after_ms)
            }
            Point::Apply { nth, after_ms } => {
                let write = event["kind"] == "tool.call" && event["data"]["tool"] == "write_file";
                (write.then_some("write"), nth, after_ms)
            }
        };
        let count = counts.entry(key?).or_default();
        *count += 1;
        (*count == nth).then_some(after_ms)
    }
}

/// The `--json` lines of a child, read on a thread of their own.
fn lines_of(child: &mut Child) -> mpsc::Receiver<Value> {
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines() {
            let Ok(line) = line else { break };
            if let Ok(value) = serde_json::from_str::<Value>(&line)
                && tx.send(value).is_err()
            {
                break;
            }
        }
    });
    rx
}

/// (seq, kind, run) of an event line.
fn key(event: &Value) -> (u64, String, String) {
    (
        event["seq"].as_u64().unwrap(),
        event["kind"].as_str().unwrap().to_owned(),
        event["run"].as_str().unwrap_or_default().to_owned(),
    )
}

struct Fixture {
    dir: tempfile::TempDir,
    data: PathBuf,
}

impl Fixture {
    fn paddock(&self, args: &[&str]) -> Command {
        let mut command = Command::new(PADDOCK);
        command
            .args(args)
            .arg("--data-dir")
            .arg(&self.data)
            .env_remove("PADDOCK_SERVER")
            .env_remove("PADDOCK_MODEL")
            .stdin(Stdio::null())
            .stderr(Stdio::null());
        command
    }

    fn script(&self, name: &str, turns: &[Value]) -> Result<String> {
        let path = self.dir.path().join(name);
        std::fs::write(&path, json!({ "turns": turns }).to_string())?;
        Ok(format!("scripted:{}", path.display()))
    }

    /// The session's checkpoints, oldest first (`session checkpoints --json`).
    fn checkpoints(&self, session: &str) -> Result<Vec<Value>> {
        let out = self
            .paddock(&["session", "checkpoints", session, "--json"])
            .output()?;
        anyhow::ensure!(out.status.success(), "session checkpoints failed");
        Ok(serde_json::from_slice(&out.stdout)?)
    }

    /// The paths that differ from checkpoint `from` to `to` (None: the
    /// workspace now), by `session diff --json`.
    fn changed(&self, session: &str, from: &str, to: Option<&str>) -> Result<Vec<String>> {
        let mut args = vec!["session", "diff", session, "--from", from, "--json"];
        if let Some(to) = to {
            args.extend(["--to", to]);
        }
        let out = self.paddock(&args).output()?;
        anyhow::ensure!(out.status.success(), "session diff failed");
        let diff: Value = serde_json::from_slice(&out.stdout)?;
        Ok(diff["changes"]
            .as_array()
            .context("no changes in the diff")?
            .iter()
            .map(|c| c["path"].as_str().unwrap_or_default().to_owned())
            .collect())
    }

    /// Every stored event of the session, as `session events --json` prints them.
    fn stored(&self, session: &str) -> Result<Vec<Value>> {
        let out = self
            .paddock(&["session", "events", session, "--json"])
            .output()?;
        anyhow::ensure!(out.status.success(), "session events failed");
        Ok(String::from_utf8(out.stdout)?
            .lines()
            .map(serde_json::from_str)
            .collect::<Result<_, _>>()?)
    }
}

fn files_of(dir: &Path) -> Result<BTreeMap<String, String>> {
    let mut files = BTreeMap::new();
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        files.insert(
            entry.file_name().to_string_lossy().into_owned(),
            std::fs::read_to_string(entry.path())?,
        );
    }
    Ok(files)
}

#[test]
fn kill_9_at_random_points_then_resume_loses_and_repeats_nothing() -> Result<()> {
    let seed = std::env::var("PADDOCK_FAULT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64 | 1)
        });
    println!("fault rounds seeded with PADDOCK_FAULT_SEED={seed}");
    let mut rng = Rng(seed);
    let dir = tempfile::tempdir()?;
    let fx = Fixture {
        data: dir.path().join("data"),
        dir,
    };
    let full = fx.script("full.json", &turns())?;
    let started = Instant::now();
    let mut last = None;
    for round in 0..ROUNDS {
        let point = Point::pick(round, &mut rng);
        last = Some(
            run_round(&fx, &full, round, point)
                .with_context(|| format!("round {round}: {point:?}"))?,
        );
    }
    println!("{ROUNDS} fault rounds in {:?}", started.elapsed());

    // `runs show` names the run a resume continues; a run is resumed once.
    let (dead, resumed) = last.unwrap();
    let out = fx.paddock(&["runs", "show", &resumed]).output()?;
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(shown.contains(&format!("resumes    {dead}")), "{shown}");
    let again = fx
        .paddock(&["run", "--resume", &dead, "--model", &full])
        .stderr(Stdio::piped())
        .output()?;
    assert_eq!(again.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert!(stderr.contains("already resumed"), "{stderr}");
    Ok(())
}

/// The steering message of round `round`, posted before its kill.
fn steering_note(round: usize) -> String {
    format!("Round {round}: keep the files short.")
}

/// One round; answers the killed run and the run that resumed it.
fn run_round(fx: &Fixture, full: &str, round: usize, point: Point) -> Result<(String, String)> {
    let ws = fx.dir.path().join(format!("ws{round}"));
    std::fs::create_dir(&ws)?;
    std::fs::write(ws.join("seed.txt"), "seed\n")?;
    let ws_arg = ws.to_string_lossy().into_owned();

    // The run, killed at `point`; what its client was shown is acknowledged.
    let mut child = fx
        .paddock(&[
            "run",
            GOAL,
            "--workspace",
            &ws_arg,
            "--model",
            full,
            "--json",
        ])
        .stdout(Stdio::piped())
        .spawn()?;
    let lines = lines_of(&mut child);
    let mut seen_dead = Vec::new();
    let mut counts = HashMap::new();
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let line = lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .context("the run ended or stalled before its kill point")?;
        anyhow::ensure!(
            line["type"] == "event",
            "the run finished before its kill point: {line}"
        );
        if seen_dead.is_empty() {
            // a steering message accepted before the kill: the dead run
            // delivers it, or the resume carries it; either way, once
            let run = line["run"].as_str().context("no run id")?;
            let said = fx
                .paddock(&["session", "say", run, &steering_note(round)])
                .output()?;
            anyhow::ensure!(said.status.success(), "session say failed");
        }
        let after = point.trigger(&line, &mut counts);
        seen_dead.push(line);
        if let Some(after_ms) = after {
            std::thread::sleep(Duration::from_millis(after_ms));
            break;
        }
    }
    child.kill()?; // SIGKILL
    child.wait()?;
    seen_dead.extend(lines.iter().filter(|l| l["type"] == "event"));
    let session = seen_dead[0]["session"].as_str().unwrap().to_owned();
    let dead_run = seen_dead[0]["run"].as_str().unwrap().to_owned();

    // The resume plays the turns the dead run did not record.
    let before = fx.stored(&session)?;
    let recorded_turns = before
        .iter()
        .filter(|e| e["run"] == dead_run.as_str() && e["kind"] == "model.message")
        .count();
    let rest = fx.script(&format!("rest{round}.json"), &turns()[recorded_turns..])?;
    let mut resume = fx
        .paddock(&[
            "run", "--resume", &dead_run, "--model", &rest, "--json", "--force",
        ])
        .stdout(Stdio::piped())
        .spawn()?;
    let lines = lines_of(&mut resume);
    let mut seen_resumed = Vec::new();
    let mut result = None;
    let deadline = Instant::now() + Duration::from_secs(30);
    while result.is_none() {
        let line = lines
            .recv_timeout(deadline.saturating_duration_since(Instant::now()))
            .context("the resumed run did not finish")?;
        if line["type"] == "event" {
            seen_resumed.push(line);
        } else {
            result = Some(line);
        }
    }
    resume.wait()?;
    let result = result.unwrap();
    assert_eq!(result["run"]["state"], "completed", "{result}");
    assert_eq!(result["run"]["resumed_from"], dead_run.as_str(), "{result}");
    let new_run = result["run"]["id"].as_str().unwrap().to_owned();

    // Events: the store's sequence is whole, every acknowledged event is in
    // it as shown, and the resume's client saw exactly the new run's events.
    let stored = fx.stored(&session)?;
    let seqs: Vec<u64> = stored.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(
        seqs,
        (1..=stored.len() as u64).collect::<Vec<_>>(),
        "a gap or a repeat"
    );
    let by_seq: BTreeMap<u64, (u64, String, String)> = stored
        .iter()
        .map(|e| (e["seq"].as_u64().unwrap(), key(e)))
        .collect();
    for client in [&seen_dead, &seen_resumed] {
        let shown: Vec<_> = client.iter().map(key).collect();
        let unique: BTreeSet<u64> = shown.iter().map(|k| k.0).collect();
        assert_eq!(unique.len(), shown.len(), "an event shown twice");
        for event in &shown {
            assert_eq!(
                by_seq.get(&event.0),
                Some(event),
                "an acknowledged event was lost"
            );
        }
    }
    let new_events: Vec<_> = stored
        .iter()
        .filter(|e| e["run"] == new_run.as_str())
        .map(key)
        .collect();
    let shown_new: Vec<_> = seen_resumed.iter().map(key).collect();
    assert_eq!(shown_new, new_events);
    let delivered = stored
        .iter()
        .filter(|e| e["kind"] == "user.message" && e["data"]["message"] == steering_note(round))
        .count();
    assert_eq!(
        delivered, 1,
        "the steering message accepted before the kill"
    );

    // The workspace: the resumed run started from the dead run's last
    // checkpoint (restored), and its end is its own last checkpoint.
    let checkpoints = fx.checkpoints(&session)?;
    let last_of = |run: &str| {
        checkpoints
            .iter()
            .rfind(|c| c["run"] == run)
            .and_then(|c| c["id"].as_str())
            .map(str::to_owned)
    };
    let dead_last = last_of(&dead_run).context("the dead run took no checkpoint")?;
    // the last: a first one keeps what the dead run left, when the restore overwrote it
    let resumed_start = checkpoints
        .iter()
        .rfind(|c| c["run"] == new_run.as_str() && c["reason"] == "run_start")
        .and_then(|c| c["id"].as_str())
        .context("the resumed run took no start checkpoint")?;
    let started = stored
        .iter()
        .find(|e| e["run"] == new_run.as_str() && e["kind"] == "run.started")
        .context("no run.started of the resumed run")?;
    assert_eq!(
        started["data"]["restored_checkpoint"],
        dead_last.as_str(),
        "{started}"
    );
    let moved = fx.changed(&session, &dead_last, Some(resumed_start))?;
    assert!(
        moved.is_empty(),
        "the resumed run did not start from the last checkpoint: {moved:?}"
    );
    let resumed_last = last_of(&new_run).context("the resumed run took no checkpoint")?;
    let after = fx.changed(&session, &resumed_last, None)?;
    assert!(
        after.is_empty(),
        "the workspace is not the resumed run's last checkpoint: {after:?}"
    );

    // What that holds: the seed, every file write, each log line at most
    // once and in order, a missing one only where its call was not rerun.
    let files = files_of(&ws)?;
    assert_eq!(files.get("seed.txt").map(String::as_str), Some("seed\n"));
    for (name, content) in FILES {
        assert_eq!(
            files.get(name).map(String::as_str),
            Some(content),
            "{files:?}"
        );
    }
    let extra: Vec<_> = files
        .keys()
        .filter(|k| {
            !["seed.txt", "log.txt"].contains(&k.as_str()) && !FILES.iter().any(|f| f.0 == *k)
        })
        .collect();
    assert!(extra.is_empty(), "{extra:?}");
    let log = files.get("log.txt").cloned().unwrap_or_default();
    let lines: Vec<&str> = log.lines().collect();
    let expected: Vec<&str> = LOG_LINES
        .iter()
        .copied()
        .filter(|l| lines.contains(l))
        .collect();
    assert_eq!(lines, expected, "a command ran twice or out of order");
    let unresolved: Vec<String> = stored
        .iter()
        .filter(|e| e["run"] == new_run.as_str() && e["kind"] == "tool.result")
        .filter(|e| {
            let content = e["data"]["content"].as_str().unwrap_or_default();
            content.starts_with("Outcome unknown")
                || content.starts_with("Not run")
                || content.starts_with("Undone")
        })
        .map(|e| e["data"]["call_id"].as_str().unwrap().to_owned())
        .collect();
    let dead_commands: HashMap<String, String> = stored
        .iter()
        .filter(|e| e["run"] == dead_run.as_str() && e["kind"] == "model.message")
        .flat_map(|e| {
            e["data"]["tool_calls"]
                .as_array()
                .cloned()
                .unwrap_or_default()
        })
        .map(|c| {
            (
                c["id"].as_str().unwrap_or_default().to_owned(),
                c["arguments"]["command"]
                    .as_str()
                    .unwrap_or_default()
                    .to_owned(),
            )
        })
        .collect();
    for line in LOG_LINES.iter().filter(|l| !lines.contains(l)) {
        let excused = unresolved.iter().any(|id| {
            dead_commands
                .get(id)
                .is_some_and(|c| c.contains(&format!("echo {line}")))
        });
        assert!(
            excused,
            "log line {line} is missing and no result says why: {unresolved:?}"
        );
    }

    let rerun = new_events.len(); // for the summary line only
    println!(
        "round {round:2}: {point:?}: {recorded_turns} turns recorded, {} of its events shown, \
         unresolved calls {unresolved:?}, log {lines:?}, {rerun} new events",
        seen_dead.len()
    );

    // Nothing left behind: processes, mounts, cgroups of either run's sandbox.
    let sandboxes: Vec<String> = stored
        .iter()
        .filter(|e| e["kind"] == "sandbox.ready")
        .map(|e| e["data"]["sandbox_id"].as_str().unwrap().to_owned())
        .collect();
    assert!(
        wait_until(Duration::from_secs(10), || processes_with(&ws_arg)
            .is_empty()
            && sandboxes.iter().all(|id| processes_with(id).is_empty())),
        "a sandbox process outlived round {round}: {:?}",
        processes_with(&ws_arg)
    );
    assert!(
        wait_until(Duration::from_secs(10), || cgroups_below(CGROUP_PARENT)
            .iter()
            .all(|p| !sandboxes
                .iter()
                .any(|id| p.to_string_lossy().contains(id.as_str())))),
        "a sandbox cgroup outlived round {round}"
    );
    let mounts = std::fs::read_to_string("/proc/self/mountinfo")?;
    assert!(
        !mounts
            .lines()
            .any(|l| l.contains(&ws_arg) || sandboxes.iter().any(|id| l.contains(id.as_str()))),
        "a mount outlived round {round}"
    );
    Ok((dead_run, new_run))
}
