//! What `paddock doctor --server` reads: the caller's rows that the store
//! quarantined because they failed validation when read.

use axum::Json;
use axum::extract::State;
use serde::{Deserialize, Serialize};

use super::{ApiError, AppState, Caller};
use crate::service::QuarantineView;

#[derive(Debug, Serialize, Deserialize, utoipa::ToSchema)]
pub struct QuarantineList {
    pub rows: Vec<QuarantineView>,
}

#[utoipa::path(get, path = "/v1/doctor/quarantine", tag = "doctor",
    summary = "The caller's rows that failed validation when read, moved out of their tables",
    responses(
        (status = 200, description = "the quarantined rows, newest first", body = QuarantineList),
    ))]
pub(super) async fn quarantine(
    State(state): State<AppState>,
    Caller(tenant): Caller,
) -> Result<Json<QuarantineList>, ApiError> {
    let rows = state.agents()?.quarantined(&tenant).await?;
    Ok(Json(QuarantineList { rows }))
}
