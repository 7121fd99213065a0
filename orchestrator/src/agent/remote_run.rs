//! `paddock run --server URL "GOAL"`: the same run on a server. The
//! workspace directory goes up as one archive (`POST /v1/workspaces/import`),
//! the run starts in a new session there (or in `--session`), its events come
//! over SSE (resumed after a dropped connection) and print through the same
//! renderer as a local run, and so does the result; Ctrl-C cancels it on the
//! server. Nothing ever runs here.

use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use paddock_api::service::sessions::ResumedView;
use paddock_api::service::{RunView, SessionView, WorkspaceView};
use paddock_core::model::ProviderKind;
use paddock_runtime::events::Event;
use reqwest::Method;
use serde_json::{Value, json};
use tokio::time::Instant;

use super::exit::{self, EXIT_CANCELLED, EXIT_USAGE};
use super::live::Screen;
use super::remote::segment;
use super::render::{self, Format};
use super::run::{
    Request, budget_flags_given, budgets, canonical_dir, format_of, request, snapshot_limits,
    subagent_entries, title,
};
use super::typed::{TypedLines, next_line};
use crate::cli::{BackendArgs, GoalArgs};
use crate::client::sse::EventSource;
use crate::client::{ApiClient, ServerError, backend_fields, secrets_field, upload_dir};
use crate::logging;
use crate::sandbox::signals::TermSignals;

/// How long a cancelled run may take to report `run.finished`.
const CANCEL_WAIT: Duration = Duration::from_secs(30);
/// Reconnects of the event stream in a row before giving up on it.
const MAX_RECONNECTS: u32 = 5;
const RECONNECT_PAUSE: Duration = Duration::from_secs(1);
/// How long the run's row may lag behind its `run.finished` event.
const SETTLE_WAIT: Duration = Duration::from_secs(10);

/// A mistake of the caller's (exit 2), or anything else (125).
enum Failure {
    Usage(String),
    Other(anyhow::Error),
}

impl From<anyhow::Error> for Failure {
    fn from(err: anyhow::Error) -> Self {
        Self::Other(err)
    }
}

/// `backend`: `--backend`/`--image`, sent as the run's (the server picks
/// among the backends it enabled).
pub async fn run(args: GoalArgs, backend: &BackendArgs) -> anyhow::Result<u8> {
    let format = format_of(&args);
    let api = ApiClient::from_args(&args.server, "run --server")?;
    let started = async {
        if !args.prices.is_empty() {
            return Err(Failure::Usage(
                "--price prices a local run; a server prices its models from its own config \
                 (`prices` in the server config)"
                    .to_owned(),
            ));
        }
        let (model, mut extra) = model_and_extra(&args)?;
        if let Some(id) = &args.resume {
            if !args.secrets.is_empty() {
                return Err(Failure::Usage(
                    "--secret: a resumed run gets no secrets (they are never stored); \
                     start a new run with them"
                        .to_owned(),
                ));
            }
            return resume(&api, &args, id, model, extra).await;
        }
        if !args.secrets.is_empty() {
            // refused here as the server would (without --network, the
            // server's default decides, and the server checks)
            if let Some(network) = &args.network {
                paddock_proto::check_secrets_network(args.secrets.len(), network)
                    .map_err(|err| Failure::Usage(format!("--secret: {err}")))?;
            }
            extra.insert("secrets".to_owned(), secrets_field(&args.secrets));
        }
        extra.extend(backend_fields(backend.backend, backend.image.as_deref()));
        if let Some(network) = &args.network {
            extra.insert("network".to_owned(), json!(network));
        }
        let request = request(&args).map_err(Failure::Usage)?;
        let session = session_for(&api, &args).await?;
        let run = start(&api, &session, &request, model, extra).await?;
        Ok::<_, Failure>((session, run))
    };
    let (session, run) = match started.await {
        Ok(started) => started,
        Err(Failure::Usage(message)) => {
            eprintln!("paddock: {message}");
            return Ok(EXIT_USAGE);
        }
        Err(Failure::Other(err)) => return Err(err),
    };
    drive(&api, &session, &run, format, args.verbose).await
}

