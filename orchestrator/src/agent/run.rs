//! `paddock run "GOAL"`: one run on this machine, streamed as it goes, ended
//! with its review; Ctrl-C cancels it cleanly (its sandbox torn down).

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use futures_util::StreamExt;
use paddock_api::service::checkpoints::undo_command;
use paddock_core::ids::{RunId, SessionId};
use paddock_core::model::{ModelProvider, Prices, ProviderKind};
use paddock_core::store::{Budgets, CheckpointReason, DriverKind, RunMode, Session};
use paddock_proto::error_chain;
use paddock_runtime::events::Event;
use paddock_runtime::subagents::ModelsByKey;
use paddock_runtime::{
    AgentDriver, DEFAULT_AGENTS_DIR, Drivers, ModelTarget, ResumeRun, RuntimeError, StartRun,
    SubagentModels,
};

use super::exit::{self, EXIT_CANCELLED, EXIT_USAGE};
use super::live::Screen;
use super::local::{Local, Sandboxes};
use super::render::{self, Format};
use super::typed::{TypedLines, next_line};
use crate::cli::{BackendArgs, GoalArgs, Mode, SecretArg};
use crate::logging;
use crate::printable::printable;
use crate::sandbox::signals::TermSignals;

/// Longest session title made from a goal.
const TITLE_CHARS: usize = 80;

pub async fn run(args: GoalArgs, backend: &BackendArgs) -> anyhow::Result<u8> {
    // A named server runs it there, or nothing runs at all: never here.
    if args.server.server.is_some() {
        return super::remote_run::run(args, backend).await;
    }
    let format = format_of(&args);
    if let Some(raw) = &args.resume {
        return resume(&args, raw, backend, format).await;
    }
    // Mistakes on the command line are found before anything is opened.
    let mut prepared = match prepare(&args) {
        Ok(prepared) => prepared,
        Err(message) => {
            eprintln!("paddock: {message}");
            return Ok(EXIT_USAGE);
        }
    };
    // A directory a checkpoint cannot undo is written only when the user says so.
    let home = std::env::var_os("HOME").and_then(|h| Path::new(&h).canonicalize().ok());
    if let Some(dir) = &prepared.workspace
        && let Some(what) = super::no_undo::risky_dir(dir, home.as_deref())
    {
        let question = format!(
            "{} is {what}: the agent would write there with no undo worth the name",
            printable(&dir.display().to_string())
        );
        if !super::no_undo::confirm(&question, args.yes) {
            return Ok(EXIT_USAGE);
        }
    }
    // without --yes, a workspace that cannot be checkpointed is asked about (drive)
    prepared.start.require_checkpoint = !args.yes;
    let local = Local::open(
        &args.data,
        Sandboxes::Needed(backend, &args.egress, &args.allow_downgrade),
        prepared.prices.clone(),
    )
    .await?;
    local.recover().await;
    let code = match session_for(&local, &args, prepared.workspace.as_deref()).await {
        Ok(session) => {
            drive(
                &local,
                &session,
                Begin::Start(prepared.start),
                format,
                args.verbose,
            )
            .await
        }
        Err(Usage(message)) => {
            eprintln!("paddock: {message}");
            Ok(EXIT_USAGE)
        }
    };
    local.close().await;
    code
}

/// `paddock run --resume RUN`: the interrupted run continues as a new run
/// in its session.
async fn resume(
    args: &GoalArgs,
    raw: &str,
    backend: &BackendArgs,
    format: Format,
) -> anyhow::Result<u8> {
    let prepared = RunId::parse(raw)
        .map_err(|e| format!("--resume: {e}"))
        .and_then(|id| Ok((id, resume_request(args)?)));
    let (id, request, prices) = match prepared {
        Ok((id, (request, prices))) => (id, request, prices),
        Err(message) => {
            eprintln!("paddock: {message}");
            return Ok(EXIT_USAGE);
        }
    };
    let sandboxes = Sandboxes::Needed(backend, &args.egress, &args.allow_downgrade);
    let local = Local::open(&args.data, sandboxes, prices).await?;
    local.recover().await;
    let session = match local.runtime.get_run(&local.tenant, &id).await {
        Ok(run) => local.runtime.get_session(&local.tenant, &run.session).await,
        Err(err) => Err(err),
    };
    let code = match session {
        Ok(session) => {
            drive(
                &local,
                &session,
                Begin::Resume(id, request),
                format,
                args.verbose,
            )
            .await
        }
        Err(err) => {
            eprintln!("paddock: --resume {raw}: {}", error_chain(&err));
            Ok(EXIT_USAGE)
        }
    };
    local.close().await;
    code
}

