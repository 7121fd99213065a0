//! E2B templates on Paddock: `base` (E2B's default) is the server's
//! default backend and image; a backend's own name (`native`, `docker`,
//! `gvisor`, `microvm`, among those the server enabled) is that backend
//! with its first image. Any other name is E2B's "template not found".

use axum::http::StatusCode;

use super::error::E2bError;
use crate::http::AppState;

/// E2B's default template.
pub const BASE: &str = "base";

/// The backend and image a template names (None: the server's default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    pub backend: Option<String>,
    pub image: Option<String>,
}

impl Template {
    pub fn resolve(name: &str, state: &AppState) -> Result<Self, E2bError> {
        if name == BASE {
            return Ok(Self {
                backend: None,
                image: None,
            });
        }
        let known = state
            .service
            .backends()
            .one_per_name()
            .any(|entry| entry.name == name);
        if known {
            return Ok(Self {
                backend: Some(name.to_owned()),
                image: None,
            });
        }
        Err(E2bError::new(
            StatusCode::NOT_FOUND,
            format!(
                "template '{name}' not found: this server offers '{BASE}' and its backends' names"
            ),
        ))
    }
}
