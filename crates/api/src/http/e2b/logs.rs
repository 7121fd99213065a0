//! E2B's sandbox logs (`GET /sandboxes/{id}/logs`, `GET
//! /v2/sandboxes/{id}/logs`) from what Paddock records of a sandbox: its
//! creation (and the snapshot it was restored from), each change of its
//! network (`network.changed`, stored and kept after it stops), and its
//! pause while it is paused. E2B's logs are its guest agent's and its
//! orchestrator's lines; Paddock keeps no such log per sandbox, and a
//! command's output is the caller's (the process API), so these events are
//! the whole log. Entries are `info`, their `fields` say which event. A
//! stopped sandbox's log is answered too (E2B keeps logs after a kill).

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use paddock_core::ids::TenantId;
use paddock_core::store::{MAX_PAGE, Timestamp};
use serde::{Deserialize, Serialize};

use super::auth::ApiKey;
use super::error::E2bError;
use super::sandboxes::{for_sandbox, sandbox_id};
use crate::http::AppState;
use crate::service::SandboxView;

/// E2B's default and largest page of log lines.
const MAX_LINES: usize = 1000;

/// `LogLevel`, lowest first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Level {
    Debug,
    Info,
    Warn,
    Error,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    #[default]
    Forward,
    Backward,
}

/// `SandboxLogEntry`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LogEntry {
    timestamp: String,
    message: String,
    level: Level,
    fields: BTreeMap<String, String>,
    #[serde(skip)]
    at: Timestamp,
}

/// `SandboxLog`.
#[derive(Debug, Serialize)]
pub struct LogLine {
    timestamp: String,
    line: String,
}

/// `SandboxLogs` (v1).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SandboxLogs {
    logs: Vec<LogLine>,
    log_entries: Vec<LogEntry>,
}

/// `SandboxLogsV2Response`.
#[derive(Debug, Serialize)]
pub struct SandboxLogsV2 {
    logs: Vec<LogEntry>,
}

#[derive(Debug, Default, Deserialize)]
pub struct V1Query {
    /// Milliseconds since the epoch: entries from then on.
    start: Option<i64>,
    limit: Option<usize>,
}

#[derive(Debug, Default, Deserialize)]
pub struct V2Query {
    /// Milliseconds since the epoch: entries from (forward) or up to
    /// (backward) then.
    cursor: Option<i64>,
    limit: Option<usize>,
    #[serde(default)]
    direction: Direction,
    /// The lowest level shown.
    level: Option<Level>,
    /// A case-sensitive part of the message.
    search: Option<String>,
}

fn entry(at: Timestamp, message: String, fields: &[(&str, String)]) -> LogEntry {
    LogEntry {
        timestamp: at.to_string(),
        message,
        level: Level::Info,
        fields: fields
            .iter()
            .map(|(k, v)| ((*k).to_owned(), v.clone()))
            .collect(),
        at,
    }
}

/// The sandbox's events as log entries, oldest first.
async fn entries(state: &AppState, tenant: &TenantId, id: &str) -> Result<Vec<LogEntry>, E2bError> {
    let sandbox = sandbox_id(id)?;
    let view = state
        .service
        .get_sandbox(tenant, &sandbox)
        .await
        .map_err(for_sandbox(id))?;
    let mut found = lifecycle_entries(&view);
    let mut after = 0;
    loop {
        let changes = state
            .service
            .list_network_changes(tenant, &sandbox, after, Some(MAX_PAGE))
            .await
            .map_err(for_sandbox(id))?;
        let Some(last) = changes.last() else { break };
        after = last.seq;
        let full_page = changes.len() == MAX_PAGE as usize;
        for change in &changes {
            let Some(at) = Timestamp::parse_rfc3339(&change.at) else {
                continue;
            };
            let (old, new) = (change.old.label(), change.new.label());
            found.push(entry(
                at,
                format!(
                    "network changed from {old} to {new}, {} open connection(s) cut",
                    change.cut.len()
                ),
                &[
                    ("event", "network.changed".to_owned()),
                    ("old", old.clone()),
                    ("new", new.clone()),
                    ("by", change.by.clone()),
                    ("cut", change.cut.join(",")),
                ],
            ));
        }
        if !full_page {
            break;
        }
    }
    found.sort_by_key(|e| e.at);
    Ok(found)
}

/// What the sandbox's record says: created (restored), paused.
fn lifecycle_entries(view: &SandboxView) -> Vec<LogEntry> {
    let mut found = Vec::new();
    if let Some(at) = Timestamp::parse_rfc3339(&view.created_at) {
        let mut fields = vec![
            ("event", "created".to_owned()),
            ("backend", view.backend.clone()),
        ];
        let mut message = format!("sandbox created on the {} backend", view.backend);
        if let Some(image) = &view.image {
            fields.push(("image", image.clone()));
            message.push_str(&format!(" (image {image})"));
        }
        if let Some(snapshot) = &view.restored_from {
            fields.push(("restoredFrom", snapshot.to_string()));
            message.push_str(&format!(", restored from snapshot {snapshot}"));
        }
        found.push(entry(at, message, &fields));
    }
    if let Some(pause) = &view.pause
        && let Some(at) = Timestamp::parse_rfc3339(&pause.paused_at)
    {
        let kept = if pause.processes_kept {
            "memory and processes kept"
        } else {
            "files kept, processes stopped"
        };
        found.push(entry(
            at,
            format!("sandbox paused ({}): {kept}", pause.reason),
            &[
                ("event", "paused".to_owned()),
                ("mode", pause.mode.to_string()),
                ("reason", pause.reason.clone()),
            ],
        ));
    }
    found
}