/// What `--resume` takes from the command line: the model, and budgets only
/// when a budget flag is given, raising the limit (else what the interrupted
/// run and its subagents left of its budgets, run/resume_budget.rs).
fn resume_request(args: &GoalArgs) -> Result<(ResumeRun, Prices), String> {
    let prices = super::parse_prices(&args.prices).map_err(|e| format!("--price: {e}"))?;
    let request = ResumeRun {
        provider: model(&args.model, args.base_url.as_deref(), args.context_window)?,
        // the interrupted run's kind, which must be --driver's
        driver: Some(local_driver(args)?),
        budgets: budget_flags_given(args)
            .then(|| budgets(args))
            .transpose()?,
        instructions: None,
        subagent_models: subagent_models(args)?,
        snapshot_limits: snapshot_limits(args)?,
        // the runtime's (--backend): it must be the interrupted run's
        backend: None,
        // the interrupted run's network, as its run.started records it
        network: None,
        // never stored: the interrupted run's must be given again (--secret)
        secrets: local_secrets(args)?,
        force: args.force,
    };
    Ok((request, prices))
}

/// The `--secret`s of a local run: each with its value from this
/// environment (a secret by name alone is a server's), refused with
/// network none (here the default) as the API refuses them.
fn local_secrets(args: &GoalArgs) -> Result<Vec<paddock_proto::SecretSpec>, String> {
    let secrets = args
        .secrets
        .iter()
        .map(|secret| match secret {
            SecretArg::Local(spec) => Ok(spec.clone()),
            SecretArg::Server(name) => Err(format!(
                "--secret {name}: a secret by name is a server's (`[secrets.{name}]` in its \
                 config): add --server, or give NAME@HOST[,HOST...] with the value in ${name} here"
            )),
        })
        .collect::<Result<Vec<_>, _>>()?;
    let network = args.network.clone().unwrap_or_default();
    paddock_proto::check_secrets_network(secrets.len(), &network)
        .map_err(|err| format!("--secret: {err}"))?;
    Ok(secrets)
}

pub(super) fn format_of(args: &GoalArgs) -> Format {
    if args.json {
        Format::Json
    } else {
        Format::Human
    }
}

/// A mistake of the caller's, reported with exit code 2.
struct Usage(String);

struct Prepared {
    workspace: Option<std::path::PathBuf>,
    prices: Prices,
    start: StartRun,
}

fn prepare(args: &GoalArgs) -> Result<Prepared, String> {
    let request = request(args)?;
    let secrets = local_secrets(args)?;
    let workspace = match (&args.workspace, &args.session) {
        (Some(dir), _) => Some(canonical_dir(dir)?),
        (None, Some(_)) => None,
        (None, None) => Some(canonical_dir(Path::new("."))?),
    };
    let prices = super::parse_prices(&args.prices).map_err(|e| format!("--price: {e}"))?;
    Ok(Prepared {
        workspace,
        prices,
        start: StartRun {
            goal: request.goal,
            success_criteria: request.success_criteria,
            mode: request.mode,
            budgets: request.budgets,
            provider: model(&args.model, args.base_url.as_deref(), args.context_window)?,
            driver: local_driver(args)?,
            instructions: None,
            subagent_models: subagent_models(args)?,
            snapshot_limits: snapshot_limits(args)?,
            // The runtime's: the backend of --backend and --image.
            backend: None,
            network: args.network.clone(),
            secrets,
            // set once the workspace is checked (run)
            require_checkpoint: true,
        },
    })
}

/// What a run asks for, from the command line, the same here and on a server.
pub(super) struct Request {
    pub goal: String,
    pub success_criteria: Vec<String>,
    pub mode: RunMode,
    pub driver: DriverKind,
    pub budgets: Budgets,
}

