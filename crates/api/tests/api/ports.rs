//! Servers inside a sandbox reached through the API's port routes: real
//! HTTP through `paddock serve` to `python3 -m http.server` and a small
//! echo server in a sandbox with network `none`, a WebSocket-style upgrade
//! passed through, and every refusal (no token, another tenant, a port
//! out of range or the egress proxy's, nothing listening).
#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::time::{Duration, Instant};

use anyhow::{Result, bail};
use common::{Db, Setup, TestServer, expect_error, send};
use reqwest::{Method, StatusCode};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Answers every request with what it received as JSON; answers an
/// upgrade with 101 and then echoes raw bytes.
pub const ECHO_SERVER: &str = r#"import http.server, json, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'
    def reply(self):
        if self.headers.get('upgrade', '').lower() == 'websocket':
            self.send_response(101)
            self.send_header('Upgrade', 'websocket')
            self.send_header('Connection', 'Upgrade')
            self.end_headers()
            self.wfile.flush()
            while True:
                b = self.connection.recv(65536)
                if not b: break
                self.connection.sendall(b)
            self.close_connection = True
            return
        n = int(self.headers.get('content-length') or 0)
        body = self.rfile.read(n).decode()
        out = json.dumps({'method': self.command, 'path': self.path, 'body': body,
            'headers': {k.lower(): v for k, v in self.headers.items()}}).encode()
        self.send_response(200)
        self.send_header('Content-Type', 'application/json')
        self.send_header('Content-Length', str(len(out)))
        self.end_headers()
        self.wfile.write(out)
    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = reply
    def log_message(self, *a): pass
http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), H).serve_forever()
"#;

/// Starts the echo server on `port` in the sandbox and waits until it answers.
pub async fn start_echo(server: &TestServer, id: &str, port: u16) -> Result<()> {
    let put = format!("/v1/sandboxes/{id}/files/echo_server.py");
    let (status, body) = send(server.a(Method::PUT, &put).body(ECHO_SERVER)).await?;
    assert!(status.is_success(), "{status} {body}");
    let (status, body) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/processes"))
            .json(&json!({"argv": ["python3", "echo_server.py", port.to_string()]})),
    )
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    wait_until_up(server, id, port).await
}

