//! E2B's error shape, `{"code": <HTTP status>, "message"}`, which its SDKs
//! parse before they look at the status (a body without both fields
//! crashes the Python SDK). The answer also says `Should-Retry: false`: the
//! SDK replays a 429 or 503 otherwise, a create included.

use axum::Json;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use serde::Serialize;

use crate::http::ApiError;
use crate::service::ServiceError;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct E2bError {
    pub status: StatusCode,
    pub message: String,
}

#[derive(Serialize)]
struct Body<'a> {
    code: u16,
    message: &'a str,
}

impl E2bError {
    pub fn new(status: StatusCode, message: impl Into<String>) -> Self {
        Self {
            status,
            message: message.into(),
        }
    }

    pub fn unauthorized() -> Self {
        Self::new(
            StatusCode::UNAUTHORIZED,
            "a valid API key (a Paddock tenant token) is required in X-API-KEY",
        )
    }

    pub fn sandbox_not_found(id: &str) -> Self {
        Self::new(StatusCode::NOT_FOUND, format!("sandbox {id} not found"))
    }
}

impl From<ApiError> for E2bError {
    fn from(err: ApiError) -> Self {
        Self::new(err.status, err.message)
    }
}

impl From<ServiceError> for E2bError {
    fn from(err: ServiceError) -> Self {
        ApiError::from(err).into()
    }
}

impl IntoResponse for E2bError {
    fn into_response(self) -> Response {
        let body = Body {
            code: self.status.as_u16(),
            message: &self.message,
        };
        let mut response = (self.status, Json(body)).into_response();
        response
            .headers_mut()
            .insert("should-retry", HeaderValue::from_static("false"));
        response
    }
}