pub(super) fn request(args: &GoalArgs) -> Result<Request, String> {
    let goal = args.goal.as_deref().unwrap_or_default().trim();
    if goal.is_empty() {
        return Err("the goal is empty".to_owned());
    }
    if args.criteria.iter().any(|c| c.trim().is_empty()) {
        return Err("--criteria: a criterion is empty".to_owned());
    }
    let budgets = budgets(args)?;
    Ok(Request {
        goal: goal.to_owned(),
        success_criteria: args.criteria.iter().map(|c| c.trim().to_owned()).collect(),
        mode: match args.mode {
            Mode::Build => RunMode::Build,
            Mode::Plan => RunMode::Plan,
        },
        driver: args.driver,
        budgets,
    })
}

/// Whether any budget flag is on the command line.
pub(super) fn budget_flags_given(args: &GoalArgs) -> bool {
    args.max_turns.is_some()
        || args.max_tool_calls.is_some()
        || args.max_tokens.is_some()
        || args.timeout.is_some()
        || args.max_cost.is_some()
}

/// The budget flags, the defaults for those not given.
pub(super) fn budgets(args: &GoalArgs) -> Result<Budgets, String> {
    let defaults = Budgets::default();
    Ok(Budgets {
        max_turns: positive(args.max_turns, "--max-turns")?.unwrap_or(defaults.max_turns),
        max_tool_calls: positive(args.max_tool_calls, "--max-tool-calls")?
            .unwrap_or(defaults.max_tool_calls),
        max_tokens: positive(args.max_tokens, "--max-tokens")?.unwrap_or(defaults.max_tokens),
        max_wall_clock_ms: args.timeout.unwrap_or(defaults.max_wall_clock_ms),
        max_cost_micro_usd: args.max_cost,
    })
}

/// The run's snapshot limits when a flag asks any (the rest default).
pub(super) fn snapshot_limits(args: &GoalArgs) -> Result<Option<paddock_snapshot::Limits>, String> {
    let files = positive(args.snapshot_max_files, "--snapshot-max-files")?;
    let bytes = positive(args.snapshot_max_bytes, "--snapshot-max-bytes")?;
    if files.is_none() && bytes.is_none() {
        return Ok(None);
    }
    let defaults = paddock_snapshot::Limits::default();
    Ok(Some(paddock_snapshot::Limits {
        max_files: files.unwrap_or(defaults.max_files),
        max_bytes: bytes.unwrap_or(defaults.max_bytes),
    }))
}

fn positive<T: PartialEq + Default>(value: Option<T>, flag: &str) -> Result<Option<T>, String> {
    match value {
        Some(v) if v == T::default() => Err(format!("{flag} must be more than 0")),
        other => Ok(other),
    }
}

pub(super) fn canonical_dir(dir: &Path) -> Result<std::path::PathBuf, String> {
    let path = dir
        .canonicalize()
        .map_err(|e| format!("--workspace {}: {e}", dir.display()))?;
    if !path.is_dir() {
        return Err(format!("--workspace {}: not a directory", dir.display()));
    }
    Ok(path)
}

/// Smaller windows cannot hold the system prompt and the tool schemas.
const MIN_CONTEXT_WINDOW: u32 = paddock_models::MIN_CONTEXT_WINDOW;

/// The provider of `--model` (and `--base-url`); keys come from the environment.
/// `--driver` of a local run: the built-in loop, or an agent CLI installed
/// under `PADDOCK_AGENTS_DIR` (default [`DEFAULT_AGENTS_DIR`]) calling
/// `--model` (and `--base-url`) with this environment's key for it.
fn local_driver(args: &GoalArgs) -> Result<Arc<dyn AgentDriver>, String> {
    let mut drivers = Drivers::default();
    let agents_dir = std::env::var("PADDOCK_AGENTS_DIR")
        .ok()
        .filter(|dir| !dir.trim().is_empty())
        .unwrap_or_else(|| DEFAULT_AGENTS_DIR.to_owned());
    drivers.enable(args.driver, &agents_dir);
    let target = match args.driver {
        DriverKind::Builtin => None,
        _ => model_target(&args.model, args.base_url.as_deref())?,
    };
    drivers
        .driver(args.driver, target)
        .map_err(|refused| format!("--driver: {refused}"))
}

