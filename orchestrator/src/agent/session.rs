//! `paddock session ls|show|rename|archive|fork|events`: on the local data
//! dir, or with --server on a server's sessions.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::{Context, bail};
use paddock_api::http::SessionDeletedView;
use paddock_api::service::sessions::fork_title;
use paddock_api::service::{CheckpointDiffView, CheckpointView, RewindView, RunView, SessionView};
use paddock_core::ids::{CheckpointId, RunId, SessionId};
use paddock_core::model::Prices;
use paddock_core::store::{MAX_PAGE, Page, Run, RunState, Session};
use paddock_runtime::events::Event;
use paddock_runtime::{Runtime, RuntimeError};
use serde::Serialize;
use serde_json::json;

use super::checkpoints::{print_checkpoints, print_diff, print_rewind};
use super::exit::{EXIT_CANCELLED, EXIT_USAGE};
use super::local::{Local, Sandboxes};
use super::remote;
use super::render::{self, Format};
use crate::cli::{ServerArgs, SessionCommand};
use crate::client::{ApiClient, print_json};
use crate::printable::printable;
use crate::sandbox::signals::TermSignals;

/// How often `events --follow` looks for new events in the local store
/// (another process writes them; only the store sees them all).
const FOLLOW_POLL: Duration = Duration::from_millis(250);
const EVENTS_PAGE: u32 = 500;

pub async fn session(command: SessionCommand, server: &ServerArgs) -> anyhow::Result<u8> {
    if server.server.is_some() {
        let api = ApiClient::from_args(server, "session")?;
        return remote::session(&api, command).await;
    }
    let data = match &command {
        SessionCommand::Ls { data, .. }
        | SessionCommand::Show { data, .. }
        | SessionCommand::Rename { data, .. }
        | SessionCommand::Archive { data, .. }
        | SessionCommand::Delete { data, .. }
        | SessionCommand::Fork { data, .. }
        | SessionCommand::Checkpoints { data, .. }
        | SessionCommand::Rewind { data, .. }
        | SessionCommand::Diff { data, .. }
        | SessionCommand::Say { data, .. }
        | SessionCommand::Events { data, .. } => data.clone(),
    };
    let local = Local::open(&data, Sandboxes::NotNeeded, Prices::default()).await?;
    // A run whose process died is shown interrupted, never active.
    local.recover().await;
    let result = local_command(&local, command).await;
    local.close().await;
    result
}

