//! `paddock session ...` against a server (`--server URL`): the same
//! commands as HTTP requests; events come over SSE.

use anyhow::{Context, bail};
use paddock_api::http::{CheckpointList, RunList, SessionDeletedView, SessionList};
use paddock_api::service::sessions::{ForkSession, UpdateSession};
use paddock_api::service::{RewindSession, SessionView, SteerRun, SteeringView};
use paddock_core::ids::{CheckpointId, RunId};
use reqwest::Method;

use super::checkpoints::{print_checkpoints, print_diff, print_rewind};
use super::exit::EXIT_CANCELLED;
use super::render::Format;
use super::session::{
    fork_point, print_deleted, print_forked, print_said, print_session, print_session_event,
    print_sessions, print_show, steer_target,
};
use crate::cli::SessionCommand;
use crate::client::ApiClient;
use crate::client::sse::EventSource;
use crate::sandbox::signals::TermSignals;

pub async fn session(api: &ApiClient, command: SessionCommand) -> anyhow::Result<u8> {
    match command {
        SessionCommand::Ls {
            workspace, json, ..
        } => {
            let mut request = api.request(Method::GET, "/v1/sessions");
            if let Some(dir) = workspace {
                let id = dir.to_string_lossy().into_owned();
                if !id.starts_with("ws_") {
                    bail!(
                        "with --server, --workspace takes a workspace id (ws_...), not a directory"
                    );
                }
                request = request.query(&[("workspace", id)]);
            }
            let list: SessionList = api.answer(request).await?;
            print_sessions(&list.sessions, json)?;
        }
        SessionCommand::Show { id, json, .. } => {
            let session = get_session(api, &id).await?;
            let runs: RunList = api
                .answer(api.request(Method::GET, &format!("/v1/sessions/{}/runs", segment(&id))))
                .await?;
            print_show(&session, &runs.runs, json)?;
        }
        SessionCommand::Rename {
            id, title, json, ..
        } => {
            let request = api
                .request(Method::PATCH, &format!("/v1/sessions/{}", segment(&id)))
                .json(&UpdateSession {
                    title: Some(title),
                    archived: None,
                });
            print_session(&api.answer(request).await?, json)?;
        }
        SessionCommand::Archive { id, json, .. } => {
            let request = api.request(Method::DELETE, &format!("/v1/sessions/{}", segment(&id)));
            print_session(&api.answer(request).await?, json)?;
        }
        SessionCommand::Delete {
            id, force, json, ..
        } => {
            let mut path = format!("/v1/sessions/{}?purge=true", segment(&id));
            if force {
                path.push_str("&force=true");
            }
            let deleted: SessionDeletedView =
                api.answer(api.request(Method::DELETE, &path)).await?;
            print_deleted(&deleted, &deleted, json)?;
        }
        SessionCommand::Fork {
            id,
            at_run,
            at,
            title,
            json,
            ..
        } => {
            let (at_checkpoint, at_run) = fork_point(at.as_deref(), at_run.as_deref())?;
            let request = api
                .request(Method::POST, &format!("/v1/sessions/{}/fork", segment(&id)))
                .json(&ForkSession {
                    at_run,
                    at_checkpoint,
                    title,
                });
            print_forked(&api.answer(request).await?, json)?;
        }
        SessionCommand::Checkpoints { id, json, .. } => {
            let path = format!("/v1/sessions/{}/checkpoints", segment(&id));
            let list: CheckpointList = api.answer(api.request(Method::GET, &path)).await?;
            print_checkpoints(&list.checkpoints, json)?;
        }
        SessionCommand::Rewind {
            id,
            to,
            force,
            json,
            ..
        } => {
            let request = api
                .request(
                    Method::POST,
                    &format!("/v1/sessions/{}/rewind", segment(&id)),
                )
                .json(&RewindSession {
                    checkpoint: CheckpointId::parse(&to).context("--to")?,
                    force,
                });
            let rewound = api.answer(request).await?;
            print_rewind(&rewound, json, &api.server_flag())?;
        }
        SessionCommand::Diff {
            id, from, to, json, ..
        } => {
            let mut query = Vec::new();
            if let Some(from) = from {
                query.push(("from", from));
            }
            if let Some(to) = to {
                query.push(("to", to));
            }
            let request = api
                .request(Method::GET, &format!("/v1/sessions/{}/diff", segment(&id)))
                .query(&query);
            print_diff(&api.answer(request).await?, json)?;
        }
        SessionCommand::Say { id, text, json, .. } => {
            let run =
                match RunId::parse(&id) {
                    Ok(run) => run,
                    Err(_) => {
                        let runs: RunList = api
                            .answer(api.request(
                                Method::GET,
                                &format!("/v1/sessions/{}/runs", segment(&id)),
                            ))
                            .await?;
                        steer_target(&id, runs.runs.iter().map(|r| (&r.id, r.state)))?
                    }
                };
            let request = api
                .request(
                    Method::POST,
                    &format!("/v1/runs/{}/messages", segment(run.as_str())),
                )
                .json(&SteerRun { text });
            let said: SteeringView = api.answer(request).await?;
            print_said(&run, said.id, json)?;
        }
        SessionCommand::Events {
            id,
            after,
            follow,
            json,
            ..
        } => {
            let format = if json { Format::Json } else { Format::Human };
            return events(api, &id, after, follow, format).await;
        }
    }
    Ok(0)
}

async fn get_session(api: &ApiClient, id: &str) -> anyhow::Result<SessionView> {
    api.answer(api.request(Method::GET, &format!("/v1/sessions/{}", segment(id))))
        .await
}

/// Streams the session's events over SSE; without `follow`, stops once the
/// events stored so far are printed.
async fn events(
    api: &ApiClient,
    id: &str,
    after: u64,
    follow: bool,
    format: Format,
) -> anyhow::Result<u8> {
    let session = get_session(api, id).await?;
    let mut query = vec![("after", after.to_string())];
    if !follow {
        query.push(("until", "caught_up".to_owned()));
    }
    let path = format!("/v1/sessions/{}/events", segment(id));
    let mut source = EventSource::open(api, &path, &query).await?;
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
        if let Some(event) = frame.run_event(&session.id) {
            print_session_event(&mut stdout, format, &event);
        }
    }
}

/// One path segment, percent-encoded.
pub fn segment(raw: &str) -> String {
    crate::client::encode_path(&raw.replace('/', "%2F"))
}