/// `--model` as the API takes it, and the fields only some runs ask for
/// (per-child models, snapshot limits).
fn model_and_extra(args: &GoalArgs) -> Result<(Value, serde_json::Map<String, Value>), Failure> {
    let mut model = model_choice(&args.model, args.base_url.as_deref()).map_err(Failure::Usage)?;
    if let Some(window) = args.context_window {
        // the server checks it as it checks a request's
        model["context_window"] = Value::from(window);
    }
    let mut extra = serde_json::Map::new();
    if let Some(models) = subagent_choices(args).map_err(Failure::Usage)? {
        extra.insert("subagent_models".to_owned(), models);
    }
    if let Some(limits) = snapshot_limits(args).map_err(Failure::Usage)? {
        extra.insert(
            "snapshot_limits".to_owned(),
            json!({ "max_files": limits.max_files, "max_bytes": limits.max_bytes }),
        );
    }
    Ok((model, extra))
}

/// `--resume RUN` on the server: the new run, and its session.
async fn resume(
    api: &ApiClient,
    args: &GoalArgs,
    id: &str,
    model: Value,
    extra: serde_json::Map<String, Value>,
) -> Result<(SessionView, RunView), Failure> {
    let mut body = json!({ "model": model, "force": args.force });
    if budget_flags_given(args) {
        body["budgets"] = json!(budgets(args).map_err(Failure::Usage)?);
    }
    if let Value::Object(fields) = &mut body {
        fields.extend(extra);
    }
    let path = format!("/v1/runs/{}/resume", segment(id));
    let resumed: ResumedView = match api.json(api.request(Method::POST, &path).json(&body)).await {
        Ok(run) => serde_json::from_value(run).context("the resumed run")?,
        Err(err) => return Err(caller_error(err, &format!("--resume {id}"))),
    };
    if let (Some(safety), Some(undo)) = (&resumed.safety_checkpoint, &resumed.undo) {
        eprintln!(
            "paddock: the workspace as it was before the restore is checkpoint {safety}; \
             to undo the restore: {undo}{}",
            api.server_flag()
        );
    }
    let run = resumed.run;
    let path = format!("/v1/sessions/{}", segment(run.session.as_str()));
    let session = api
        .json(api.request(Method::GET, &path))
        .await
        .map_err(|err| caller_error(err, "the resumed run's session"))?;
    let session = serde_json::from_value(session).context("the resumed run's session")?;
    Ok((session, run))
}

/// The model of `--model` as the API takes it: a scripted file is sent
/// inline (the server never reads a file of the caller's).
fn model_choice(spec: &str, base_url: Option<&str>) -> Result<Value, String> {
    let config = paddock_models::parse_spec(spec).map_err(|e| format!("--model: {e}"))?;
    if config.provider == ProviderKind::Scripted {
        if base_url.is_some() {
            return Err("--base-url does not apply to a scripted model".to_owned());
        }
        let path = spec.split_once(':').map_or(spec, |(_, file)| file);
        let text = std::fs::read_to_string(path).map_err(|e| format!("--model {spec}: {e}"))?;
        let script: Value = serde_json::from_str(&text)
            .map_err(|e| format!("--model {spec}: not a JSON script: {e}"))?;
        return Ok(json!({ "scripted": script }));
    }
    let mut choice = json!({ "spec": spec });
    if let Some(url) = base_url {
        choice["base_url"] = Value::from(url.trim());
    }
    Ok(choice)
}

/// `--subagent-model` as the API's `subagent_models`: each child's model,
/// scripted files sent inline like `--model`'s.
fn subagent_choices(args: &GoalArgs) -> Result<Option<Value>, String> {
    let entries = subagent_entries(args)?;
    if entries.is_empty() {
        return Ok(None);
    }
    let mut choices = serde_json::Map::new();
    for entry in entries {
        let choice =
            model_choice(entry.spec, entry.base_url).map_err(|e| format!("{}: {e}", entry.flag))?;
        choices.insert(entry.key.to_owned(), choice);
    }
    Ok(Some(Value::Object(choices)))
}