async fn local_command(local: &Local, command: SessionCommand) -> anyhow::Result<u8> {
    let runtime = &local.runtime;
    let tenant = &local.tenant;
    match command {
        SessionCommand::Ls {
            workspace, json, ..
        } => {
            let workspace = match workspace {
                None => None,
                Some(dir) => match registered_workspace(local, &dir).await? {
                    Some(id) => Some(id),
                    // a directory no run ever used has no sessions
                    None => return print_sessions(&[], json).map(|()| 0),
                },
            };
            let mut views: Vec<SessionView> = Vec::new();
            let mut page = Page {
                after: None,
                limit: MAX_PAGE,
            };
            loop {
                let sessions = runtime
                    .list_sessions(tenant, workspace.as_ref(), &page)
                    .await?;
                for session in &sessions {
                    views.push(with_memory(local, session).await?);
                }
                match sessions.last() {
                    Some(last) if sessions.len() >= MAX_PAGE as usize => {
                        page.after = Some(last.id.to_string());
                    }
                    _ => break,
                }
            }
            print_sessions(&views, json)?;
        }
        SessionCommand::Show { id, json, .. } => {
            let id = session_id(&id)?;
            let session = runtime.get_session(tenant, &id).await?;
            let runs = runtime.list_runs(tenant, &id).await?;
            print_show(
                &with_memory(local, &session).await?,
                &run_views(runtime, &runs).await?,
                json,
            )?;
        }
        SessionCommand::Rename {
            id, title, json, ..
        } => {
            let id = session_id(&id)?;
            let title = title.trim();
            if title.is_empty() {
                bail!("the title is empty");
            }
            let session = runtime.rename_session(tenant, &id, title).await?;
            print_session(&session_view(&session), json)?;
        }
        SessionCommand::Archive { id, json, .. } => {
            let id = session_id(&id)?;
            let session = runtime.archive_session(tenant, &id).await?;
            print_session(&session_view(&session), json)?;
        }
        SessionCommand::Delete {
            id, force, json, ..
        } => {
            if force {
                bail!(
                    "--force cancels runs on a server (--server); stop a local run with Ctrl-C \
                     in its terminal"
                );
            }
            let id = session_id(&id)?;
            let deleted = runtime.delete_session(tenant, &id).await?;
            print_deleted(&SessionDeletedView::from(&deleted), &deleted, json)?;
        }
        SessionCommand::Fork {
            id,
            at_run,
            at,
            title,
            json,
            ..
        } => {
            let id = session_id(&id)?;
            let (at, at_run) = fork_point(at.as_deref(), at_run.as_deref())?;
            let title = match title {
                Some(title) if !title.trim().is_empty() => title.trim().to_owned(),
                Some(_) => bail!("the title is empty"),
                None => fork_title(&runtime.get_session(tenant, &id).await?.title),
            };
            let fork = match &at {
                Some(checkpoint) => {
                    runtime
                        .fork_at_checkpoint(tenant, &id, checkpoint, &title)
                        .await?
                }
                None => {
                    runtime
                        .fork_session(tenant, &id, at_run.as_ref(), &title)
                        .await?
                }
            };
            print_forked(&session_view(&fork), json)?;
        }
        SessionCommand::Checkpoints { id, json, .. } => {
            let id = session_id(&id)?;
            let checkpoints = runtime.list_checkpoints(tenant, &id).await?;
            let views: Vec<CheckpointView> = checkpoints.iter().map(CheckpointView::from).collect();
            print_checkpoints(&views, json)?;
        }
        SessionCommand::Rewind {
            id,
            to,
            force,
            json,
            ..
        } => {
            let id = session_id(&id)?;
            let to = CheckpointId::parse(&to).context("--to")?;
            let rewound = match runtime.rewind_session(tenant, &id, &to, force).await {
                Ok(rewound) => rewound,
                // nothing was written: the caller decides
                Err(err @ RuntimeError::WorkspaceChanged { .. }) => {
                    eprintln!("paddock: {}", printable(&err.to_string()));
                    return Ok(EXIT_USAGE);
                }
                Err(err) => return Err(err.into()),
            };
            print_rewind(&RewindView::from(&rewound), json, &local.data_dir_flag())?;
        }
        SessionCommand::Diff {
            id, from, to, json, ..
        } => {
            let id = session_id(&id)?;
            let parse = |flag: &str, value: Option<String>| {
                value
                    .as_deref()
                    .map(CheckpointId::parse)
                    .transpose()
                    .with_context(|| flag.to_owned())
            };
            let (from, to) = (parse("--from", from)?, parse("--to", to)?);
            let diff = runtime
                .diff_checkpoints(tenant, &id, from.as_ref(), to.as_ref())
                .await?;
            print_diff(&CheckpointDiffView::from(&diff), json)?;
        }
        SessionCommand::Say { id, text, json, .. } => {
            let run = match RunId::parse(&id) {
                Ok(run) => run,
                Err(_) => {
                    let session = session_id(&id)?;
                    let runs = runtime.list_runs(tenant, &session).await?;
                    steer_target(&id, runs.iter().map(|r| (&r.id, r.state)))?
                }
            };
            let message = runtime.steer(tenant, &run, &text).await?;
            print_said(&run, message.id, json)?;
        }
        SessionCommand::Events {
            id,
            after,
            follow,
            json,
            ..
        } => {
            let id = session_id(&id)?;
            runtime.get_session(tenant, &id).await?;
            let format = if json { Format::Json } else { Format::Human };
            return local_events(local, &id, after, follow, format).await;
        }
    }
    Ok(0)
}

/// The session's events after `after`; with `follow`, new ones as they are
/// stored, until a termination signal.
async fn local_events(
    local: &Local,
    id: &SessionId,
    mut after: u64,
    follow: bool,
    format: Format,
) -> anyhow::Result<u8> {
    let mut signals = if follow {
        Some(TermSignals::install()?)
    } else {
        None
    };
    let mut stdout = std::io::stdout();
    loop {
        let page = local
            .store
            .list_events(&local.tenant, id, after, EVENTS_PAGE)
            .await?;
        for event in &page {
            print_session_event(&mut stdout, format, event);
            after = event.seq;
        }
        if u32::try_from(page.len()).is_ok_and(|n| n >= EVENTS_PAGE) {
            continue;
        }
        let Some(signals) = signals.as_mut() else {
            return Ok(0);
        };
        tokio::select! {
            () = tokio::time::sleep(FOLLOW_POLL) => {}
            _ = signals.recv() => return Ok(EXIT_CANCELLED),
        }
    }
}

