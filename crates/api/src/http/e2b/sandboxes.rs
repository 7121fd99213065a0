//! E2B's control plane for sandboxes, on the sandbox service: create,
//! connect (resume), list, info, kill, timeout and pause. The bodies are
//! E2B's (`spec/openapi.yml` of e2b-dev/infra): camelCase keys, every key
//! its SDK requires present.

use std::collections::BTreeMap;
use std::time::Duration;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use paddock_core::ids::TenantId;
use paddock_core::sandbox::SandboxId;
use paddock_core::store::{OnIdle, PauseMode, SandboxState, Timestamp};
use paddock_proto::NetworkPolicy;
use serde::{Deserialize, Serialize};

use super::auth::{ApiKey, ENVD_TOKEN_PORT};
use super::error::E2bError;
use super::templates::Template;
use crate::http::AppState;
use crate::service::commands::CreateSandbox;
use crate::service::{PauseSandbox, SandboxFilter, SandboxView};

/// The envd version Paddock's envd routes answer as: the SDK turns on
/// what that version offers (stdin control 0.3.0, close_stdin 0.5.2,
/// octet-stream uploads 0.5.7) and sends no default user (0.4.0).
pub const ENVD_VERSION: &str = "0.5.7";
/// E2B's default sandbox timeout.
const DEFAULT_TIMEOUT_SECS: u64 = 300;
/// The most sandboxes one list answer holds, and the most rows it reads.
const MAX_LIST: usize = 100;
const MAX_ROWS_SCANNED: usize = 5_000;

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct NewSandbox {
    #[serde(rename = "templateID")]
    template_id: String,
    timeout: Option<u64>,
    #[serde(default)]
    auto_pause: bool,
    #[serde(default)]
    metadata: BTreeMap<String, String>,
    #[serde(default)]
    env_vars: BTreeMap<String, String>,
    #[serde(rename = "allow_internet_access")]
    allow_internet_access: Option<bool>,
    network: Option<NetworkConfig>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
struct NetworkConfig {
    #[serde(default)]
    allow_out: Vec<String>,
    #[serde(default)]
    deny_out: Vec<String>,
}

/// `Sandbox` of E2B's spec: what create and connect answer.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxCreated {
    #[serde(rename = "templateID")]
    template_id: String,
    #[serde(rename = "sandboxID")]
    sandbox_id: String,
    #[serde(rename = "clientID")]
    client_id: String,
    envd_version: &'static str,
    envd_access_token: String,
    domain: Option<String>,
}

/// `ListedSandbox` and `SandboxDetail` of E2B's spec (the detail's extra
/// keys are optional, so one shape serves both).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxDetail {
    #[serde(rename = "templateID")]
    template_id: String,
    #[serde(rename = "sandboxID")]
    sandbox_id: String,
    #[serde(rename = "clientID")]
    client_id: String,
    started_at: String,
    end_at: String,
    envd_version: &'static str,
    #[serde(rename = "cpuCount")]
    cpu_count: u64,
    #[serde(rename = "memoryMB")]
    memory_mb: u64,
    #[serde(rename = "diskSizeMB")]
    disk_size_mb: u64,
    state: &'static str,
    metadata: BTreeMap<String, String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    envd_access_token: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    lifecycle: Option<Lifecycle>,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
struct Lifecycle {
    auto_resume: bool,
    on_timeout: &'static str,
}

#[derive(Debug, Default, Deserialize)]
pub struct TimeoutBody {
    timeout: Option<u64>,
}

#[derive(Debug, Default, Deserialize)]
pub struct PauseBody {
    memory: Option<bool>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ListQuery {
    metadata: Option<String>,
    state: Option<String>,
    limit: Option<usize>,
    next_token: Option<String>,
}

pub(super) fn sandbox_id(raw: &str) -> Result<SandboxId, E2bError> {
    SandboxId::parse(raw).map_err(|_| E2bError::sandbox_not_found(raw))
}

/// A service error, with E2B's "not found" wording for a missing sandbox.
pub(super) fn for_sandbox(id: &str) -> impl FnOnce(crate::service::ServiceError) -> E2bError + '_ {
    move |err| {
        let err = E2bError::from(err);
        if err.status == StatusCode::NOT_FOUND {
            E2bError::sandbox_not_found(id)
        } else {
            err
        }
    }
}

