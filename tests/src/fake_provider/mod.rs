//! A local fake of the model providers the agent CLIs talk to, speaking
//! their real streaming wire formats and scripted by the test to make the
//! agent run tools:
//!
//! * `POST /v1/messages` (`?beta=true` allowed): Anthropic Messages, SSE when
//!   `stream: true`, else a JSON Message (Claude Code, opencode's anthropic
//!   provider);
//! * `POST /v1/responses`: OpenAI Responses SSE (Codex, opencode's openai
//!   provider);
//! * `POST /v1/chat/completions`: Chat Completions SSE with a usage chunk
//!   and `[DONE]` (opencode's OpenAI-compatible provider);
//! * `HEAD /`, `HEAD /api/hello` (Claude's preconnect), `GET /v1/models`,
//!   `POST /v1/messages/count_tokens`; anything else is a JSON 404.
//!
//! Which turn of the [`Script`] a request gets is in [`script`]. Every
//! request is recorded ([`FakeProvider::requests`]). It serves on loopback
//! ([`FakeProvider::start`]) or inside a test host's network namespace,
//! over TLS or not ([`FakeProvider::start_in_host`]).

mod anthropic;
mod chat;
mod http;
mod responses;
mod routes;
pub mod script;
mod sse;

use std::net::{SocketAddr, TcpListener, TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context;
use serde::Serialize;
use serde_json::Value;

pub use script::{Reply, Script, Turn, Usage};

use crate::nethost::{ConnectionHandler, DocRange, ReadWrite, TestHost};

/// One request the fake was sent.
#[derive(Debug, Clone, Serialize)]
pub struct Recorded {
    pub method: String,
    /// The request target: the path and any query (`/v1/messages?beta=true`).
    pub path: String,
    /// The headers as sent (names as the client spelt them).
    pub headers: Vec<(String, String)>,
    /// The body: its JSON, a string when it is not JSON, null when empty.
    pub body: Value,
    /// A model call (a POST to a model route with a JSON body).
    pub model_call: bool,
    /// The script's turn it was answered with; `None` for a model call
    /// without tools (a title) and for other requests.
    pub turn: Option<usize>,
    pub unix_ms: u128,
}

impl Recorded {
    /// A header's value, the name in any case.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

type Observer = Box<dyn Fn(&Recorded) + Send + Sync>;

/// The script and the log, shared by the connections.
pub(crate) struct Shared {
    script: Mutex<Script>,
    log: Mutex<Vec<Recorded>>,
    observer: Mutex<Option<Observer>>,
}

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("script", &self.script)
            .field("log", &self.log)
            .finish_non_exhaustive()
    }
}

impl Shared {
    fn script(&self) -> Script {
        self.script
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    fn record(&self, entry: Recorded) {
        if let Some(observe) = self
            .observer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_ref()
        {
            observe(&entry);
        }
        self.log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(entry);
    }
}

/// Ends a loopback listener's accept loop when dropped.
#[derive(Debug)]
struct Listening {
    stop: Arc<AtomicBool>,
    addr: SocketAddr,
}

impl Drop for Listening {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop to see the flag.
        let _ = TcpStream::connect_timeout(&self.addr, Duration::from_secs(1));
    }
}

/// A running fake provider. Dropping it stops accepting connections (and
/// removes its test host).
#[derive(Debug)]
pub struct FakeProvider {
    shared: Arc<Shared>,
    addr: SocketAddr,
    tls: bool,
    host: Option<TestHost>,
    _listening: Option<Listening>,
}

impl FakeProvider {
    /// Serves `script` on 127.0.0.1 on a free port.
    pub fn start(script: Script) -> anyhow::Result<Self> {
        Self::start_on("127.0.0.1:0", script)
    }

