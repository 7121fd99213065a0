//! The engine's checkpoint calls, which bollard does not have: one HTTP/1
//! request each on the engine's socket (Docker API 1.41, experimental mode).
//!
//! A checkpoint with `Exit` saves the container's runtime state (gVisor's
//! sentry: its memory, processes, open files) under the engine's own
//! directory for the container and ends the container; starting it with
//! `?checkpoint=` restores that state instead of running the entrypoint.

use std::path::{Path, PathBuf};
use std::time::Duration;

use bollard::Docker;
use http_body_util::{BodyExt, Full};
use hyper::body::Bytes;
use hyper::{Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use tokio::net::UnixStream;

/// Why a checkpoint call failed.
#[derive(Debug, thiserror::Error)]
pub enum CheckpointError {
    #[error("connecting to the engine at {socket}")]
    Connect {
        socket: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{method} {path}")]
    Request {
        method: Method,
        path: String,
        #[source]
        source: hyper::Error,
    },
    #[error("building the request {path}")]
    Build {
        path: String,
        #[source]
        source: hyper::http::Error,
    },
    #[error("{method} {path} answered {status}: {message}")]
    Refused {
        method: Method,
        path: String,
        status: StatusCode,
        message: String,
    },
    #[error("{method} {path} took longer than {timeout:?}")]
    TimedOut {
        method: Method,
        path: String,
        timeout: Duration,
    },
}

impl CheckpointError {
    /// dockerd 20.10 uploads the checkpoint to containerd's content store
    /// at each start from it, and now and then finds the same content
    /// there still ("commit failed: content sha256:...: already exists",
    /// moby/moby#42900); the container is untouched and a later try works.
    pub fn is_upload_race(&self) -> bool {
        matches!(self, CheckpointError::Refused { message, .. }
            if message.contains("failed to upload checkpoint") && message.contains("already exists"))
    }
}

/// The engine socket and the API version bollard negotiated.
pub(super) struct Checkpoints<'a> {
    pub socket: &'a Path,
    pub docker: &'a Docker,
    pub timeout: Duration,
}

impl Checkpoints<'_> {
    /// Saves `container` into checkpoint `name` and ends it.
    pub async fn create(&self, container: &str, name: &str) -> Result<(), CheckpointError> {
        let body = serde_json::json!({ "CheckpointID": name, "Exit": true }).to_string();
        self.call(
            Method::POST,
            &format!("/containers/{container}/checkpoints"),
            Some(body),
        )
        .await
    }

    /// Starts the exited `container` from its checkpoint `name`.
    pub async fn start_from(&self, container: &str, name: &str) -> Result<(), CheckpointError> {
        self.call(
            Method::POST,
            &format!("/containers/{container}/start?checkpoint={name}"),
            None,
        )
        .await
    }

    /// Removes checkpoint `name` of `container` (gone already is fine).
    pub async fn remove(&self, container: &str, name: &str) -> Result<(), CheckpointError> {
        match self
            .call(
                Method::DELETE,
                &format!("/containers/{container}/checkpoints/{name}"),
                None,
            )
            .await
        {
            Err(CheckpointError::Refused { status, .. }) if status == StatusCode::NOT_FOUND => {
                Ok(())
            }
            other => other,
        }
    }

    async fn call(
        &self,
        method: Method,
        path: &str,
        json: Option<String>,
    ) -> Result<(), CheckpointError> {
        let version = self.docker.client_version();
        let path = format!(
            "/v{}.{}{path}",
            version.major_version, version.minor_version
        );
        tokio::time::timeout(self.timeout, self.send(method.clone(), &path, json))
            .await
            .map_err(|_| CheckpointError::TimedOut {
                method,
                path,
                timeout: self.timeout,
            })?
    }

    async fn send(
        &self,
        method: Method,
        path: &str,
        json: Option<String>,
    ) -> Result<(), CheckpointError> {
        let stream =
            UnixStream::connect(self.socket)
                .await
                .map_err(|source| CheckpointError::Connect {
                    socket: self.socket.to_path_buf(),
                    source,
                })?;
        let failed = |source| CheckpointError::Request {
            method: method.clone(),
            path: path.to_owned(),
            source,
        };
        let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
            .await
            .map_err(failed)?;
        let driver = tokio::spawn(connection);
        let request = Request::builder()
            .method(method.clone())
            .uri(path)
            .header(hyper::header::HOST, "docker")
            .header(hyper::header::CONTENT_TYPE, "application/json")
            .body(Full::new(Bytes::from(json.unwrap_or_default())))
            .map_err(|source| CheckpointError::Build {
                path: path.to_owned(),
                source,
            })?;
        let answer = sender.send_request(request).await.map_err(failed);
        let result = match answer {
            Ok(response) if response.status().is_success() => Ok(()),
            Ok(response) => {
                let status = response.status();
                let body = response
                    .into_body()
                    .collect()
                    .await
                    .map(|b| b.to_bytes())
                    .unwrap_or_default();
                Err(CheckpointError::Refused {
                    method,
                    path: path.to_owned(),
                    status,
                    message: engine_message(&body),
                })
            }
            Err(err) => Err(err),
        };
        driver.abort();
        result
    }
}

/// The engine's `{"message": ...}`, or the body as text.
fn engine_message(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| v.get("message")?.as_str().map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_engines_upload_race_is_tried_again() {
        let refused = |message: &str| CheckpointError::Refused {
            method: Method::POST,
            path: "/v1.41/containers/c/start?checkpoint=p".to_owned(),
            status: StatusCode::INTERNAL_SERVER_ERROR,
            message: message.to_owned(),
        };
        assert!(
            refused(
                "failed to upload checkpoint to containerd: commit failed: content \
                 sha256:c81e: already exists"
            )
            .is_upload_race()
        );
        assert!(!refused("id already in use").is_upload_race());
        assert!(!refused("checkpoint p does not exist for container /c").is_upload_race());
    }

    #[test]
    fn the_engines_message_is_read_from_its_json_or_taken_as_text() {
        assert_eq!(
            engine_message(br#"{"message":"custom checkpointdir is not supported"}"#),
            "custom checkpointdir is not supported"
        );
        assert_eq!(engine_message(b"page not found\n"), "page not found");
    }
}