/// An event of a session's log: its sequence number and run first, for people.
pub fn print_session_event(
    out: &mut impl Write,
    format: Format,
    event: &paddock_core::store::RunEvent,
) {
    if event.is_transient() {
        return;
    }
    match format {
        Format::Json => render::print_event(out, format, event),
        Format::Human => {
            let text = render::human_event(event)
                .or_else(|| state_change(event))
                .unwrap_or_else(|| format!("[{}]", event.kind));
            let run = event.run.as_ref().map_or("-", |r| r.as_str());
            let _ = writeln!(out, "#{} {run} {}", event.seq, printable(text.trim_start()));
            let _ = out.flush();
        }
    }
}

/// `[state] acting`: every state change, which a run's own output leaves out.
fn state_change(event: &paddock_core::store::RunEvent) -> Option<String> {
    match Event::of(event) {
        Event::RunState(changed) => Some(format!("[state] {}", changed.state)),
        _ => None,
    }
}

/// The session's run a message goes to: its latest, if it is still going.
pub(super) fn steer_target<'a>(
    session: &str,
    runs: impl DoubleEndedIterator<Item = (&'a RunId, RunState)>,
) -> anyhow::Result<RunId> {
    match runs.last() {
        Some((run, state)) if !state.is_terminal() && state != RunState::AwaitingUser => {
            Ok(run.clone())
        }
        Some((run, state)) => bail!(
            "session {session} has no run in progress (its last run {run} is {state}); \
             start a new run to go on"
        ),
        None => bail!("session {session} has no runs"),
    }
}

pub(super) fn print_said(run: &RunId, id: u64, json: bool) -> anyhow::Result<()> {
    if json {
        return print_json(&json!({ "run": run, "steering_id": id }));
    }
    println!("sent to run {run}; it reads it before its next model turn");
    Ok(())
}

/// The workspace registered for `dir`, if any run used it.
pub(super) async fn registered_workspace(
    local: &Local,
    dir: &Path,
) -> anyhow::Result<Option<paddock_core::ids::WorkspaceId>> {
    let dir = dir
        .canonicalize()
        .with_context(|| format!("--workspace {}", dir.display()))?;
    let found = local
        .store
        .find_workspace_by_root(&local.tenant, &dir.to_string_lossy())
        .await?;
    Ok(found.map(|w| w.id))
}

fn session_id(raw: &str) -> anyhow::Result<SessionId> {
    SessionId::parse(raw).context("the session id")
}

fn session_view(session: &Session) -> SessionView {
    SessionView::from(session)
}

/// The session's view with the memory its runs left.
async fn with_memory(local: &Local, session: &Session) -> anyhow::Result<SessionView> {
    let mut view = SessionView::from(session);
    view.memory = local
        .runtime
        .session_memory(&local.tenant, &session.id)
        .await?
        .map(|stored| stored.memory);
    Ok(view)
}

/// The line of a session's summary that says how its last run ended.
fn summary_line(session: &SessionView) -> Option<String> {
    let memory = session.memory.as_ref()?;
    let line = memory
        .summary
        .lines()
        .find(|l| !l.starts_with("Goal:"))
        .or_else(|| memory.summary.lines().next())?;
    Some(line.chars().take(100).collect())
}

pub(super) async fn run_views(runtime: &Runtime, runs: &[Run]) -> anyhow::Result<Vec<RunView>> {
    let mut views = Vec::with_capacity(runs.len());
    for run in runs {
        views.push(run_view(runtime, run).await?);
    }
    Ok(views)
}

/// The run as the API shows it, with its subagents' usage in `total_usage`.
pub(super) async fn run_view(runtime: &Runtime, run: &Run) -> anyhow::Result<RunView> {
    let total = runtime
        .total_usage(run)
        .await
        .context("reading the subagents' usage")?;
    Ok(RunView::new(run, total))
}

pub fn print_sessions(sessions: &[SessionView], json: bool) -> anyhow::Result<()> {
    if json {
        return print_json(&json!({ "sessions": sessions }));
    }
    if sessions.is_empty() {
        println!("no sessions");
        return Ok(());
    }
    println!("{:<36}  {:<8}  {:<24}  TITLE", "ID", "STATUS", "CREATED");
    for s in sessions {
        println!(
            "{:<36}  {:<8}  {:<24}  {}",
            s.id,
            s.status.as_str(),
            s.created_at,
            printable(&s.title)
        );
        if let Some(line) = summary_line(s) {
            println!("{:<36}  {}", "", printable(&line));
        }
    }
    Ok(())
}

