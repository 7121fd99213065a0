//! Snapshots of named volumes: take, list, delete (a new volume is made
//! from one by `POST /v1/volumes` with `from_snapshot`).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use paddock_core::volume::VolumeName;
use serde::{Deserialize, Serialize};

use super::error::Body as ErrorBody;
use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::volumes::{ListQuery, volume_name};
use super::{ApiError, AppState, Caller};
use crate::service::{CreateVolumeSnapshot, VolumeSnapshotView};

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct VolumeSnapshotList {
    /// By name.
    pub snapshots: Vec<VolumeSnapshotView>,
    /// Pass as `after` for the next page; absent on the last page.
    pub next_after: Option<VolumeName>,
}

#[utoipa::path(post, path = "/v1/volumes/{name}/snapshots", tag = "volumes",
    summary = "Take a read-only snapshot of a volume (instant; it shares the volume's blocks until they change)",
    params(("name" = VolumeName, Path)),
    request_body = CreateVolumeSnapshot,
    responses(
        (status = 201, description = "taken", body = VolumeSnapshotView),
        (status = 400, description = "a bad name (`invalid_request`, `invalid_id`)", body = ErrorBody),
        (status = 404, description = "no such volume (`volume_not_found`)", body = ErrorBody),
        (status = 409, description = "the volume has a snapshot of that name (`conflict`)", body = ErrorBody),
        (status = 503, description = "the server has no volume host (`volumes_unavailable`) or it failed (`volume_failed`)", body = ErrorBody),
    ))]
pub(super) async fn create(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(name): ApiPath<String>,
    ApiJson(command): ApiJson<CreateVolumeSnapshot>,
) -> Result<(StatusCode, Json<VolumeSnapshotView>), ApiError> {
    let volume = volume_name(&name)?;
    let view = state
        .service
        .create_volume_snapshot(&tenant, &volume, command)
        .await?;
    Ok((StatusCode::CREATED, Json(view)))
}

#[utoipa::path(get, path = "/v1/volumes/{name}/snapshots", tag = "volumes",
    summary = "List a volume's snapshots by name, with the bytes each holds alone",
    params(("name" = VolumeName, Path), ListQuery),
    responses(
        (status = 200, description = "one page", body = VolumeSnapshotList),
        (status = 404, description = "no such volume (`volume_not_found`)", body = ErrorBody),
        (status = 503, description = "the server has no volume host (`volumes_unavailable`) or it failed (`volume_failed`)", body = ErrorBody),
    ))]
pub(super) async fn list(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(name): ApiPath<String>,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<VolumeSnapshotList>, ApiError> {
    let volume = volume_name(&name)?;
    let after = query.after.as_deref().map(volume_name).transpose()?;
    let limit = query.limit;
    let snapshots = state
        .service
        .list_volume_snapshots(&tenant, &volume, after, limit)
        .await?;
    let next_after = super::sandboxes::full_page(snapshots.len(), limit)
        .then(|| snapshots.last().map(|s| s.name.clone()))
        .flatten();
    Ok(Json(VolumeSnapshotList {
        snapshots,
        next_after,
    }))
}

#[utoipa::path(delete, path = "/v1/volumes/{name}/snapshots/{snapshot}", tag = "volumes",
    summary = "Delete a volume's snapshot and its data",
    params(("name" = VolumeName, Path), ("snapshot" = VolumeName, Path)),
    responses(
        (status = 200, description = "the snapshot as it was", body = VolumeSnapshotView),
        (status = 404, description = "no such snapshot (`volume_snapshot_not_found`)", body = ErrorBody),
        (status = 503, description = "the server has no volume host (`volumes_unavailable`) or it failed (`volume_failed`)", body = ErrorBody),
    ))]
pub(super) async fn delete(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath((name, snapshot)): ApiPath<(String, String)>,
) -> Result<Json<VolumeSnapshotView>, ApiError> {
    let volume = volume_name(&name)?;
    let snapshot = volume_name(&snapshot)?;
    Ok(Json(
        state
            .service
            .delete_volume_snapshot(&tenant, &volume, &snapshot)
            .await?,
    ))
}
