//! `paddock run --server URL "GOAL"`: the same run on a server. The
//! workspace directory goes up as one archive (`POST /v1/workspaces/import`),
//! the run starts in a new session there (or in `--session`), its events come
//! over SSE (resumed after a dropped connection) and print through the same
//! renderer as a local run, and so does the result; Ctrl-C cancels it on the
//! server. Nothing ever runs here.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use anyhow::Context;
use paddock_api::service::commands::SnapshotLimitsRequest;
use paddock_api::service::sessions::{
    CreateSession, ResumeRunCommand, ResumedView, StartRunCommand,
};
use paddock_api::service::{ModelChoice, RunView, SessionView, SteerRun, WorkspaceView};
use paddock_core::ids::WorkspaceId;
use paddock_core::model::ProviderKind;
use paddock_proto::NetworkPolicy;
use paddock_runtime::events::Event;
use reqwest::Method;
use serde_json::Value;
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
use crate::client::{ApiClient, ServerError, backend_choice, secret_refs, upload_dir};
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

/// What only some runs ask for, in a new run's request and a resume's
/// alike: per-child models and snapshot limits.
#[derive(Debug, Default)]
struct Extra {
    subagent_models: BTreeMap<String, ModelChoice>,
    snapshot_limits: Option<SnapshotLimitsRequest>,
}

/// A new run's sandbox, as the caller named it (None: the server's).
#[derive(Debug, Default)]
struct SandboxChoice {
    backend: Option<String>,
    image: Option<String>,
    network: Option<NetworkPolicy>,
    secrets: Vec<paddock_api::service::SecretRef>,
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
        if !args.allow_downgrade.is_empty() {
            return Err(Failure::Usage(
                "--allow-downgrade applies to a local run; a server's operator allows \
                 downgrades (`allow_downgrade` in the server config)"
                    .to_owned(),
            ));
        }
        let (model, extra) = model_and_extra(&args)?;
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
        }
        let (backend, image) = backend_choice(backend.backend, backend.image.as_deref());
        let sandbox = SandboxChoice {
            backend,
            image,
            network: args.network.clone(),
            secrets: secret_refs(&args.secrets),
        };
        let request = request(&args).map_err(Failure::Usage)?;
        let session = session_for(&api, &args).await?;
        let run = start(&api, &session, &request, model, extra, sandbox).await?;
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
fn model_and_extra(args: &GoalArgs) -> Result<(ModelChoice, Extra), Failure> {
    let mut model = model_choice(&args.model, args.base_url.as_deref()).map_err(Failure::Usage)?;
    if let Some(window) = args.context_window {
        // the server checks it as it checks a request's
        model.context_window = Some(window);
    }
    let extra = Extra {
        subagent_models: subagent_choices(args).map_err(Failure::Usage)?,
        snapshot_limits: snapshot_limits(args)
            .map_err(Failure::Usage)?
            .map(|limits| SnapshotLimitsRequest {
                max_files: Some(limits.max_files),
                max_bytes: Some(limits.max_bytes),
            }),
    };
    Ok((model, extra))
}