/// What a session deletion removed; with `json`, `answer` as it came (the
/// runtime's `SessionDeleted` here, the API's `SessionDeletedView` from a
/// server, which has the sessions under `deleted`).
pub fn print_deleted(
    deleted: &SessionDeletedView,
    answer: &impl Serialize,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        return print_json(answer);
    }
    let first = deleted
        .deleted
        .first()
        .map_or("?", |session| session.as_str());
    println!(
        "deleted {first}{}: {} checkpoints, {} files ({} bytes) freed",
        match deleted.deleted.len().saturating_sub(1) {
            0 => String::new(),
            n => format!(" and {n} subagent sessions"),
        },
        deleted.checkpoints,
        deleted.blobs_removed,
        deleted.bytes_freed,
    );
    Ok(())
}

/// `--at` and `--at-run` of `session fork` as ids (a checkpoint, a run),
/// each error naming its flag and the value.
pub fn fork_point(
    at: Option<&str>,
    at_run: Option<&str>,
) -> anyhow::Result<(Option<CheckpointId>, Option<RunId>)> {
    let at = at.map(CheckpointId::parse).transpose().context("--at")?;
    let at_run = at_run.map(RunId::parse).transpose().context("--at-run")?;
    Ok((at, at_run))
}

pub fn print_session(session: &SessionView, json: bool) -> anyhow::Result<()> {
    if json {
        return print_json(&serde_json::to_value(session)?);
    }
    println!(
        "{}  {}  {}",
        session.id,
        session.status,
        printable(&session.title)
    );
    Ok(())
}

pub fn print_forked(session: &SessionView, json: bool) -> anyhow::Result<()> {
    if json {
        return print_json(&serde_json::to_value(session)?);
    }
    println!("{}", session.id);
    Ok(())
}

pub fn print_show(session: &SessionView, runs: &[RunView], json: bool) -> anyhow::Result<()> {
    if json {
        return print_json(&json!({ "session": session, "runs": runs }));
    }
    println!("session    {}", session.id);
    println!("title      {}", printable(&session.title));
    println!("status     {}", session.status);
    println!("workspace  {}", session.workspace);
    println!("created    {}", session.created_at);
    if let Some(from) = &session.forked_from {
        let at = session
            .forked_at_run
            .as_ref()
            .map(|r| format!(" at the end of {r}"))
            .unwrap_or_default();
        println!("forked     from {from}{at}");
    }
    if let Some(memory) = &session.memory {
        println!("summary:");
        for line in memory.summary.lines() {
            println!("  {}", printable(line));
        }
        for (label, items) in [
            ("open questions", &memory.open_questions),
            ("next steps", &memory.next_steps),
            ("workspace facts", &memory.facts),
        ] {
            if !items.is_empty() {
                println!("{label}:");
                for item in items {
                    println!("  - {}", printable(item));
                }
            }
        }
    }
    if runs.is_empty() {
        println!("runs       none");
        return Ok(());
    }
    println!("runs:");
    for run in runs {
        let verdict = run
            .review
            .as_ref()
            .map_or("-".to_owned(), |r| r.verdict.to_string());
        let end = run.end_reason.map_or("-".to_owned(), |r| r.to_string());
        println!(
            "  {}  {:<9}  {:<15}  {:<7}  {}  {:>9}  {}",
            run.id,
            run.state.as_str(),
            end,
            verdict,
            run.mode,
            format!("{} tok", run.total_usage.tokens()),
            run.goal.lines().next().unwrap_or_default()
        );
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn fork_points_parse_and_name_the_flag_and_value_they_refuse() {
        assert_eq!(fork_point(None, None).unwrap(), (None, None));
        let checkpoint = CheckpointId::generate();
        let run = RunId::generate();
        assert_eq!(
            fork_point(Some(checkpoint.as_str()), Some(run.as_str())).unwrap(),
            (Some(checkpoint), Some(run))
        );
        let at = fork_point(Some("cp_nope"), None).unwrap_err();
        assert!(
            format!("{at:#}").starts_with("--at: invalid checkpoint id \"cp_nope\""),
            "{at:#}"
        );
        let at_run = fork_point(None, Some("nope")).unwrap_err();
        assert!(
            format!("{at_run:#}").starts_with("--at-run: invalid run id \"nope\""),
            "{at_run:#}"
        );
    }
}