/// What a create asks of the network: none when internet access is
/// refused, the allowlist when `allowOut` names hosts, else `full` where
/// the server allows it (E2B's default is internet access) and the
/// server's default where it does not.
fn network_of(body: &NewSandbox, state: &AppState) -> Result<NetworkPolicy, E2bError> {
    let config = body.network.as_ref();
    if config.is_some_and(|c| !c.deny_out.is_empty()) {
        return Err(E2bError::new(
            StatusCode::BAD_REQUEST,
            "network.denyOut is not supported: Paddock's egress is an allowlist (name the hosts in allowOut)",
        ));
    }
    if body.allow_internet_access == Some(false) {
        return Ok(NetworkPolicy::None);
    }
    if let Some(hosts) = config.filter(|c| !c.allow_out.is_empty()) {
        return format!("allow:{}", hosts.allow_out.join(","))
            .parse()
            .map_err(|e| E2bError::new(StatusCode::BAD_REQUEST, format!("network.allowOut: {e}")));
    }
    let bounds = &state.service.config().network;
    if bounds.check(&NetworkPolicy::Full).is_ok() {
        Ok(NetworkPolicy::Full)
    } else if body.allow_internet_access == Some(true) {
        Err(E2bError::new(
            StatusCode::BAD_REQUEST,
            "this server does not allow sandboxes full internet access; name hosts in network.allowOut",
        ))
    } else {
        Ok(NetworkPolicy::default())
    }
}

pub async fn create(
    State(state): State<AppState>,
    ApiKey(tenant): ApiKey,
    Json(body): Json<NewSandbox>,
) -> Result<Response, E2bError> {
    let network = network_of(&body, &state)?;
    let view = if let Some(snapshot) = super::snapshots::snapshot_template(&body.template_id) {
        super::snapshots::create_from_snapshot(
            &state,
            &tenant,
            &snapshot,
            network,
            &body.metadata,
            &body.env_vars,
        )
        .await?
    } else {
        let template = Template::resolve(&body.template_id, &state)?;
        let command = CreateSandbox {
            network,
            backend: template.backend.clone(),
            image: template.image.clone(),
            on_idle: Some(if body.auto_pause {
                OnIdle::Pause
            } else {
                OnIdle::Stop
            }),
            metadata: with_template(body.metadata, &body.template_id),
            env: body.env_vars,
            ..CreateSandbox::default()
        };
        state.service.create_sandbox(&tenant, command).await?
    };
    let timeout = Duration::from_secs(body.timeout.unwrap_or(DEFAULT_TIMEOUT_SECS));
    let until = state.service.now().saturating_add(timeout);
    if let Err(err) = state
        .service
        .set_deadline(&tenant, &view.id, Some(until))
        .await
    {
        let _ = state.service.delete_sandbox(&tenant, &view.id).await;
        return Err(err.into());
    }
    let created = created_view(&state, &tenant, &view)?;
    Ok((StatusCode::CREATED, Json(created)).into_response())
}

/// The template a sandbox was made from rides in its labels.
const TEMPLATE_LABEL: &str = "e2b.template";

fn with_template(
    mut metadata: BTreeMap<String, String>,
    template: &str,
) -> BTreeMap<String, String> {
    metadata.insert(TEMPLATE_LABEL.to_owned(), template.to_owned());
    metadata
}

fn template_of(view: &SandboxView) -> String {
    view.metadata
        .get(TEMPLATE_LABEL)
        .cloned()
        .unwrap_or_else(|| view.backend.clone())
}

fn user_metadata(view: &SandboxView) -> BTreeMap<String, String> {
    let mut metadata = view.metadata.clone();
    metadata.remove(TEMPLATE_LABEL);
    metadata
}

fn access_token(
    state: &AppState,
    tenant: &TenantId,
    view: &SandboxView,
) -> Result<String, E2bError> {
    let key = state.port_urls.as_ref().ok_or_else(|| {
        E2bError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "this server has no key to sign sandbox access tokens with",
        )
    })?;
    // good for as long as the sandbox may live
    let expires = view
        .expires_at
        .as_deref()
        .and_then(Timestamp::parse_rfc3339)
        .map_or(u64::MAX / 2, |t| {
            u64::try_from(t.as_millis() / 1000).unwrap_or(0) + 1
        });
    Ok(key.mint(tenant, &view.id, ENVD_TOKEN_PORT, expires))
}

pub(super) fn created_view(
    state: &AppState,
    tenant: &TenantId,
    view: &SandboxView,
) -> Result<SandboxCreated, E2bError> {
    Ok(SandboxCreated {
        template_id: template_of(view),
        sandbox_id: view.id.to_string(),
        client_id: view.node.clone(),
        envd_version: ENVD_VERSION,
        envd_access_token: access_token(state, tenant, view)?,
        domain: None,
    })
}

