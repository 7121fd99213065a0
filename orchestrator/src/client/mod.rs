//! The CLI as a client of a running `paddock serve` (`--server URL` or
//! PADDOCK_SERVER, token from --token or PADDOCK_TOKEN): every command is one
//! or a few HTTP requests; the server does the work.

mod exec;
mod files;
mod network;
mod pause;
mod port_forward;
mod process;
mod sandbox;
mod snapshot;
pub mod sse;
mod volume;
mod workspace;

use anyhow::{Context, bail};
use paddock_api::http::ErrorBody;
use reqwest::{Method, RequestBuilder, Response};
use serde::Serialize;
use serde::de::DeserializeOwned;

pub use files::files;
pub use network::network;
pub use pause::{pause, resume};
pub use port_forward::port_forward;
pub use process::process;
pub use sandbox::{create, info, ls, rm};
pub use snapshot::snapshot;
pub use volume::volume;
pub use workspace::{PackRefused, upload_dir, workspace};

pub use exec::exec;
pub(crate) use exec::{base64_decode, base64_encode, exit_code};

use crate::cli::ServerArgs;

/// How long connecting to the server may take.
const CONNECT_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);
/// Longest silence on an open connection: event streams send a keep-alive
/// every 15 s, and a cancel answers once the run ended.
const READ_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(120);

#[derive(Debug, Clone)]
pub struct ApiClient {
    base: String,
    token: Option<String>,
    http: reqwest::Client,
}

impl ApiClient {
    /// The client for `--server`, or an error saying how to give one.
    pub fn from_args(args: &ServerArgs, command: &str) -> anyhow::Result<Self> {
        let Some(server) = args.server.as_deref() else {
            bail!("`paddock {command}` talks to a server: give --server URL or set PADDOCK_SERVER");
        };
        let base = server.trim_end_matches('/').to_owned();
        if !base.starts_with("http://") && !base.starts_with("https://") {
            bail!("--server {server:?}: expected an http:// or https:// URL");
        }
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .build()
            .context("setting up the HTTP client")?;
        Ok(Self {
            base,
            token: args.token.clone(),
            http,
        })
    }

    /// The flag that names this server on a command line printed for people.
    pub fn server_flag(&self) -> String {
        format!(" --server {}", self.base)
    }

    /// This client without the read timeout, for connections that may stay
    /// quiet for as long as they like (an upgraded tunnel).
    pub fn without_read_timeout(&self) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .build()
            .context("setting up the HTTP client")?;
        Ok(Self {
            http,
            ..self.clone()
        })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    pub fn request(&self, method: Method, path: &str) -> RequestBuilder {
        let request = self.http.request(method, format!("{}{path}", self.base));
        match &self.token {
            Some(token) => request.bearer_auth(token),
            None => request,
        }
    }

    /// Sends and answers the response when its status is a success; otherwise
    /// the server's [`ErrorBody`] as the error.
    pub async fn send(&self, request: RequestBuilder) -> anyhow::Result<Response> {
        let response = request.send().await.map_err(|err| {
            if err.is_connect() {
                anyhow::Error::new(err).context(format!(
                    "cannot reach the server at {} (is `paddock serve` running there?)",
                    self.base
                ))
            } else {
                anyhow::Error::new(err).context(format!("talking to {}", self.base))
            }
        })?;
        if response.status().is_success() {
            return Ok(response);
        }
        let status = response.status();
        let body = response.bytes().await.unwrap_or_default();
        match serde_json::from_slice::<ErrorBody>(&body) {
            Ok(body) => Err(ServerError::from_body(Some(status.as_u16()), body).into()),
            Err(_) => bail!("the server answered HTTP {status}"),
        }
    }

    /// Sends, and decodes a success's body as the server's type `T` for it.
    pub async fn answer<T: DeserializeOwned>(&self, request: RequestBuilder) -> anyhow::Result<T> {
        let response = self.send(request).await?;
        let body = response
            .bytes()
            .await
            .context("reading the server's answer")?;
        serde_json::from_slice(&body).context("reading the server's answer")
    }
}

/// The server's [`ErrorBody`] answer (a response's, or an event's in a
/// stream, which has no status of its own).
#[derive(Debug)]
pub struct ServerError {
    pub status: Option<u16>,
    pub code: String,
    pub message: String,
}

