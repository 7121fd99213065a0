//! Named volumes: create, list, get, delete.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use paddock_core::volume::VolumeName;
use serde::{Deserialize, Serialize};

use super::error::Body as ErrorBody;
use super::extract::{ApiJson, ApiPath, ApiQuery};
use super::{ApiError, AppState, Caller};
use crate::service::{CreateVolume, VolumeView};

#[derive(Debug, Deserialize, utoipa::IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub(super) struct ListQuery {
    /// The last name of the previous page.
    #[param(value_type = Option<VolumeName>)]
    pub(super) after: Option<String>,
    /// Page size, default 100.
    #[param(minimum = 1, maximum = 1000)]
    pub(super) limit: Option<u32>,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct VolumeList {
    /// By name.
    pub volumes: Vec<VolumeView>,
    /// Pass as `after` for the next page; absent on the last page.
    pub next_after: Option<VolumeName>,
}

#[utoipa::path(post, path = "/v1/volumes", tag = "volumes",
    summary = "Create a named volume with a size quota the kernel enforces",
    request_body = CreateVolume,
    responses(
        (status = 201, description = "created, empty", body = VolumeView),
        (status = 400, description = "a bad name or a quota out of bounds (`invalid_request`)", body = ErrorBody),
        (status = 404, description = "`from_snapshot` names no snapshot of the tenant's (`volume_snapshot_not_found`)", body = ErrorBody),
        (status = 409, description = "the tenant has a volume of that name (`conflict`)", body = ErrorBody),
        (status = 503, description = "the server has no volume host (`volumes_unavailable`) or it failed, its quota included (`volume_failed`)", body = ErrorBody),
    ))]
pub(super) async fn create(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiJson(command): ApiJson<CreateVolume>,
) -> Result<(StatusCode, Json<VolumeView>), ApiError> {
    let view = state.service.create_volume(&tenant, command).await?;
    Ok((StatusCode::CREATED, Json(view)))
}

#[utoipa::path(get, path = "/v1/volumes", tag = "volumes",
    summary = "List volumes by name",
    params(ListQuery),
    responses((status = 200, description = "one page", body = VolumeList)))]
pub(super) async fn list(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> Result<Json<VolumeList>, ApiError> {
    let after = query.after.as_deref().map(volume_name).transpose()?;
    let limit = query.limit;
    let volumes = state.service.list_volumes(&tenant, after, limit).await?;
    let next_after = super::sandboxes::full_page(volumes.len(), limit)
        .then(|| volumes.last().map(|v| v.name.clone()))
        .flatten();
    Ok(Json(VolumeList {
        volumes,
        next_after,
    }))
}

#[utoipa::path(get, path = "/v1/volumes/{name}", tag = "volumes",
    summary = "Get a volume with the bytes it holds",
    params(("name" = VolumeName, Path)),
    responses(
        (status = 200, description = "the volume", body = VolumeView),
        (status = 503, description = "the server has no volume host (`volumes_unavailable`) or it failed (`volume_failed`)", body = ErrorBody),
    ))]
pub(super) async fn get(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<VolumeView>, ApiError> {
    let name = volume_name(&name)?;
    Ok(Json(state.service.get_volume(&tenant, &name).await?))
}

#[utoipa::path(delete, path = "/v1/volumes/{name}", tag = "volumes",
    summary = "Delete a volume and its data",
    params(("name" = VolumeName, Path)),
    responses(
        (status = 200, description = "the volume as it was", body = VolumeView),
        (status = 409, description = "the volume has snapshots; delete them first (`conflict`)", body = ErrorBody),
        (status = 503, description = "the server has no volume host (`volumes_unavailable`) or it failed (`volume_failed`)", body = ErrorBody),
    ))]
pub(super) async fn delete(
    State(state): State<AppState>,
    Caller(tenant): Caller,
    ApiPath(name): ApiPath<String>,
) -> Result<Json<VolumeView>, ApiError> {
    let name = volume_name(&name)?;
    Ok(Json(state.service.delete_volume(&tenant, &name).await?))
}

pub(super) fn volume_name(name: &str) -> Result<VolumeName, ApiError> {
    VolumeName::parse(name)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_id", e.to_string()))
}