/// The endpoint `--model` names for an agent CLI (None for a script), with
/// this environment's key for it.
fn model_target(spec: &str, base_url: Option<&str>) -> Result<Option<ModelTarget>, String> {
    let mut config = paddock_models::parse_spec(spec).map_err(|e| format!("--model: {e}"))?;
    if config.provider == ProviderKind::Scripted {
        return Ok(None);
    }
    if let Some(url) = base_url {
        config.base_url = Some(url.trim().to_owned());
    }
    let key = paddock_models::key_with_env(&config, |name| std::env::var(name).ok())
        .map_err(|e| format!("--model {spec}: {}", error_chain(&e)))?;
    Ok(Some(ModelTarget {
        provider: config.provider,
        base_url: config.base_url.clone().unwrap_or_default(),
        model: config.model,
        key: key.map(|k| paddock_proto::SecretValue::new(k.expose())),
    }))
}

fn model(
    spec: &str,
    base_url: Option<&str>,
    context_window: Option<u32>,
) -> Result<Arc<dyn ModelProvider>, String> {
    let mut config = paddock_models::parse_spec(spec).map_err(|e| format!("--model: {e}"))?;
    if let Some(window) = context_window {
        if window < MIN_CONTEXT_WINDOW {
            return Err(format!(
                "--context-window must be at least {MIN_CONTEXT_WINDOW}"
            ));
        }
        config.context_window = window;
    }
    if let Some(url) = base_url {
        if config.base_url.is_none() {
            return Err(format!("--base-url does not apply to {}", config.provider));
        }
        // With or without /v1; its key is sent only if set (paddock_models::build).
        config.base_url = Some(url.trim().to_owned());
    }
    paddock_models::build(&config).map_err(|e| format!("--model {spec}: {}", error_chain(&e)))
}

/// One `--subagent-model KEY=SPEC`: the key, the spec, and `--base-url`
/// when the spec is of `--model`'s provider. `flag` names the entry in errors.
pub(super) struct SubagentEntry<'a> {
    pub flag: String,
    pub key: &'a str,
    pub spec: &'a str,
    pub base_url: Option<&'a str>,
}

/// The `--subagent-model` entries, checked, the same here and on a server.
pub(super) fn subagent_entries(args: &GoalArgs) -> Result<Vec<SubagentEntry<'_>>, String> {
    if args.subagent_models.is_empty() {
        return Ok(Vec::new());
    }
    let parent = paddock_models::parse_spec(&args.model)
        .map_err(|e| format!("--model: {e}"))?
        .provider;
    let mut entries = Vec::with_capacity(args.subagent_models.len());
    for entry in &args.subagent_models {
        let flag = format!("--subagent-model {entry}");
        let (key, spec) = entry
            .split_once('=')
            .ok_or_else(|| format!("{flag}: expected KEY=SPEC (explore=scripted:explore.json)"))?;
        let (key, spec) = (key.trim(), spec.trim());
        if key.is_empty() {
            return Err(format!(
                "{flag}: the key is empty (a task id or a profile: explore, plan, review, build)"
            ));
        }
        let provider = paddock_models::parse_spec(spec)
            .map_err(|e| format!("{flag}: {e}"))?
            .provider;
        let base_url = args.base_url.as_deref().filter(|_| provider == parent);
        entries.push(SubagentEntry {
            flag,
            key,
            spec,
            base_url,
        });
    }
    Ok(entries)
}

/// The models of `--subagent-model KEY=SPEC`; `--base-url` applies to the
/// specs of `--model`'s provider.
fn subagent_models(args: &GoalArgs) -> Result<Option<Arc<dyn SubagentModels>>, String> {
    let entries = subagent_entries(args)?;
    if entries.is_empty() {
        return Ok(None);
    }
    let mut models = ModelsByKey::new();
    for entry in entries {
        let model =
            model(entry.spec, entry.base_url, None).map_err(|e| format!("{}: {e}", entry.flag))?;
        models.insert(entry.key, model);
    }
    Ok(Some(Arc::new(models)))
}