fn limit_of(asked: Option<usize>) -> usize {
    asked.unwrap_or(MAX_LINES).min(MAX_LINES)
}

/// The entries a v2 query selects, in its direction.
fn select(all: Vec<LogEntry>, query: &V2Query) -> Vec<LogEntry> {
    let cursor = query.cursor.map(Timestamp::from_millis);
    let wanted = |e: &LogEntry| {
        query.level.is_none_or(|min| e.level >= min)
            && query
                .search
                .as_deref()
                .is_none_or(|part| e.message.contains(part))
    };
    let limit = limit_of(query.limit);
    match query.direction {
        Direction::Forward => all
            .into_iter()
            .filter(|e| cursor.is_none_or(|c| e.at >= c) && wanted(e))
            .take(limit)
            .collect(),
        Direction::Backward => all
            .into_iter()
            .rev()
            .filter(|e| cursor.is_none_or(|c| e.at <= c) && wanted(e))
            .take(limit)
            .collect(),
    }
}

/// `GET /sandboxes/{id}/logs` (E2B's deprecated form): entries from
/// `start`, as plain lines and as entries.
pub async fn logs_v1(
    State(state): State<AppState>,
    ApiKey(tenant): ApiKey,
    Path(id): Path<String>,
    Query(query): Query<V1Query>,
) -> Result<Json<SandboxLogs>, E2bError> {
    let start = query.start.map(Timestamp::from_millis);
    let log_entries: Vec<LogEntry> = entries(&state, &tenant, &id)
        .await?
        .into_iter()
        .filter(|e| start.is_none_or(|s| e.at >= s))
        .take(limit_of(query.limit))
        .collect();
    let logs = log_entries
        .iter()
        .map(|e| LogLine {
            timestamp: e.timestamp.clone(),
            line: e.message.clone(),
        })
        .collect();
    Ok(Json(SandboxLogs { logs, log_entries }))
}

/// `GET /v2/sandboxes/{id}/logs`.
pub async fn logs_v2(
    State(state): State<AppState>,
    ApiKey(tenant): ApiKey,
    Path(id): Path<String>,
    Query(query): Query<V2Query>,
) -> Result<Json<SandboxLogsV2>, E2bError> {
    if query.search.as_deref().is_some_and(|s| s.len() > 256) {
        return Err(E2bError::new(
            StatusCode::BAD_REQUEST,
            "search: at most 256 bytes",
        ));
    }
    let all = entries(&state, &tenant, &id).await?;
    Ok(Json(SandboxLogsV2 {
        logs: select(all, &query),
    }))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn at(ms: i64, message: &str) -> LogEntry {
        entry(Timestamp::from_millis(ms), message.to_owned(), &[])
    }

    fn messages(entries: &[LogEntry]) -> Vec<&str> {
        entries.iter().map(|e| e.message.as_str()).collect()
    }

    #[test]
    fn a_v2_query_pages_from_its_cursor_either_way() {
        let all = vec![at(1_000, "one"), at(2_000, "two"), at(3_000, "three")];
        let forward = V2Query {
            cursor: Some(2_000),
            ..V2Query::default()
        };
        assert_eq!(messages(&select(all.clone(), &forward)), ["two", "three"]);
        let backward = V2Query {
            cursor: Some(2_000),
            direction: Direction::Backward,
            limit: Some(1),
            ..V2Query::default()
        };
        assert_eq!(messages(&select(all.clone(), &backward)), ["two"]);
        let search = V2Query {
            search: Some("t".to_owned()),
            level: Some(Level::Info),
            ..V2Query::default()
        };
        assert_eq!(messages(&select(all.clone(), &search)), ["two", "three"]);
        let errors_only = V2Query {
            level: Some(Level::Error),
            ..V2Query::default()
        };
        assert!(select(all, &errors_only).is_empty());
    }

    #[test]
    fn an_entry_has_the_keys_the_sdk_requires() {
        let e = entry(
            Timestamp::from_millis(0),
            "sandbox created".to_owned(),
            &[("event", "created".to_owned())],
        );
        assert_eq!(
            serde_json::to_value(&e).unwrap(),
            serde_json::json!({
                "timestamp": "1970-01-01T00:00:00.000Z",
                "message": "sandbox created",
                "level": "info",
                "fields": {"event": "created"},
            })
        );
    }
}