/// `--resume RUN` on the server: the new run, and its session.
async fn resume(
    api: &ApiClient,
    args: &GoalArgs,
    id: &str,
    model: ModelChoice,
    extra: Extra,
) -> Result<(SessionView, RunView), Failure> {
    let budgets = if budget_flags_given(args) {
        Some(budgets(args).map_err(Failure::Usage)?)
    } else {
        None
    };
    let body = ResumeRunCommand {
        model,
        budgets,
        subagent_models: extra.subagent_models,
        instructions: None,
        snapshot_limits: extra.snapshot_limits,
        force: args.force,
    };
    let path = format!("/v1/runs/{}/resume", segment(id));
    let resumed: ResumedView = match api
        .answer(api.request(Method::POST, &path).json(&body))
        .await
    {
        Ok(run) => run,
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
        .answer(api.request(Method::GET, &path))
        .await
        .map_err(|err| caller_error(err, "the resumed run's session"))?;
    Ok((session, run))
}

/// The model of `--model` as the API takes it: a scripted file is sent
/// inline (the server never reads a file of the caller's).
fn model_choice(spec: &str, base_url: Option<&str>) -> Result<ModelChoice, String> {
    let config = paddock_models::parse_spec(spec).map_err(|e| format!("--model: {e}"))?;
    if config.provider == ProviderKind::Scripted {
        if base_url.is_some() {
            return Err("--base-url does not apply to a scripted model".to_owned());
        }
        let path = spec.split_once(':').map_or(spec, |(_, file)| file);
        let text = std::fs::read_to_string(path).map_err(|e| format!("--model {spec}: {e}"))?;
        let script: Value = serde_json::from_str(&text)
            .map_err(|e| format!("--model {spec}: not a JSON script: {e}"))?;
        return Ok(ModelChoice {
            scripted: Some(script),
            spec: None,
            base_url: None,
            context_window: None,
        });
    }
    Ok(ModelChoice {
        scripted: None,
        spec: Some(spec.to_owned()),
        base_url: base_url.map(|url| url.trim().to_owned()),
        context_window: None,
    })
}

/// `--subagent-model` as the API's `subagent_models`: each child's model,
/// scripted files sent inline like `--model`'s.
fn subagent_choices(args: &GoalArgs) -> Result<BTreeMap<String, ModelChoice>, String> {
    let mut choices = BTreeMap::new();
    for entry in subagent_entries(args)? {
        let choice =
            model_choice(entry.spec, entry.base_url).map_err(|e| format!("{}: {e}", entry.flag))?;
        choices.insert(entry.key.to_owned(), choice);
    }
    Ok(choices)
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
        return api
            .answer(api.request(Method::GET, &path))
            .await
            .map_err(|err| caller_error(err, &format!("--session {id}")));
    }
    let workspace = match &args.workspace {
        Some(dir) if is_workspace_id(dir) => {
            let id = dir.to_string_lossy();
            WorkspaceId::parse(&id)
                .map_err(|err| Failure::Usage(format!("creating a session: {err}")))?
        }
        other => {
            let dir = canonical_dir(other.as_deref().unwrap_or(Path::new(".")))
                .map_err(Failure::Usage)?;
            upload(api, &dir).await?.id
        }
    };
    let body = CreateSession {
        workspace,
        title: Some(title(args.goal.as_deref().unwrap_or_default())),
    };
    api.answer(api.request(Method::POST, "/v1/sessions").json(&body))
        .await
        .map_err(|err| caller_error(err, "creating a session"))
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
    model: ModelChoice,
    extra: Extra,
    sandbox: SandboxChoice,
) -> Result<RunView, Failure> {
    let body = StartRunCommand {
        goal: request.goal.clone(),
        success_criteria: request.success_criteria.clone(),
        mode: Some(request.mode),
        budgets: Some(request.budgets),
        model,
        driver: Some(request.driver),
        subagent_models: extra.subagent_models,
        instructions: None,
        snapshot_limits: extra.snapshot_limits,
        backend: sandbox.backend,
        image: sandbox.image,
        network: sandbox.network,
        secrets: sandbox.secrets,
    };
    let path = format!("/v1/sessions/{}/runs", segment(session.id.as_str()));
    api.answer(api.request(Method::POST, &path).json(&body))
        .await
        .map_err(|err| caller_error(err, "starting the run"))
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
                    let request = api.request(Method::POST, &path).json(&SteerRun { text: line });
                    if let Err(err) = api.answer::<paddock_api::service::SteeringView>(request).await {
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
                        if let Err(err) = api.answer::<RunView>(api.request(Method::POST, &path)).await {
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
    api.answer(api.request(Method::GET, &path))
        .await
        .context("the run")
}

fn ended(run: &RunView) -> bool {
    run.state.is_terminal() || run.state == paddock_core::store::RunState::AwaitingUser
}