/// The session to run in: `--session`, or a new one in the workspace.
async fn session_for(
    local: &Local,
    args: &GoalArgs,
    workspace: Option<&Path>,
) -> Result<Session, Usage> {
    let runtime = &local.runtime;
    let tenant = &local.tenant;
    if let Some(raw) = &args.session {
        let id = SessionId::parse(raw).map_err(|e| Usage(format!("--session: {e}")))?;
        let session = runtime
            .get_session(tenant, &id)
            .await
            .map_err(|e| Usage(format!("--session {raw}: {}", error_chain(&e))))?;
        if let Some(dir) = workspace {
            let registered = runtime
                .workspace_for_dir(tenant, dir)
                .await
                .map_err(|e| Usage(format!("--workspace: {}", error_chain(&e))))?;
            if registered.id != session.workspace {
                return Err(Usage(format!(
                    "--session {raw} works in another workspace than {}",
                    dir.display()
                )));
            }
        }
        return Ok(session);
    }
    let dir = workspace.ok_or_else(|| Usage("--workspace is missing".to_owned()))?;
    let registered = runtime.workspace_for_dir(tenant, dir).await.map_err(|e| {
        Usage(format!(
            "--workspace {}: {}",
            dir.display(),
            error_chain(&e)
        ))
    })?;
    runtime
        .create_session(
            tenant,
            &registered.id,
            &title(args.goal.as_deref().unwrap_or_default()),
        )
        .await
        .map_err(|e| Usage(format!("creating a session: {}", error_chain(&e))))
}

pub(super) fn title(goal: &str) -> String {
    let line = goal.lines().next().unwrap_or_default().trim();
    match line.char_indices().nth(TITLE_CHARS) {
        Some((end, _)) => format!("{}...", &line[..end]),
        None => line.to_owned(),
    }
}

/// How to undo a run that changed the workspace: the rewind to the
/// checkpoint it took before it started. None when it changed nothing (or
/// took no checkpoint).
async fn undo_line(local: &Local, session: &Session, run: &RunId) -> Option<String> {
    let checkpoints = match local
        .runtime
        .list_checkpoints(&local.tenant, &session.id)
        .await
    {
        Ok(checkpoints) => checkpoints,
        Err(err) => {
            logging::note(format_args!(
                "paddock: reading the run's checkpoints: {}",
                error_chain(&err)
            ));
            return None;
        }
    };
    let own = |reason| {
        checkpoints
            .iter()
            .find(|c| c.run == *run && c.reason == reason)
    };
    let start = own(CheckpointReason::RunStart)?;
    own(CheckpointReason::ToolBatch)?;
    Some(format!(
        "The workspace was checkpointed before the run; to undo its changes: paddock session rewind {} --to {}{}",
        session.id,
        start.id,
        local.data_dir_flag()
    ))
}

/// Starts `start`; when its workspace cannot be checkpointed, asks whether
/// to go on with no undo (refused without a terminal: --yes).
async fn start_asking(
    runtime: &Arc<paddock_runtime::Runtime>,
    tenant: &paddock_core::ids::TenantId,
    session: &Session,
    start: StartRun,
) -> Result<paddock_runtime::RunHandle, RuntimeError> {
    match runtime.start_run(tenant, &session.id, start.clone()).await {
        Err(err @ RuntimeError::NoUndo { .. }) => {
            // a no is printed by confirm
            if !super::no_undo::confirm(&printable(&err.to_string()), false) {
                return Err(err);
            }
            let start = StartRun {
                require_checkpoint: false,
                ..start
            };
            runtime.start_run(tenant, &session.id, start).await
        }
        started => started,
    }
}

/// How the run comes to be: a new one, or the resume of an interrupted one.
enum Begin {
    Start(StartRun),
    Resume(RunId, ResumeRun),
}

