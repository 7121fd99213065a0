//! `paddock runs show|cancel|children|events ID`: one run, in the local data
//! dir (the store `paddock run` writes) or, with --server, on a server.
//!
//! A local run is driven by the `paddock run` process that started it; a
//! local cancel sends that process SIGINT (after checking by pid and start
//! time that it is still that process), which cancels it as Ctrl-C would,
//! and waits until the store shows the run ended.

use std::io::Write;
use std::time::Duration;

use anyhow::{Context, bail};
use paddock_api::http::{ChildRuns, RunList};
use paddock_api::service::RunView;
use paddock_core::ids::RunId;
use paddock_core::model::Prices;
use paddock_core::store::{Lease, RunState};
use paddock_runtime::events::Event;
use reqwest::Method;
use tokio::time::Instant;

use super::exit::EXIT_CANCELLED;
use super::local::{Local, Sandboxes};
use super::owner::LocalProcesses;
use super::remote::segment;
use super::remote_run::{get_run, settled};
use super::render::{self, Format};
use super::session::{print_session_event, run_view, run_views};
use crate::cli::{RunsCli, RunsCommand};
use crate::client::sse::EventSource;
use crate::client::{ApiClient, print_json};
use crate::printable::printable;
use crate::sandbox::signals::TermSignals;

/// How long a cancel waits for the run to end.
const CANCEL_WAIT: Duration = Duration::from_secs(30);
/// How often a local wait looks at the store (another process writes it).
const POLL: Duration = Duration::from_millis(200);
const EVENTS_PAGE: u32 = 500;

pub async fn runs(cli: RunsCli) -> anyhow::Result<u8> {
    if cli.server.server.is_some() {
        let api = ApiClient::from_args(&cli.server, "runs")?;
        return remote(&api, cli.command).await;
    }
    let data = match &cli.command {
        RunsCommand::Show(args) | RunsCommand::Cancel(args) | RunsCommand::Children(args) => {
            args.data.clone()
        }
        RunsCommand::Events { run, .. } => run.data.clone(),
    };
    let local = Local::open(&data, Sandboxes::NotNeeded, Prices::default()).await?;
    // A run whose process died is shown interrupted, never active.
    local.recover().await;
    let result = local_command(&local, cli.command).await;
    local.close().await;
    result
}

async fn local_command(local: &Local, command: RunsCommand) -> anyhow::Result<u8> {
    let runtime = &local.runtime;
    let tenant = &local.tenant;
    match command {
        RunsCommand::Show(args) => {
            let run = runtime.get_run(tenant, &run_id(&args.id)?).await?;
            print_run(&run_view(runtime, &run).await?, args.json)?;
        }
        RunsCommand::Children(args) => {
            let id = run_id(&args.id)?;
            runtime.get_run(tenant, &id).await?;
            let children = runtime.list_child_runs(tenant, &id).await?;
            let views = run_views(runtime, &children).await?;
            print_runs(&views, args.json)?;
        }
        RunsCommand::Cancel(args) => {
            let id = run_id(&args.id)?;
            let run = local_cancel(local, &id).await?;
            print_cancelled(&run, args.json)?;
        }
        RunsCommand::Events { run, after, follow } => {
            let format = if run.json {
                Format::Json
            } else {
                Format::Human
            };
            return local_events(local, &run_id(&run.id)?, after, follow, format).await;
        }
    }
    Ok(0)
}

/// Signals the `paddock run` process driving the run, then waits for the
/// store to show it ended.
async fn local_cancel(local: &Local, id: &RunId) -> anyhow::Result<RunView> {
    let run = local.runtime.get_run(&local.tenant, id).await?;
    if run.state.is_terminal() || run.state == RunState::AwaitingUser {
        return run_view(&local.runtime, &run).await;
    }
    if let Some(parent) = &run.parent_run {
        bail!(
            "run {id} is a subagent of {parent}, driven inside its `paddock run` process: \
             cancel {parent} (its children end with it)"
        );
    }
    let lease = local
        .store
        .get_lease(&Lease::session_resource(&run.session))
        .await?;
    let probe = LocalProcesses {
        host: local.host.clone(),
    };
    let Some(owner) = lease.map(|l| l.owner) else {
        bail!("run {id} is {} but nothing drives it", run.state);
    };
    let Some(pid) = probe.live_pid(&owner) else {
        bail!(
            "run {id} is driven by {owner}, not by a `paddock run` on this host: cancel it there \
             (for a server's run, `paddock runs cancel --server URL {id}`)"
        );
    };
    let pid = nix::unistd::Pid::from_raw(i32::try_from(pid).context("the owner's pid")?);
    nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT)
        .with_context(|| format!("signalling the `paddock run` process {pid} of run {id}"))?;
    let deadline = Instant::now() + CANCEL_WAIT;
    loop {
        let run = local.runtime.get_run(&local.tenant, id).await?;
        if run.state.is_terminal() || run.state == RunState::AwaitingUser {
            return run_view(&local.runtime, &run).await;
        }
        if Instant::now() >= deadline {
            bail!(
                "run {id} is still {} {} s after the cancel was sent to process {pid}",
                run.state,
                CANCEL_WAIT.as_secs()
            );
        }
        tokio::time::sleep(POLL).await;
    }
}