/// `--session`, or a new session in the uploaded workspace (or in the
/// server workspace `--workspace ws_...` names).
async fn session_for(api: &ApiClient, args: &GoalArgs) -> Result<SessionView, Failure> {
    if let Some(id) = &args.session {
        if args.workspace.is_some() {
            return Err(Failure::Usage(
                "with --server, --session continues in that session's workspace on the server; \
                 leave out --workspace"
                    .to_owned(),
            ));
        }
        let path = format!("/v1/sessions/{}", segment(id));
        return match api.json(api.request(Method::GET, &path)).await {
            Ok(session) => Ok(serde_json::from_value(session).context("the session")?),
            Err(err) => Err(caller_error(err, &format!("--session {id}"))),
        };
    }
    let workspace = match &args.workspace {
        Some(dir) if is_workspace_id(dir) => dir.to_string_lossy().into_owned(),
        other => {
            let dir = canonical_dir(other.as_deref().unwrap_or(Path::new(".")))
                .map_err(Failure::Usage)?;
            upload(api, &dir).await?.id.to_string()
        }
    };
    let request = api
        .request(Method::POST, "/v1/sessions")
        .json(&json!({ "workspace": workspace, "title": title(args.goal.as_deref().unwrap_or_default()) }));
    match api.json(request).await {
        Ok(session) => Ok(serde_json::from_value(session).context("the new session")?),
        Err(err) => Err(caller_error(err, "creating a session")),
    }
}

/// A server workspace id rather than a directory: `ws_...` with no such
/// directory here.
fn is_workspace_id(dir: &Path) -> bool {
    dir.to_str().is_some_and(|s| s.starts_with("ws_")) && !dir.exists()
}

async fn upload(api: &ApiClient, dir: &Path) -> Result<WorkspaceView, Failure> {
    match upload_dir(api, dir, None).await {
        Ok(view) => Ok(view),
        Err(err) => match err.downcast::<crate::client::PackRefused>() {
            Ok(refused) => Err(Failure::Usage(refused.to_string())),
            Err(err) => Err(caller_error(err, &format!("uploading {}", dir.display()))),
        },
    }
}

/// A 4xx answer is the caller's mistake (exit 2); anything else is ours.
fn caller_error(err: anyhow::Error, what: &str) -> Failure {
    match err.downcast_ref::<ServerError>() {
        Some(server) if server.status.is_some_and(|s| (400..500).contains(&s)) => {
            Failure::Usage(format!("{what}: {server}"))
        }
        _ => Failure::Other(err.context(what.to_owned())),
    }
}

async fn start(
    api: &ApiClient,
    session: &SessionView,
    request: &Request,
    model: Value,
    extra: serde_json::Map<String, Value>,
) -> Result<RunView, Failure> {
    let mut body = json!({
        "goal": request.goal,
        "success_criteria": request.success_criteria,
        "mode": request.mode,
        "budgets": request.budgets,
        "model": model,
    });
    // What only some runs ask for: per-child models, snapshot limits, a backend.
    if let Value::Object(fields) = &mut body {
        fields.extend(extra);
    }
    let path = format!("/v1/sessions/{}/runs", segment(session.id.as_str()));
    match api.json(api.request(Method::POST, &path).json(&body)).await {
        Ok(run) => Ok(serde_json::from_value(run).context("the started run")?),
        Err(err) => Err(caller_error(err, "starting the run")),
    }
}