async fn wait_until_up(server: &TestServer, id: &str, port: u16) -> Result<()> {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let url = format!("/v1/sandboxes/{id}/ports/{port}/");
        let response = server.a(Method::GET, &url).send().await?;
        if response.status() != StatusCode::BAD_GATEWAY {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!(
                "the server on {port} never listened: {}",
                response.text().await?
            );
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_in_a_sandbox_without_network_is_reached_with_the_token_only() -> Result<()> {
    let data = tempfile::tempdir()?;
    let server = TestServer::start(Setup::new(Db::Sqlite, data.path())).await?;
    let id = server.create_sandbox(json!({"network": "none"})).await?;
    let ports = format!("/v1/sandboxes/{id}/ports");

    // Nothing listens yet: a clear answer, not a hang.
    let err = expect_error(
        server.a(Method::GET, &format!("{ports}/8001/")),
        StatusCode::BAD_GATEWAY,
        "port_not_listening",
    )
    .await?;
    assert!(
        err["error"]["message"].as_str().unwrap().contains("8001"),
        "{err}"
    );
    for bad in ["0", "65536", "3128", "http"] {
        expect_error(
            server.a(Method::GET, &format!("{ports}/{bad}/")),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        )
        .await?;
    }

    start_echo(&server, &id, 8001).await?;
    let echo = format!("{ports}/8001");

    // Any method, path and query, the body streamed; the token stays here.
    let (status, seen) = send(
        server
            .a(Method::POST, &format!("{echo}/api/items?x=1&y=%20"))
            .header("x-custom", "kept")
            .header("connection", "keep-alive, x-hop")
            .header("x-hop", "dropped")
            .body("hello sandbox"),
    )
    .await?;
    assert_eq!(status, StatusCode::OK, "{seen}");
    assert_eq!(
        (&seen["method"], &seen["path"], &seen["body"]),
        (
            &json!("POST"),
            &json!("/api/items?x=1&y=%20"),
            &json!("hello sandbox")
        )
    );
    let headers = &seen["headers"];
    assert_eq!(headers["x-custom"], "kept", "{headers}");
    assert_eq!(headers["host"], "127.0.0.1:8001", "{headers}");
    assert_eq!(headers["x-forwarded-prefix"], echo, "{headers}");
    for gone in ["authorization", "x-hop"] {
        assert_eq!(
            headers[gone],
            Value::Null,
            "{gone} reached the sandbox: {headers}"
        );
    }

    // A gateway does not forward TRACE (it would echo the request back).
    expect_error(
        server.a(Method::TRACE, &format!("{echo}/api")),
        StatusCode::METHOD_NOT_ALLOWED,
        "method_not_allowed",
    )
    .await?;

    // Never without a token, never another tenant's sandbox.
    let unauthorized = server
        .request(Method::GET, &format!("{echo}/"))
        .send()
        .await?;
    assert_eq!(unauthorized.status(), StatusCode::UNAUTHORIZED);
    expect_error(
        server.b(Method::GET, &format!("{echo}/")),
        StatusCode::NOT_FOUND,
        "sandbox_not_found",
    )
    .await?;

    // A static file server, and the bare port path redirected to its slash.
    let (status, body) = send(
        server
            .a(
                Method::PUT,
                &format!("/v1/sandboxes/{id}/files/site/index.html"),
            )
            .body("<h1>from the sandbox</h1>"),
    )
    .await?;
    assert!(status.is_success(), "{body}");
    let (status, body) = send(server.a(Method::POST, &format!("/v1/sandboxes/{id}/processes")).json(
        &json!({"argv": ["python3", "-m", "http.server", "8000", "--bind", "127.0.0.1", "--directory", "site"]}),
    ))
    .await?;
    assert_eq!(status, StatusCode::CREATED, "{body}");
    wait_until_up(&server, &id, 8000).await?;
    let page = server
        .a(Method::GET, &format!("{ports}/8000/index.html"))
        .send()
        .await?;
    assert_eq!(page.status(), StatusCode::OK);
    assert_eq!(page.text().await?, "<h1>from the sandbox</h1>");
    let no_redirects = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()?;
    let bare = no_redirects
        .get(format!("{}{ports}/8000", server.url))
        .bearer_auth(&server.setup.tenants.a_token)
        .send()
        .await?;
    assert_eq!(bare.status(), StatusCode::PERMANENT_REDIRECT);
    assert_eq!(bare.headers()["location"], format!("{ports}/8000/"));

    signed_urls(&server, &id).await?;

    // An upgrade is passed through and the connection relayed both ways.
    let relayed = upgrade_and_echo(
        &server,
        &format!("{echo}/ws"),
        &server.setup.tenants.a_token,
    )
    .await?;
    assert_eq!(relayed, "ping through the tunnel");
    Ok(())
}

/// A raw `Connection: Upgrade` exchange: answers what came back after the 101.
pub async fn upgrade_and_echo(server: &TestServer, path: &str, token: &str) -> Result<String> {
    let addr = server.url.trim_start_matches("http://");
    upgrade_and_echo_on(addr, addr, path, token).await
}

/// [`upgrade_and_echo`] to `addr` with `host` as the `Host` header.
pub async fn upgrade_and_echo_on(
    addr: &str,
    host: &str,
    path: &str,
    token: &str,
) -> Result<String> {
    let mut tcp = tokio::net::TcpStream::connect(addr).await?;
    let head = format!(
        "GET {path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n\
         Connection: Upgrade\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
         Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n"
    );
    tcp.write_all(head.as_bytes()).await?;
    let mut answer = Vec::new();
    let mut byte = [0u8; 1];
    while !answer.ends_with(b"\r\n\r\n") {
        if tcp.read(&mut byte).await? == 0 {
            bail!(
                "closed before the answer's head: {}",
                String::from_utf8_lossy(&answer)
            );
        }
        answer.push(byte[0]);
    }
    let answer = String::from_utf8_lossy(&answer).to_string();
    if !answer.starts_with("HTTP/1.1 101") {
        bail!("no switch: {answer}");
    }
    assert!(
        answer.to_ascii_lowercase().contains("upgrade: websocket"),
        "{answer}"
    );
    let message = b"ping through the tunnel";
    tcp.write_all(message).await?;
    let mut back = vec![0u8; message.len()];
    tokio::time::timeout(Duration::from_secs(10), tcp.read_exact(&mut back)).await??;
    Ok(String::from_utf8(back)?)
}

/// A signed URL reaches its port of its sandbox without the bearer token,
/// until it expires; the token never reaches the server.
async fn signed_urls(server: &TestServer, id: &str) -> Result<()> {
    let ports = format!("/v1/sandboxes/{id}/ports");
    let mint = |port: u16, body: Value| {
        server
            .a(Method::POST, &format!("{ports}/{port}/url"))
            .json(&body)
    };
    let (status, minted) = send(mint(8001, json!({"ttl_secs": 600}))).await?;
    assert_eq!(status, StatusCode::CREATED, "{minted}");
    let url = minted["url"].as_str().unwrap().to_owned();
    let token = minted["token"].as_str().unwrap().to_owned();
    assert_eq!(url, format!("{ports}/8001/?paddock_token={token}"));
    assert!(
        minted["expires_at"].as_str().unwrap().ends_with('Z'),
        "{minted}"
    );

    // No bearer token: the signed URL alone lets the request in.
    let with_token = |path: &str, token: &str| {
        server.request(
            Method::GET,
            &format!("{ports}/{path}?a=1&paddock_token={token}"),
        )
    };
    let response = with_token("8001/page", &token).send().await?;
    assert_eq!(response.status(), StatusCode::OK);
    let cookie = response.headers()["set-cookie"].to_str()?.to_owned();
    assert!(
        cookie.starts_with(&format!(
            "paddock_token={token}; Path={ports}/8001/; HttpOnly"
        )),
        "{cookie}"
    );
    let seen: Value = response.json().await?;
    assert_eq!(
        seen["path"], "/page?a=1",
        "the token reached the server: {seen}"
    );
    // The cookie alone does for the page's later requests, and stays here too.
    let (status, seen) = send(
        server
            .request(Method::GET, &format!("{ports}/8001/style.css"))
            .header("cookie", format!("theme=dark; paddock_token={token}")),
    )
    .await?;
    assert_eq!(status, StatusCode::OK, "{seen}");
    assert_eq!(seen["headers"]["cookie"], "theme=dark", "{seen}");

    // Another port, a forged signature, a token minted by another tenant's
    // key for this sandbox, an expired one: all refused.
    let refused = async |path: &str, token: &str, why: &str| -> Result<()> {
        let err = expect_error(
            with_token(path, token),
            StatusCode::UNAUTHORIZED,
            "unauthorized",
        )
        .await?;
        let message = err["error"]["message"].as_str().unwrap();
        assert!(message.contains(why), "{path}: {message}");
        Ok(())
    };
    refused("8000/", &token, "signature").await?;
    let mut forged = token.clone();
    let last = forged.pop().unwrap();
    forged.push(if last == 'A' { 'B' } else { 'A' });
    refused("8001/", &forged, "signature").await?;
    let other_tenant = token.replacen(
        &format!(".{}.", server.setup.tenants.a),
        &format!(".{}.", server.setup.tenants.b),
        1,
    );
    refused("8001/", &other_tenant, "signature").await?;
    refused("8001/", "12.nope", "malformed").await?;
    let (status, short) = send(mint(8001, json!({"ttl_secs": 1}))).await?;
    assert_eq!(status, StatusCode::CREATED, "{short}");
    tokio::time::sleep(Duration::from_millis(2100)).await;
    refused("8001/", short["token"].as_str().unwrap(), "expired").await?;

    // Minting needs the tenant's token and sandbox, and a bounded lifetime.
    let anonymous = server
        .request(Method::POST, &format!("{ports}/8001/url"))
        .json(&json!({}))
        .send()
        .await?;
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    expect_error(
        server
            .b(Method::POST, &format!("{ports}/8001/url"))
            .json(&json!({})),
        StatusCode::NOT_FOUND,
        "sandbox_not_found",
    )
    .await?;
    for ttl in [0, 86_401] {
        expect_error(
            mint(8001, json!({"ttl_secs": ttl})),
            StatusCode::BAD_REQUEST,
            "invalid_request",
        )
        .await?;
    }
    expect_error(
        mint(3128, json!({})),
        StatusCode::BAD_REQUEST,
        "invalid_request",
    )
    .await?;
    // The server's own GET /url is still reached.
    let (status, seen) = send(server.a(Method::GET, &format!("{ports}/8001/url"))).await?;
    assert_eq!((status, &seen["path"]), (StatusCode::OK, &json!("/url")));
    Ok(())
}

/// With a ports domain, `{P}-{id}.{domain}` reaches the port at the
/// server's own root, with the same tokens; other hosts get the API.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn host_routing_reaches_a_port_at_its_root() -> Result<()> {
    let data = tempfile::tempdir()?;
    let mut setup = Setup::new(Db::Sqlite, data.path());
    setup.ports_domain = Some("ports.paddock.test".to_owned());
    let server = TestServer::start(setup).await?;
    let id = server.create_sandbox(json!({"network": "none"})).await?;
    start_echo(&server, &id, 8001).await?;
    let host = format!("8001-{id}.ports.paddock.test");
    let on_host = |method: Method, path: &str| server.a(method, path).header("host", &host);

    let (status, seen) = send(on_host(Method::POST, "/v1/health?x=1").body("b")).await?;
    assert_eq!(status, StatusCode::OK, "{seen}");
    assert_eq!(
        (
            &seen["path"],
            &seen["body"],
            &seen["headers"]["x-forwarded-prefix"]
        ),
        (&json!("/v1/health?x=1"), &json!("b"), &Value::Null)
    );
    assert_eq!(seen["headers"]["authorization"], Value::Null, "{seen}");
    // The same refusals as the path route.
    let anonymous = server
        .request(Method::GET, "/")
        .header("host", &host)
        .send()
        .await?;
    assert_eq!(anonymous.status(), StatusCode::UNAUTHORIZED);
    expect_error(
        server.b(Method::GET, "/").header("host", &host),
        StatusCode::NOT_FOUND,
        "sandbox_not_found",
    )
    .await?;
    expect_error(
        server
            .a(Method::GET, "/")
            .header("host", format!("8002-{id}.ports.paddock.test")),
        StatusCode::BAD_GATEWAY,
        "port_not_listening",
    )
    .await?;
    // A signed URL's token works on the host too; its cookie is for the whole host.
    let (_, minted) = send(
        server
            .a(Method::POST, &format!("/v1/sandboxes/{id}/ports/8001/url"))
            .json(&json!({})),
    )
    .await?;
    let token = minted["token"].as_str().unwrap();
    let response = server
        .request(Method::GET, &format!("/app?paddock_token={token}"))
        .header("host", &host)
        .send()
        .await?;
    assert_eq!(response.status(), StatusCode::OK);
    let cookie = response.headers()["set-cookie"].to_str()?.to_owned();
    assert!(cookie.contains("; Path=/;"), "{cookie}");
    assert_eq!(response.json::<Value>().await?["path"], "/app");
    // An upgrade through the host route.
    let addr = server.url.trim_start_matches("http://").to_owned();
    let relayed = upgrade_and_echo_on(&addr, &host, "/ws", &server.setup.tenants.a_token).await?;
    assert_eq!(relayed, "ping through the tunnel");
    // Any other host is the API as ever.
    let (status, health) = send(server.a(Method::GET, "/v1/health")).await?;
    assert_eq!(status, StatusCode::OK, "{health}");
    Ok(())
}
