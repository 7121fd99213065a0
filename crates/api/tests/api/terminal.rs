//! A terminal over HTTP: a shell started on a pseudo-terminal, its screen
//! followed as server-sent events, typed into through `stdin`, resized,
//! reattached after a disconnect (resuming, or replaying the scrollback),
//! and its exit code; all with the tenant's bearer token.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::Duration;

use anyhow::{Result, bail};
use base64::Engine as _;
use common::{Db, Setup, TestServer, expect_error, send};
use reqwest::{Method, Response, StatusCode};
use serde_json::{Value, json};

/// An attached follower: the SSE body read as it arrives.
struct Screen {
    response: Response,
    buffer: String,
    text: String,
    last_id: Option<String>,
    exit: Option<Value>,
    first_offset: Option<u64>,
}

impl Screen {
    fn new(response: Response) -> Self {
        assert_eq!(response.status(), StatusCode::OK);
        Self {
            response,
            buffer: String::new(),
            text: String::new(),
            last_id: None,
            exit: None,
            first_offset: None,
        }
    }

    /// Reads events until the screen so far shows `needle` (or, for
    /// `None`, until the `exit` event).
    async fn until(&mut self, needle: Option<&str>) -> Result<()> {
        let done = |s: &Self| match needle {
            Some(n) => s.text.contains(n),
            None => s.exit.is_some(),
        };
        while !done(self) {
            let chunk = tokio::time::timeout(Duration::from_secs(20), self.response.chunk())
                .await
                .map_err(|_| anyhow::anyhow!("no {needle:?} in {:?}", self.text))??;
            let Some(chunk) = chunk else {
                bail!("stream ended without {needle:?}: {:?}", self.text);
            };
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
            while let Some(end) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..end + 2).collect();
                self.event(&block);
            }
        }
        Ok(())
    }

    fn event(&mut self, block: &str) {
        let (mut name, mut data, mut id) = (None, String::new(), None);
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("event:") {
                name = Some(v.trim().to_owned());
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim_start());
            } else if let Some(v) = line.strip_prefix("id:") {
                id = Some(v.trim().to_owned());
            }
        }
        let data: Value = match serde_json::from_str(&data) {
            Ok(v) => v,
            Err(_) => return, // keep-alive comment
        };
        match name.as_deref() {
            Some("output") => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(data["data_base64"].as_str().unwrap())
                    .unwrap();
                self.first_offset
                    .get_or_insert(data["offset"].as_u64().unwrap());
                self.text.push_str(&String::from_utf8_lossy(&bytes));
                self.last_id = id;
            }
            Some("exit") => self.exit = Some(data),
            other => panic!("unexpected event {other:?}: {data}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shell_on_a_terminal_over_http() -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(Db::Sqlite, data.path())).await?;
    let id = server.create_sandbox(json!({})).await?;
    let processes = format!("/v1/sandboxes/{id}/processes");

    let (status, shell) = send(server.a(Method::POST, &processes).json(&json!({
        "argv": ["/bin/sh"],
        "pty": {"rows": 24, "cols": 80},
    })))
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{shell}");
    assert_eq!(shell["pty"], true);
    let handle = shell["handle"].as_u64().unwrap();
    let stream = format!("{processes}/{handle}/stream");
    let stdin = format!("{processes}/{handle}/stdin");
    let type_in = async |text: &str| {
        let (status, body) = send(server.a(Method::POST, &stdin).json(&json!({"data": text})))
            .await
            .unwrap();
        assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    };

    // The stream takes the same bearer token as every route, and only it.
    assert_eq!(
        server.request(Method::GET, &stream).send().await?.status(),
        StatusCode::UNAUTHORIZED
    );
    let (status, _) = send(server.b(Method::GET, &stream)).await?;
    assert!(
        status.is_client_error(),
        "another tenant read the terminal: {status}"
    );

    let mut screen = Screen::new(server.a(Method::GET, &stream).send().await?);
    type_in("stty size; echo HI-$((2*3))\n").await;
    screen.until(Some("HI-6")).await?;
    assert!(screen.text.contains("24 80"), "{:?}", screen.text);
    assert!(screen.text.contains("echo HI-"), "typed input is echoed");

    let resize = format!("{processes}/{handle}/resize");
    let (status, body) = send(
        server
            .a(Method::POST, &resize)
            .json(&json!({"rows": 50, "cols": 120})),
    )
    .await?;
    assert_eq!(status, StatusCode::NO_CONTENT, "{body}");
    type_in("stty size\n").await;
    screen.until(Some("50 120")).await?;
    expect_error(
        server
            .a(Method::POST, &resize)
            .json(&json!({"rows": 0, "cols": 120})),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await?;

    // Disconnect; what the shell writes meanwhile is kept.
    let resume_at = screen.last_id.clone().unwrap();
    drop(screen);
    type_in("echo AFTER-$((1+1))\n").await;
    tokio::time::sleep(Duration::from_millis(200)).await;

    // Resuming from the last id gets only what came after.
    let mut resumed = Screen::new(
        server
            .a(Method::GET, &stream)
            .header("last-event-id", &resume_at)
            .send()
            .await?,
    );
    resumed.until(Some("AFTER-2")).await?;
    assert_eq!(resumed.first_offset, Some(resume_at.parse()?));
    assert!(!resumed.text.contains("HI-6"), "{:?}", resumed.text);

    // A new attach from 0 replays the scrollback.
    let mut replay = Screen::new(
        server
            .a(Method::GET, &format!("{stream}?offset=0"))
            .send()
            .await?,
    );
    replay.until(Some("AFTER-2")).await?;
    assert!(replay.text.contains("HI-6") && replay.text.contains("50 120"));
    drop(replay);

    type_in("exit 5\n").await;
    resumed.until(None).await?;
    assert_eq!(resumed.exit.as_ref().unwrap()["exit_code"], 5);

    // Resizing a process without a terminal is refused.
    let (_, plain) = send(
        server
            .a(Method::POST, &processes)
            .json(&json!({"argv": ["sleep", "5"]})),
    )
    .await?;
    let plain = plain["handle"].as_u64().unwrap();
    let (status, body) = send(
        server
            .a(Method::POST, &format!("{processes}/{plain}/resize"))
            .json(&json!({"rows": 10, "cols": 10})),
    )
    .await?;
    assert!(status.is_client_error(), "{status} {body}");
    server.stop().await?;
    Ok(())
}