/// Prints the run's events until its `run.finished`, then its result.
async fn drive(
    api: &ApiClient,
    session: &SessionView,
    run: &RunView,
    format: Format,
    verbose: bool,
) -> anyhow::Result<u8> {
    let mut stdout = std::io::stdout();
    if format == Format::Human {
        let _ = writeln!(stdout, "paddock: session {} run {}", session.id, run.id);
    }
    let mut signals = TermSignals::install()?;
    let mut screen = Screen::new(format, verbose);
    let mut typed = if format == Format::Human {
        TypedLines::from_terminal()
    } else {
        None
    };
    let mut cancel_deadline: Option<Instant> = None;
    let mut after = 0u64;
    let mut failures = 0u32;
    let path = format!("/v1/runs/{}/events", segment(run.id.as_str()));
    'stream: loop {
        let mut source = match EventSource::open(api, &path, &[("after", after.to_string())]).await
        {
            Ok(source) => source,
            Err(err) => {
                failures += 1;
                if failures > MAX_RECONNECTS {
                    return Err(err.context(format!("following run {}", run.id)));
                }
                tokio::time::sleep(RECONNECT_PAUSE).await;
                continue;
            }
        };
        loop {
            let deadline =
                cancel_deadline.unwrap_or_else(|| Instant::now() + Duration::from_secs(86_400));
            let frame = tokio::select! {
                frame = source.next() => frame,
                Some(line) = next_line(&mut typed) => {
                    let path = format!("/v1/runs/{}/messages", segment(run.id.as_str()));
                    let request = api.request(Method::POST, &path).json(&serde_json::json!({ "text": line }));
                    if let Err(err) = api.json(request).await {
                        logging::note(format_args!("paddock: not sent: {err:#}"));
                    }
                    continue;
                }
                signal = signals.recv() => {
                    if cancel_deadline.is_some() {
                        logging::note(format_args!("paddock: signal {signal} again: leaving without waiting (the run may still be cancelling on the server)"));
                        return Ok(EXIT_CANCELLED);
                    }
                    logging::note(format_args!("paddock: cancelling the run on the server (again to leave at once)"));
                    cancel_deadline = Some(Instant::now() + CANCEL_WAIT);
                    let (api, id) = (api.clone(), run.id.clone());
                    tokio::spawn(async move {
                        let path = format!("/v1/runs/{}/cancel", segment(id.as_str()));
                        if let Err(err) = api.json(api.request(Method::POST, &path)).await {
                            logging::note(format_args!("paddock: cancelling run {id}: {err:#}"));
                        }
                    });
                    continue;
                }
                () = tokio::time::sleep_until(deadline) => {
                    logging::note(format_args!(
                        "paddock: run {} did not finish within {} s of the cancel; `paddock runs show {}` tells how it ends",
                        run.id, CANCEL_WAIT.as_secs(), run.id
                    ));
                    return Ok(EXIT_CANCELLED);
                }
            };
            match frame {
                Ok(Some(frame)) => {
                    failures = 0;
                    if let Some(event) = frame.transient_event(&session.id) {
                        screen.show(&mut stdout, &event);
                        continue;
                    }
                    let Some(event) = frame.run_event(&session.id) else {
                        continue;
                    };
                    after = event.seq;
                    screen.show(&mut stdout, &event);
                    if Event::of(&event).is_run_finished() {
                        break 'stream;
                    }
                }
                // Ended before `run.finished`: a run that ended without one
                // (interrupted) is done; otherwise (a restart, a proxy) resume.
                Ok(None) => {
                    if ended(&get_run(api, run.id.as_str()).await?) {
                        break 'stream;
                    }
                    failures += 1;
                    if failures > MAX_RECONNECTS {
                        anyhow::bail!("the event stream of run {} keeps ending early", run.id);
                    }
                    tokio::time::sleep(RECONNECT_PAUSE).await;
                    continue 'stream;
                }
                Err(err) => {
                    failures += 1;
                    if failures > MAX_RECONNECTS {
                        return Err(err.context(format!("following run {}", run.id)));
                    }
                    logging::note(format_args!(
                        "paddock: the event stream broke ({err:#}); resuming after event {after}"
                    ));
                    tokio::time::sleep(RECONNECT_PAUSE).await;
                    continue 'stream;
                }
            }
        }
    }
    screen.finish(&mut stdout);
    let run = settled(api, &run.id.to_string()).await?;
    let code = exit::for_run(&run);
    match format {
        Format::Human => {
            render::print_result(&mut stdout, &run, session.id.as_str());
            // The local directory is as it was: say where the changes are.
            logging::note(format_args!(
                "paddock: the run worked in workspace {} on the server; \
                 `paddock workspace download {} DIR` fetches its files",
                session.workspace, session.workspace
            ));
        }
        Format::Json => {
            let _ = writeln!(stdout, "{}", render::result_json(&run, code));
        }
    }
    Ok(code)
}

/// The run once its row shows it ended (it may lag its last event briefly).
pub(super) async fn settled(api: &ApiClient, id: &str) -> anyhow::Result<RunView> {
    let deadline = Instant::now() + SETTLE_WAIT;
    loop {
        let run = get_run(api, id).await?;
        if ended(&run) || Instant::now() >= deadline {
            return Ok(run);
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

pub(super) async fn get_run(api: &ApiClient, id: &str) -> anyhow::Result<RunView> {
    let path = format!("/v1/runs/{}", segment(id));
    serde_json::from_value(api.json(api.request(Method::GET, &path)).await?).context("the run")
}

fn ended(run: &RunView) -> bool {
    run.state.is_terminal() || run.state == paddock_core::store::RunState::AwaitingUser
}
