//! The fake over loopback: keep-alive, routes, recording.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use serde_json::{Value, json};

use super::*;

/// A minimal HTTP/1.1 client on one connection.
struct Client {
    conn: BufReader<TcpStream>,
}

impl Client {
    fn new(p: &FakeProvider) -> Self {
        let stream = TcpStream::connect(p.addr()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        Self {
            conn: BufReader::new(stream),
        }
    }

    /// Sends a request; returns the status, the headers and the body (chunks joined).
    fn send(
        &mut self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> (u16, Vec<(String, String)>, String) {
        let mut head = format!(
            "{method} {path} HTTP/1.1\r\nHost: fake\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (n, v) in headers {
            head.push_str(&format!("{n}: {v}\r\n"));
        }
        head.push_str("\r\n");
        let s = self.conn.get_mut();
        s.write_all(head.as_bytes()).unwrap();
        s.write_all(body).unwrap();
        let mut line = String::new();
        self.conn.read_line(&mut line).unwrap();
        let status: u16 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        let mut headers = Vec::new();
        loop {
            let mut l = String::new();
            self.conn.read_line(&mut l).unwrap();
            let l = l.trim_end();
            if l.is_empty() {
                break;
            }
            let (n, v) = l.split_once(':').unwrap();
            headers.push((n.to_ascii_lowercase(), v.trim().to_owned()));
        }
        let get = |n: &str| headers.iter().find(|(h, _)| h == n).map(|(_, v)| v.clone());
        let mut out = Vec::new();
        if method == "HEAD" {
        } else if get("transfer-encoding").as_deref() == Some("chunked") {
            loop {
                let mut size = String::new();
                self.conn.read_line(&mut size).unwrap();
                let size = usize::from_str_radix(size.trim(), 16).unwrap();
                let mut chunk = vec![0u8; size + 2];
                self.conn.read_exact(&mut chunk).unwrap();
                if size == 0 {
                    break;
                }
                out.extend_from_slice(&chunk[..size]);
            }
        } else {
            let len: usize = get("content-length").unwrap().parse().unwrap();
            out.resize(len, 0);
            self.conn.read_exact(&mut out).unwrap();
        }
        (status, headers, String::from_utf8(out).unwrap())
    }
}

fn script() -> Script {
    Script::new(vec![
        Turn::tool(
            "Bash",
            json!({"command": "echo hi > note.txt && cat note.txt"}),
        ),
        Turn::text("Done.").with_usage(200, 9),
    ])
}

#[test]
fn a_two_turn_anthropic_run_on_one_connection() {
    let p = FakeProvider::start(script()).unwrap();
    let mut c = Client::new(&p);
    let first = json!({"model": "m", "stream": true, "tools": [{"name": "Bash"}],
                       "messages": [{"role": "user", "content": "go"}]});
    let (status, headers, body) = c.send(
        "POST",
        "/v1/messages?beta=true",
        &[("x-api-key", "sk-ant-1")],
        first.to_string().as_bytes(),
    );
    assert_eq!(status, 200);
    assert!(
        headers
            .iter()
            .any(|(n, v)| n == "content-type" && v.starts_with("text/event-stream"))
    );
    assert!(body.contains("event: message_start"));
    assert!(body.contains(r#""stop_reason":"tool_use""#));
    let second = json!({"model": "m", "stream": true, "tools": [{"name": "Bash"}],
                        "messages": [{"role": "user", "content": "go"},
                                     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": "hi"}]}]});
    let (_, _, body) = c.send(
        "POST",
        "/v1/messages?beta=true",
        &[("X-Api-Key", "sk-ant-2")],
        second.to_string().as_bytes(),
    );
    assert!(body.contains(r#""output_tokens":9"#));
    // Not streamed: a Message.
    let (_, _, body) = c.send(
        "POST",
        "/v1/messages",
        &[],
        json!({"model": "m", "tools": [{"name": "Bash"}], "messages": []})
            .to_string()
            .as_bytes(),
    );
    let message: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(message["content"][0]["type"], "tool_use");
    assert_eq!(
        message["content"][0]["input"]["command"],
        "echo hi > note.txt && cat note.txt"
    );

    let log = p.requests();
    assert_eq!(log.len(), 3);
    assert_eq!(log[0].path, "/v1/messages?beta=true");
    assert_eq!(log[0].header("x-api-key"), Some("sk-ant-1"));
    assert_eq!(log[1].header("x-api-key"), Some("sk-ant-2"));
    assert_eq!(
        log.iter().map(|r| r.turn).collect::<Vec<_>>(),
        [Some(0), Some(1), Some(0)]
    );
    assert_eq!(p.model_calls().len(), 3);
}

#[test]
fn other_routes() {
    let p = FakeProvider::start(script()).unwrap();
    let mut c = Client::new(&p);
    assert_eq!(c.send("HEAD", "/api/hello", &[], b"").0, 200);
    assert_eq!(c.send("HEAD", "/", &[], b"").0, 200);
    let (status, _, body) = c.send("GET", "/v1/models", &[], b"");
    assert_eq!(status, 200);
    let models: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(models["object"], "list");
    let (status, _, body) = c.send("GET", "/v1/nothing", &[], b"");
    assert_eq!(status, 404);
    let e: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(e["error"]["type"], "not_found_error");
    assert_eq!(p.requests().len(), 4);
    assert!(p.model_calls().is_empty());
}

#[test]
fn responses_and_chat_with_titles_and_compressed_bodies() {
    let p = FakeProvider::start(Script::new(vec![
        Turn::tool("exec_command", json!({"cmd": "true"})),
        Turn::text("ok"),
    ]))
    .unwrap();
    let mut c = Client::new(&p);
    let body = json!({"model": "gpt", "stream": true, "tools": [{"type": "function", "name": "exec_command"}],
                      "input": [{"type": "function_call_output", "call_id": "c", "output": "x"}]});
    let gz = {
        let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
        e.write_all(body.to_string().as_bytes()).unwrap();
        e.finish().unwrap()
    };
    let (status, _, sse) = c.send(
        "POST",
        "/v1/responses",
        &[
            ("Content-Encoding", "gzip"),
            ("authorization", "Bearer sk-1"),
        ],
        &gz,
    );
    assert_eq!(status, 200);
    assert!(sse.contains("event: response.completed"));
    assert!(sse.contains(r#""text":"ok""#));
    // opencode's title call: no tools, no turn.
    let title = json!({"model": "f", "stream": true, "messages": [{"role": "system", "content": "You are a title generator"}]});
    let (_, _, sse) = c.send(
        "POST",
        "/v1/chat/completions",
        &[],
        title.to_string().as_bytes(),
    );
    assert!(sse.contains("Fake"));
    assert!(sse.ends_with("data: [DONE]\n\n"));
    let log = p.requests();
    assert_eq!(log[0].header("Authorization"), Some("Bearer sk-1"));
    assert_eq!(log[0].body["input"][0]["call_id"], "c");
    assert_eq!(log[0].turn, Some(1));
    assert_eq!(log[1].turn, None);
    assert!(log[1].model_call);
}

#[test]
fn a_delayed_turn_can_be_waited_for() {
    let p = FakeProvider::start(Script::new(vec![
        Turn::deltas(3, Duration::from_millis(10)).with_delay(Duration::from_millis(300)),
    ]))
    .unwrap();
    let addr = p.addr();
    let seen = Arc::new(Mutex::new(0usize));
    let counted = seen.clone();
    p.on_request(move |_| *counted.lock().unwrap() += 1);
    let client = std::thread::spawn(move || {
        let mut s = TcpStream::connect(addr).unwrap();
        let body = json!({"stream": true, "tools": [{"name": "Bash"}], "messages": []}).to_string();
        write!(
            s,
            "POST /v1/messages HTTP/1.1\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
            body.len()
        )
        .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    });
    p.wait_for_model_calls(1, Duration::from_secs(5)).unwrap();
    let started = std::time::Instant::now();
    let out = client.join().unwrap();
    assert!(started.elapsed() >= Duration::from_millis(150));
    assert_eq!(out.matches("text_delta").count(), 3);
    assert_eq!(*seen.lock().unwrap(), 1);
    assert!(
        p.wait_for_model_calls(2, Duration::from_millis(50))
            .is_err()
    );
}