fn detail(state: &AppState, view: &SandboxView, token: Option<String>) -> SandboxDetail {
    let end = state
        .service
        .deadline(&view.id)
        .map(|t| t.to_string())
        .or_else(|| view.expires_at.clone())
        .unwrap_or_else(|| view.created_at.clone());
    let mib = |bytes: Option<u64>| bytes.map_or(0, |b| b >> 20);
    SandboxDetail {
        template_id: template_of(view),
        sandbox_id: view.id.to_string(),
        client_id: view.node.clone(),
        started_at: view.created_at.clone(),
        end_at: end,
        envd_version: ENVD_VERSION,
        cpu_count: view
            .limits
            .cpu_millis
            .map_or(1, |m| m.div_ceil(1000).max(1)),
        memory_mb: mib(view.limits.memory_bytes),
        disk_size_mb: mib(view.limits.workspace_bytes),
        state: if view.state == SandboxState::Paused {
            "paused"
        } else {
            "running"
        },
        metadata: user_metadata(view),
        envd_access_token: token,
        lifecycle: Some(Lifecycle {
            auto_resume: view.on_idle == OnIdle::Pause,
            on_timeout: if view.on_idle == OnIdle::Pause {
                "pause"
            } else {
                "kill"
            },
        }),
    }
}

/// A sandbox E2B may show: running or paused (stopped ones are gone to it).
pub(super) fn shown(view: &SandboxView) -> bool {
    matches!(view.state, SandboxState::Running | SandboxState::Paused)
}

/// The sandbox E2B may see (running or paused), else its 404.
pub(super) async fn shown_sandbox(
    state: &AppState,
    tenant: &TenantId,
    id: &str,
) -> Result<(SandboxId, SandboxView), E2bError> {
    let sandbox = sandbox_id(id)?;
    let view = state
        .service
        .get_sandbox(tenant, &sandbox)
        .await
        .map_err(for_sandbox(id))?;
    if !shown(&view) {
        return Err(E2bError::sandbox_not_found(id));
    }
    Ok((sandbox, view))
}

pub async fn get(
    State(state): State<AppState>,
    ApiKey(tenant): ApiKey,
    Path(id): Path<String>,
) -> Result<Json<SandboxDetail>, E2bError> {
    let (_, view) = shown_sandbox(&state, &tenant, &id).await?;
    let token = access_token(&state, &tenant, &view)?;
    Ok(Json(detail(&state, &view, Some(token))))
}

pub async fn kill(
    State(state): State<AppState>,
    ApiKey(tenant): ApiKey,
    Path(id): Path<String>,
) -> Result<StatusCode, E2bError> {
    let (sandbox, _) = shown_sandbox(&state, &tenant, &id).await?;
    state
        .service
        .delete_sandbox(&tenant, &sandbox)
        .await
        .map_err(for_sandbox(&id))?;
    Ok(StatusCode::NO_CONTENT)
}

pub async fn set_timeout(
    State(state): State<AppState>,
    ApiKey(tenant): ApiKey,
    Path(id): Path<String>,
    Json(body): Json<TimeoutBody>,
) -> Result<StatusCode, E2bError> {
    let sandbox = sandbox_id(&id)?;
    let secs = body
        .timeout
        .ok_or_else(|| E2bError::new(StatusCode::BAD_REQUEST, "timeout (seconds) is required"))?;
    let until = state
        .service
        .now()
        .saturating_add(Duration::from_secs(secs));
    let set = state
        .service
        .set_deadline(&tenant, &sandbox, Some(until))
        .await;
    if let Err(err) = set {
        // an ended sandbox is gone to E2B, not in a conflicting state
        let ended = match state.service.get_sandbox(&tenant, &sandbox).await {
            Ok(view) => !shown(&view),
            Err(_) => true,
        };
        return Err(if ended {
            E2bError::sandbox_not_found(&id)
        } else {
            for_sandbox(&id)(err)
        });
    }
    Ok(StatusCode::NO_CONTENT)
}

pub async fn pause(
    State(state): State<AppState>,
    ApiKey(tenant): ApiKey,
    Path(id): Path<String>,
    body: Option<Json<PauseBody>>,
) -> Result<StatusCode, E2bError> {
    let (sandbox, view) = shown_sandbox(&state, &tenant, &id).await?;
    match view.state {
        SandboxState::Paused => {
            return Err(E2bError::new(
                StatusCode::CONFLICT,
                format!("sandbox {id} is already paused"),
            ));
        }
        SandboxState::Running => {}
        _ => return Err(E2bError::sandbox_not_found(&id)),
    }
    let mode = match body.and_then(|Json(b)| b.memory) {
        Some(false) => Some(PauseMode::Filesystem),
        // memory asked, or the most the tier can keep
        Some(true) => Some(PauseMode::Full),
        None => None,
    };
    state
        .service
        .pause_sandbox(&tenant, &sandbox, PauseSandbox { mode })
        .await
        .map_err(for_sandbox(&id))?;
    Ok(StatusCode::NO_CONTENT)
}

