//! `paddock-bench-steer`: how long after a turn ends its next model request
//! leaves, with a steering message waiting (it must be in that request) and,
//! as the baseline in the same run, without one. A turn ends when its
//! command does: the command prints the wall clock as its last act, the
//! local model server stamps the request's arrival on the same clock. Runs
//! the real runtime: a SQLite store, a native sandbox, the OpenAI client
//! against the scripted model server. Not a test: it prints a table.
//!
//!   cargo run --release -p paddock-tests --bin paddock-bench-steer [-- --rounds 20]
//!
//! Needs root and `paddock-guest` built (release: `cargo build --release -p paddock-guest`).

use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use anyhow::{Context, bail};
use clap::Parser;
use paddock_core::store::{Budgets, RunMode};
use paddock_runtime::{Runtime, RuntimeConfig, RuntimeDeps, StartRun};
use paddock_test_support::model_server::{ModelServer, Request, Turn};
use paddock_test_support::{Stack, StackConfig};
use serde_json::json;

/// The floor: a message reaches the next request this soon after the turn.
const FLOOR: Duration = Duration::from_millis(50);
/// How long each turn's command runs (the message is posted meanwhile).
const COMMAND_SECS: f64 = 0.3;

#[derive(Debug, Parser)]
#[command(
    about = "Steering latency: turn end to the next model request, with and without a message"
)]
struct Args {
    /// Turns with a message, and as many without.
    #[arg(long, default_value_t = 15)]
    rounds: usize,
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    tokio::runtime::Runtime::new()?.block_on(bench(args.rounds))
}

/// Milliseconds from the command's last act to the request's arrival.
fn gap(request: &Request) -> anyhow::Result<Duration> {
    let output = request
        .last_tool_result()
        .context("no tool result in the request")?;
    let nanos: u128 = output
        .split_whitespace()
        .find(|w| w.len() >= 18 && w.chars().all(|c| c.is_ascii_digit()))
        .context("no timestamp in the command's output")?
        .parse()?;
    let ended = UNIX_EPOCH + Duration::from_nanos(u64::try_from(nanos)?);
    Ok(request.wall.duration_since(ended).unwrap_or(Duration::ZERO))
}

async fn bench(rounds: usize) -> anyhow::Result<()> {
    let turns = 2 * rounds;
    // each command differs: the repeat guard stops a run that repeats one
    let mut script: Vec<Turn> = (1..=turns)
        .map(|k| {
            let command = format!("echo turn {k}; sleep {COMMAND_SECS}; date +%s%N");
            Turn::call("run_command", json!({ "command": command }))
        })
        .collect();
    script.push(Turn::text("Done."));
    let model = ModelServer::start(script).await?;

    let dir = tempfile::tempdir()?;
    let stack = Stack::open(&StackConfig::in_dir(dir.path(), "paddock-bench-steer")).await?;
    let tenant = stack.tenant("bench", "Bench").await?;
    let runtime = Runtime::new(RuntimeDeps {
        store: stack.store,
        backend: stack.backend,
        blobs: stack.blobs,
        config: RuntimeConfig::new("bench", dir.path().join("workspaces")),
    });
    let project = dir.path().join("project");
    std::fs::create_dir_all(&project)?;
    let workspace = runtime.workspace_for_dir(&tenant, &project).await?;
    let session = runtime
        .create_session(&tenant, &workspace.id, "steering bench")
        .await?;
    let mut config = paddock_models::parse_spec("openai:scripted")?;
    config.base_url = Some(model.base_url.clone());
    let provider = paddock_models::build(&config)?;
    let budgets = Budgets {
        max_turns: u32::try_from(turns + 5)?,
        max_tool_calls: u32::try_from(turns + 5)?,
        ..Budgets::default()
    };
    let handle = runtime
        .start_run(
            &tenant,
            &session.id,
            StartRun {
                goal: "Run the command each turn".to_owned(),
                success_criteria: Vec::new(),
                mode: RunMode::Build,
                budgets,
                provider: Arc::clone(&provider),
                driver: paddock_runtime::BuiltinDriver::shared(),
                instructions: None,
                subagent_models: None,
                snapshot_limits: None,
                network: None,
                secrets: Vec::new(),
                backend: None,
                require_checkpoint: false,
            },
        )
        .await?;
    let run = handle.run.id.clone();

    // turn k (1-based) runs its command; on odd k a message is posted
    // meanwhile, so request k+1 must carry it
    let wait = Duration::from_secs(60);
    for k in 1..=turns {
        model.wait_requests(k, wait).await?;
        if k % 2 == 1 {
            runtime.steer(&tenant, &run, &format!("steer {k}")).await?;
        }
    }
    let requests = model.wait_requests(turns + 1, wait).await?;
    handle.wait().await?;

    let (mut steered, mut plain) = (Vec::new(), Vec::new());
    // request k+1 follows turn k
    for (k, next) in requests.iter().enumerate().skip(1).take(turns) {
        let gap = gap(next)?;
        let users = next.user_texts();
        if k % 2 == 1 {
            if users.last().map(String::as_str) != Some(format!("steer {k}").as_str()) {
                bail!("request {} lacks the message of turn {k}: {users:?}", k + 1);
            }
            steered.push(gap);
        } else {
            plain.push(gap);
        }
    }
    let show = |name: &str, gaps: &mut Vec<Duration>| {
        gaps.sort();
        let ms = |d: Duration| d.as_secs_f64() * 1000.0;
        println!(
            "{name:<34} {:>8.1} {:>8.1} {:>8.1} {:>6}",
            ms(gaps[gaps.len() / 2]),
            ms(gaps[gaps.len() * 9 / 10]),
            ms(gaps[gaps.len() - 1]),
            gaps.len()
        );
        gaps[gaps.len() - 1]
    };
    println!("turn end -> next model request (ms; {rounds} rounds of each, one run)");
    println!(
        "{:<34} {:>8} {:>8} {:>8} {:>6}",
        "", "median", "p90", "max", "turns"
    );
    let baseline = show("baseline: no message waiting", &mut plain);
    let worst = show("with a steering message", &mut steered);
    println!(
        "floor: a message reaches the next request < {} ms after the turn ends: {} (worst {:.1} ms, baseline worst {:.1} ms)",
        FLOOR.as_millis(),
        if worst < FLOOR { "met" } else { "NOT met" },
        worst.as_secs_f64() * 1000.0,
        baseline.as_secs_f64() * 1000.0,
    );
    Ok(())
}