/// Starts the run, prints its events until it finishes, then its result.
async fn drive(
    local: &Local,
    session: &Session,
    begin: Begin,
    format: Format,
    verbose: bool,
) -> anyhow::Result<u8> {
    let runtime = &local.runtime;
    let tenant = &local.tenant;
    // Subscribed before the run starts: none of its events can be missed.
    let mut events = runtime
        .event_stream(tenant, &session.id, 0)
        .await
        .context("following the session's events")?;
    let started = match begin {
        Begin::Start(start) => start_asking(runtime, tenant, session, start).await,
        Begin::Resume(id, resume) => runtime.resume_run(tenant, &id, resume).await,
    };
    let handle = match started {
        Ok(handle) => handle,
        // The session the caller named cannot take a run now.
        Err(
            err @ (RuntimeError::SessionArchived { .. }
            | RuntimeError::SessionBusy { .. }
            | RuntimeError::WorkspaceBusy { .. }
            | RuntimeError::NotResumable { .. }
            | RuntimeError::WorkspaceChanged { .. }
            | RuntimeError::Invalid { .. }),
        ) => {
            logging::note(format_args!("paddock: {}", printable(&err.to_string())));
            return Ok(EXIT_USAGE);
        }
        // refused when asked (start_asking said so)
        Err(RuntimeError::NoUndo { .. }) => return Ok(EXIT_USAGE),
        Err(err) => return Err(err).context("starting the run"),
    };
    if let Some(safety) = &handle.safety_checkpoint {
        logging::note(format_args!(
            "paddock: the workspace as it was before the restore is checkpoint {safety}; \
             to undo the restore: {}{}",
            undo_command(&session.id, safety),
            local.data_dir_flag()
        ));
    }
    let run_id = handle.run.id.clone();
    let mut stdout = std::io::stdout();
    if format == Format::Human {
        let _ = writeln!(stdout, "paddock: session {} run {run_id}", session.id);
    }
    let mut signals = TermSignals::install()?;
    let mut cancelling = None;
    let mut screen = Screen::new(format, verbose);
    let mut typed = if format == Format::Human {
        TypedLines::from_terminal()
    } else {
        None
    };
    if typed.is_some() {
        let _ = writeln!(
            stdout,
            "paddock: type a line and Enter to tell the agent something"
        );
    }
    loop {
        tokio::select! {
            next = events.next() => match next {
                Some(Ok(event)) => {
                    if event.run.as_ref() != Some(&run_id) {
                        continue;
                    }
                    screen.show(&mut stdout, &event);
                    if Event::of(&event).is_run_finished() {
                        break;
                    }
                }
                Some(Err(err)) => {
                    logging::note(format_args!("paddock: following the run's events: {}", error_chain(&err)));
                    break;
                }
                None => break,
            },
            Some(line) = next_line(&mut typed) => {
                if let Err(err) = runtime.steer(tenant, &run_id, &line).await {
                    logging::note(format_args!("paddock: not sent: {}", error_chain(&err)));
                }
            }
            signal = signals.recv() => {
                if cancelling.is_some() {
                    logging::note(format_args!("paddock: signal {signal} again: leaving without waiting"));
                    return Ok(EXIT_CANCELLED);
                }
                logging::note(format_args!("paddock: cancelling the run (again to leave at once)"));
                let runtime = Arc::clone(runtime);
                let (tenant, id) = (tenant.clone(), run_id.clone());
                cancelling = Some(tokio::spawn(async move { runtime.cancel_run(&tenant, &id).await }));
            }
        }
    }
    screen.finish(&mut stdout);
    let run = handle.wait().await.context("waiting for the run")?;
    if let Some(task) = cancelling {
        let _ = task.await;
    }
    let total = runtime.total_usage(&run).await.unwrap_or_else(|err| {
        logging::note(format_args!(
            "paddock: reading the subagents' usage: {}",
            error_chain(&err)
        ));
        run.usage
    });
    let run = paddock_api::service::RunView::new(&run, total);
    let code = exit::for_run(&run);
    match format {
        Format::Human => {
            render::print_result(&mut stdout, &run, session.id.as_str());
            if let Some(undo) = undo_line(local, session, &run.id).await {
                let _ = writeln!(stdout, "{undo}");
            }
        }
        Format::Json => {
            let _ = writeln!(stdout, "{}", render::result_json(&run, code));
        }
    }
    Ok(code)
}