/// Resumes a paused sandbox, or extends a running one's timeout (never
/// shortens it), and answers what create does.
pub async fn connect(
    State(state): State<AppState>,
    ApiKey(tenant): ApiKey,
    Path(id): Path<String>,
    body: Option<Json<TimeoutBody>>,
) -> Result<Json<SandboxCreated>, E2bError> {
    let (sandbox, view) = shown_sandbox(&state, &tenant, &id).await?;
    let view = match view.state {
        SandboxState::Running => view,
        SandboxState::Paused => state
            .service
            .resume_sandbox(&tenant, &sandbox)
            .await
            .map_err(for_sandbox(&id))?,
        _ => return Err(E2bError::sandbox_not_found(&id)),
    };
    let secs = body
        .and_then(|Json(b)| b.timeout)
        .unwrap_or(DEFAULT_TIMEOUT_SECS);
    extend_deadline(&state, &tenant, &sandbox, &id, secs).await?;
    Ok(Json(created_view(&state, &tenant, &view)?))
}

/// Moves the sandbox's end to `secs` from now unless it already ends
/// later: connect and refreshes extend a life, never shorten it.
pub(super) async fn extend_deadline(
    state: &AppState,
    tenant: &TenantId,
    sandbox: &SandboxId,
    id: &str,
    secs: u64,
) -> Result<(), E2bError> {
    let wanted = state
        .service
        .now()
        .saturating_add(Duration::from_secs(secs));
    let until = state
        .service
        .deadline(sandbox)
        .map_or(wanted, |current| current.max(wanted));
    state
        .service
        .set_deadline(tenant, sandbox, Some(until))
        .await
        .map_err(for_sandbox(id))
}

/// `metadata` of a list query: `k=v&k2=v2` whose keys and values are
/// each escaped again (the SDK quotes them, then the whole string).
fn metadata_filter(raw: &str) -> Result<Vec<(String, String)>, E2bError> {
    let bad = || E2bError::new(StatusCode::BAD_REQUEST, "metadata: expected k=v&k2=v2");
    let whole = percent_decode(raw).ok_or_else(bad)?;
    whole
        .split('&')
        .filter(|pair| !pair.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').ok_or_else(bad)?;
            Ok((
                percent_decode(k).ok_or_else(bad)?,
                percent_decode(v).ok_or_else(bad)?,
            ))
        })
        .collect()
}

fn percent_decode(text: &str) -> Option<String> {
    let plus_as_space = text.replace('+', " ");
    percent_encoding::percent_decode_str(&plus_as_space)
        .decode_utf8()
        .ok()
        .map(|s| s.into_owned())
}

pub async fn list(
    State(state): State<AppState>,
    ApiKey(tenant): ApiKey,
    Query(query): Query<ListQuery>,
) -> Result<Response, E2bError> {
    let wanted = query
        .metadata
        .as_deref()
        .map(metadata_filter)
        .transpose()?
        .unwrap_or_default();
    let states: Vec<&str> = query
        .state
        .as_deref()
        .map(|s| s.split(',').map(str::trim).collect())
        .unwrap_or_else(|| vec!["running", "paused"]);
    let limit = query.limit.unwrap_or(MAX_LIST).clamp(1, MAX_LIST);
    let mut after = query
        .next_token
        .as_deref()
        .filter(|t| !t.is_empty())
        .map(sandbox_id)
        .transpose()?;
    let mut found = Vec::new();
    let mut scanned = 0;
    let mut next = None;
    'pages: loop {
        let page = state
            .service
            .list_sandboxes(
                &tenant,
                SandboxFilter {
                    state: None,
                    after: after.clone(),
                    limit: Some(MAX_LIST as u32),
                },
            )
            .await?;
        let full_page = page.len() == MAX_LIST;
        for view in page {
            scanned += 1;
            after = Some(view.id.clone());
            let state_name = if view.state == SandboxState::Paused {
                "paused"
            } else {
                "running"
            };
            let matches = shown(&view)
                && states.contains(&state_name)
                && wanted.iter().all(|(k, v)| view.metadata.get(k) == Some(v));
            if matches {
                found.push(detail(&state, &view, None));
                if found.len() == limit {
                    next = after.clone();
                    break 'pages;
                }
            }
        }
        if !full_page {
            break;
        }
        if scanned >= MAX_ROWS_SCANNED {
            next = after.clone();
            break;
        }
    }
    let mut headers = HeaderMap::new();
    if let Some(token) = next.and_then(|id| HeaderValue::from_str(id.as_str()).ok()) {
        headers.insert("x-next-token", token);
    }
    Ok((headers, Json(found)).into_response())
}