impl std::fmt::Display for ServerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.status {
            Some(status) => write!(f, "{} ({}, HTTP {status})", self.message, self.code),
            None => write!(f, "{} ({})", self.message, self.code),
        }
    }
}

impl std::error::Error for ServerError {}

impl ServerError {
    pub fn from_body(status: Option<u16>, body: ErrorBody) -> Self {
        Self {
            status,
            code: body.error.code,
            message: body.error.message,
        }
    }
}

/// `... rm ID...`: DELETEs each id's `path`, printing `line` for each deleted
/// one (or, with `json`, one array of what the server answered, a `T` each)
/// and an error per failure; exits 125 when any failed, after trying them all.
pub async fn delete_each<T: DeserializeOwned + Serialize>(
    client: &ApiClient,
    args: &crate::cli::RmArgs,
    path: impl Fn(&str) -> String,
    line: impl Fn(&str, &T) -> String,
) -> anyhow::Result<u8> {
    let mut results: Vec<T> = Vec::new();
    let mut failed = false;
    for id in &args.ids {
        match client
            .answer::<T>(client.request(Method::DELETE, &path(id)))
            .await
        {
            Ok(deleted) => {
                if !args.json {
                    println!("{}", line(id, &deleted));
                }
                results.push(deleted);
            }
            Err(err) => {
                eprintln!("paddock: {id}: {err:#}");
                failed = true;
            }
        }
    }
    if args.json {
        print_json(&results)?;
    }
    Ok(if failed {
        crate::EXIT_PADDOCK_FAILED
    } else {
        0
    })
}

/// `--backend` and `--image` as the `backend` and `image` of a request that
/// makes sandboxes on a server (None: the server picks).
pub fn backend_choice(
    backend: Option<crate::backend::BackendKind>,
    image: Option<&str>,
) -> (Option<String>, Option<String>) {
    (
        backend.map(|kind| kind.name().to_owned()),
        image.map(str::to_owned),
    )
}

/// `--secret` as a request's `secrets`: a server's by name, a local one
/// with its value (taken from this environment).
pub fn secret_refs(secrets: &[crate::cli::SecretArg]) -> Vec<paddock_api::service::SecretRef> {
    use paddock_api::service::{SecretRef, SuppliedSecret};
    secrets
        .iter()
        .map(|secret| match secret {
            crate::cli::SecretArg::Server(name) => SecretRef::Named(name.clone()),
            crate::cli::SecretArg::Local(spec) => SecretRef::Supplied(SuppliedSecret::from(spec)),
        })
        .collect()
}

/// Prints an answer as JSON, pretty, its keys sorted (as `--json` always
/// printed them).
pub fn print_json(value: &impl Serialize) -> anyhow::Result<()> {
    let value = serde_json::to_value(value)?;
    println!("{}", serde_json::to_string_pretty(&value)?);
    Ok(())
}

/// A field of an answer in a table: `-` for none.
pub fn cell(value: Option<impl std::fmt::Display>) -> String {
    value.map_or_else(|| "-".to_owned(), |v| v.to_string())
}

/// Percent-encodes one path for a URL, keeping its slashes.
pub fn encode_path(path: &str) -> String {
    path.split('/')
        .map(|segment| {
            segment
                .bytes()
                .map(|b| match b {
                    b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                        (b as char).to_string()
                    }
                    _ => format!("%{b:02X}"),
                })
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_keep_slashes_and_escape_the_rest() {
        assert_eq!(encode_path("src/main.rs"), "src/main.rs");
        assert_eq!(encode_path("a b/c?d#e"), "a%20b/c%3Fd%23e");
        assert_eq!(encode_path("é"), "%C3%A9");
    }

    #[test]
    fn a_server_is_required_and_must_be_http() {
        let none = ServerArgs {
            server: None,
            token: None,
        };
        assert!(ApiClient::from_args(&none, "sandbox ls").is_err());
        let ftp = ServerArgs {
            server: Some("ftp://x".into()),
            token: None,
        };
        assert!(ApiClient::from_args(&ftp, "sandbox ls").is_err());
        let ok = ServerArgs {
            server: Some("http://127.0.0.1:7878/".into()),
            token: Some("t".into()),
        };
        assert_eq!(
            ApiClient::from_args(&ok, "x").unwrap().base,
            "http://127.0.0.1:7878"
        );
    }
}