/// The run's stored events after `after`; with `follow`, new ones until its
/// `run.finished`.
async fn local_events(
    local: &Local,
    id: &RunId,
    mut after: u64,
    follow: bool,
    format: Format,
) -> anyhow::Result<u8> {
    let run = local.runtime.get_run(&local.tenant, id).await?;
    let mut signals = if follow {
        Some(TermSignals::install()?)
    } else {
        None
    };
    let mut stdout = std::io::stdout();
    loop {
        let page = local
            .store
            .list_events(&local.tenant, &run.session, after, EVENTS_PAGE)
            .await?;
        let mut finished = false;
        for event in &page {
            after = event.seq;
            if event.run.as_ref() != Some(id) {
                continue;
            }
            print_session_event(&mut stdout, format, event);
            finished |= Event::of(event).is_run_finished();
        }
        if finished {
            return Ok(0);
        }
        if u32::try_from(page.len()).is_ok_and(|n| n >= EVENTS_PAGE) {
            continue;
        }
        let Some(signals) = signals.as_mut() else {
            return Ok(0);
        };
        // A run that ended without a `run.finished` (interrupted) has nothing more.
        let now = local.runtime.get_run(&local.tenant, id).await?;
        if now.state.is_terminal() && page.is_empty() {
            return Ok(0);
        }
        tokio::select! {
            () = tokio::time::sleep(POLL) => {}
            _ = signals.recv() => return Ok(EXIT_CANCELLED),
        }
    }
}

async fn remote(api: &ApiClient, command: RunsCommand) -> anyhow::Result<u8> {
    match command {
        RunsCommand::Show(args) => {
            print_run(&get(api, &args.id).await?, args.json)?;
        }
        RunsCommand::Children(args) => {
            let path = format!("/v1/runs/{}/children", segment(&args.id));
            let list: ChildRuns = api.answer(api.request(Method::GET, &path)).await?;
            print_runs(&list.runs, args.json)?;
        }
        RunsCommand::Cancel(args) => {
            let path = format!("/v1/runs/{}/cancel", segment(&args.id));
            api.answer::<RunView>(api.request(Method::POST, &path))
                .await?;
            // The server answers once its cancel took; the row may lag a moment.
            let run = settled(api, &args.id).await?;
            print_cancelled(&run, args.json)?;
        }
        RunsCommand::Events { run, after, follow } => {
            let format = if run.json {
                Format::Json
            } else {
                Format::Human
            };
            return remote_events(api, &run.id, after, follow, format).await;
        }
    }
    Ok(0)
}

async fn get(api: &ApiClient, id: &str) -> anyhow::Result<RunView> {
    get_run(api, id).await
}

/// Without `follow`: the session's stored events (caught up), this run's
/// only. With it: the run's own stream, which ends after its `run.finished`.
async fn remote_events(
    api: &ApiClient,
    id: &str,
    after: u64,
    follow: bool,
    format: Format,
) -> anyhow::Result<u8> {
    let run = get(api, id).await?;
    let mut source = if follow {
        let path = format!("/v1/runs/{}/events", segment(id));
        EventSource::open(api, &path, &[("after", after.to_string())]).await?
    } else {
        let path = format!("/v1/sessions/{}/events", segment(run.session.as_str()));
        let query = [
            ("after", after.to_string()),
            ("until", "caught_up".to_owned()),
        ];
        EventSource::open(api, &path, &query).await?
    };
    let mut signals = TermSignals::install()?;
    let mut stdout = std::io::stdout();
    loop {
        let frame = tokio::select! {
            frame = source.next() => frame?,
            _ = signals.recv() => return Ok(EXIT_CANCELLED),
        };
        let Some(frame) = frame else {
            return Ok(0);
        };
        if let Some(event) = frame.run_event(&run.session)
            && event.run.as_ref() == Some(&run.id)
        {
            print_session_event(&mut stdout, format, &event);
        }
    }
}

fn run_id(raw: &str) -> anyhow::Result<RunId> {
    RunId::parse(raw).context("the run id")
}

fn print_run(run: &RunView, json: bool) -> anyhow::Result<()> {
    if json {
        return print_json(&serde_json::to_value(run)?);
    }
    println!("run        {}", run.id);
    println!("session    {}", run.session);
    let end = run
        .end_reason
        .map(|r| format!(" ({r})"))
        .unwrap_or_default();
    println!("state      {}{end}", run.state);
    println!("mode       {}", run.mode);
    println!(
        "goal       {}",
        printable(run.goal.lines().next().unwrap_or_default())
    );
    if let Some(parent) = &run.parent_run {
        let profile = run.profile.map(|p| format!(" as {p}")).unwrap_or_default();
        println!("parent     {parent}{profile}");
    }
    if let Some(from) = &run.resumed_from {
        println!("resumes    {from}");
    }
    println!("created    {}", run.created_at);
    if let Some(finished) = &run.finished_at {
        println!("finished   {finished}");
    }
    if let Some(snapshot) = &run.end_snapshot {
        println!("end snap   {snapshot}");
    }
    let mut out = std::io::stdout();
    render::print_result(&mut out, run, run.session.as_str());
    Ok(())
}

fn print_runs(runs: &[RunView], json: bool) -> anyhow::Result<()> {
    if json {
        return print_json(&RunList {
            runs: runs.to_vec(),
        });
    }
    if runs.is_empty() {
        println!("no runs");
        return Ok(());
    }
    for run in runs {
        let verdict = run
            .review
            .as_ref()
            .map_or("-".to_owned(), |r| r.verdict.to_string());
        let profile = run.profile.map_or("-".to_owned(), |p| p.to_string());
        println!(
            "{}  {:<9}  {:<7}  {:<8}  {}",
            run.id,
            run.state.as_str(),
            verdict,
            profile,
            printable(
                run.task_key
                    .as_deref()
                    .unwrap_or_else(|| { run.goal.lines().next().unwrap_or_default() })
            )
        );
    }
    Ok(())
}

fn print_cancelled(run: &RunView, json: bool) -> anyhow::Result<()> {
    if json {
        return print_json(&serde_json::to_value(run)?);
    }
    let mut out = std::io::stdout();
    let _ = writeln!(out, "{} {}", run.id, run.state);
    Ok(())
}