    /// Serves `script` on `addr` (plain HTTP).
    pub fn start_on(addr: impl ToSocketAddrs, script: Script) -> anyhow::Result<Self> {
        let listener = TcpListener::bind(addr).context("binding the fake provider")?;
        let addr = listener.local_addr()?;
        let shared = Self::shared(script);
        let handler = handler(&shared);
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = stop.clone();
        std::thread::Builder::new()
            .name("fake-provider".to_owned())
            .spawn(move || {
                for stream in listener.incoming() {
                    if stopped.load(Ordering::SeqCst) {
                        return;
                    }
                    let Ok(stream) = stream else { continue };
                    let _ = stream.set_nodelay(true);
                    let handler = handler.clone();
                    std::thread::spawn(move || handler(Box::new(stream)));
                }
            })
            .context("starting the fake provider")?;
        Ok(Self {
            shared,
            addr,
            tls: false,
            host: None,
            _listening: Some(Listening { stop, addr }),
        })
    }

    /// Serves `script` in a test host (its own network namespace, see
    /// [`TestHost`]) on `port`, over TLS when `tls` is given (a
    /// [`crate::tlshost::TestCa::server`] configuration).
    pub fn start_in_host(
        name: &str,
        range: DocRange,
        port: u16,
        tls: Option<Arc<rustls::ServerConfig>>,
        script: Script,
    ) -> anyhow::Result<Self> {
        let shared = Self::shared(script);
        let secure = tls.is_some();
        let host = TestHost::start_service(name, range, port, tls, handler(&shared))?;
        Ok(Self {
            shared,
            addr: SocketAddr::from((host.ip, host.port)),
            tls: secure,
            host: Some(host),
            _listening: None,
        })
    }

    fn shared(script: Script) -> Arc<Shared> {
        Arc::new(Shared {
            script: Mutex::new(script),
            log: Mutex::default(),
            observer: Mutex::default(),
        })
    }

    /// The address it serves on.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://IP:PORT` (or `https://`), no trailing slash and no `/v1`:
    /// Claude's `ANTHROPIC_BASE_URL`; add `/v1` for Codex and opencode.
    pub fn base_url(&self) -> String {
        let scheme = if self.tls { "https" } else { "http" };
        format!("{scheme}://{}", self.addr)
    }

    /// The test host it serves in, if any (for its `allow_option`).
    pub fn host(&self) -> Option<&TestHost> {
        self.host.as_ref()
    }

    /// Every request so far, oldest first.
    pub fn requests(&self) -> Vec<Recorded> {
        self.shared
            .log
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The model calls so far (titles included), oldest first.
    pub fn model_calls(&self) -> Vec<Recorded> {
        self.requests()
            .into_iter()
            .filter(|r| r.model_call)
            .collect()
    }

    /// Waits until `count` model calls have arrived (the last may still be
    /// streaming): to cancel a run in the middle of a delayed turn.
    pub fn wait_for_model_calls(&self, count: usize, timeout: Duration) -> anyhow::Result<()> {
        let deadline = Instant::now() + timeout;
        loop {
            let seen = self.model_calls().len();
            if seen >= count {
                return Ok(());
            }
            anyhow::ensure!(
                Instant::now() < deadline,
                "{seen} model calls of {count} after {timeout:?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Replaces the script for the requests to come.
    pub fn set_script(&self, script: Script) {
        *self
            .shared
            .script
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = script;
    }

    /// Calls `observe` with each request as it arrives (before its answer).
    pub fn on_request(&self, observe: impl Fn(&Recorded) + Send + Sync + 'static) {
        *self
            .shared
            .observer
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(Box::new(observe));
    }

    /// The connection handler of this fake, to serve it on a listener of
    /// the caller's own (a [`TestHost::start_service`], say).
    pub fn handler(&self) -> ConnectionHandler {
        handler(&self.shared)
    }
}

fn handler(shared: &Arc<Shared>) -> ConnectionHandler {
    let shared = shared.clone();
    Arc::new(move |conn: Box<dyn ReadWrite>| routes::serve_connection(&shared, conn))
}

#[cfg(test)]
mod tests;
