//! A small HTTP/1.1 server side over a blocking stream (plain or TLS, as
//! [`crate::nethost::TestHost::start_service`] hands it): request heads,
//! `Content-Length` and chunked bodies, `gzip`/`deflate`/`zstd` request
//! encodings, keep-alive; JSON answers and chunked SSE answers.

use std::io::{self, BufRead, Read, Write};

use anyhow::{Context, bail};

use super::sse::Step;

const MAX_HEAD: usize = 64 * 1024;
const MAX_BODY: usize = 64 * 1024 * 1024;

/// One request as read.
#[derive(Debug, Clone)]
pub(crate) struct Request {
    pub method: String,
    /// The request target: the path and any query.
    pub target: String,
    pub version: String,
    pub headers: Vec<(String, String)>,
    /// The body, decoded from its `Content-Encoding`.
    pub body: Vec<u8>,
}

impl Request {
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The path without the query.
    pub(crate) fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or_default()
    }

    /// Whether the connection stays open after the answer.
    pub(crate) fn keep_alive(&self) -> bool {
        let connection = self.header("connection").map(str::to_ascii_lowercase);
        match connection.as_deref() {
            Some(c) if c.contains("close") => false,
            Some(c) if c.contains("keep-alive") => true,
            _ => self.version == "HTTP/1.1",
        }
    }
}

fn read_line(r: &mut impl BufRead, budget: &mut usize) -> anyhow::Result<Option<String>> {
    let mut line = Vec::new();
    let n = r
        .by_ref()
        .take(*budget as u64)
        .read_until(b'\n', &mut line)?;
    if n == 0 {
        return Ok(None);
    }
    *budget = budget.saturating_sub(n);
    if !line.ends_with(b"\n") {
        bail!("request head too long or cut short");
    }
    let text = String::from_utf8_lossy(&line);
    Ok(Some(text.trim_end_matches(['\r', '\n']).to_owned()))
}

/// Reads the next request, or `None` when the client closed the connection
/// between requests. `conn` is written to only for `Expect: 100-continue`.
pub(crate) fn read_request<S: Read + Write>(
    conn: &mut io::BufReader<S>,
) -> anyhow::Result<Option<Request>> {
    let mut budget = MAX_HEAD;
    // Blank lines before a request are allowed (RFC 9112 2.2).
    let line = loop {
        match read_line(conn, &mut budget)? {
            None => return Ok(None),
            Some(l) if l.is_empty() => continue,
            Some(l) => break l,
        }
    };
    let mut parts = line.split_whitespace();
    let (Some(method), Some(target), Some(version)) = (parts.next(), parts.next(), parts.next())
    else {
        bail!("bad request line {line:?}");
    };
    let mut headers = Vec::new();
    loop {
        let line = read_line(conn, &mut budget)?.context("connection closed in a head")?;
        if line.is_empty() {
            break;
        }
        let (name, value) = line.split_once(':').context("bad header line")?;
        headers.push((name.trim().to_owned(), value.trim().to_owned()));
    }
    let mut request = Request {
        method: method.to_owned(),
        target: target.to_owned(),
        version: version.to_owned(),
        headers,
        body: Vec::new(),
    };
    if request
        .header("expect")
        .is_some_and(|e| e.eq_ignore_ascii_case("100-continue"))
    {
        conn.get_mut().write_all(b"HTTP/1.1 100 Continue\r\n\r\n")?;
        conn.get_mut().flush()?;
    }
    let chunked = request
        .header("transfer-encoding")
        .is_some_and(|t| t.to_ascii_lowercase().contains("chunked"));
    let raw = if chunked {
        read_chunked(conn)?
    } else {
        let len: usize = match request.header("content-length") {
            Some(l) => l.parse().context("bad Content-Length")?,
            None => 0,
        };
        if len > MAX_BODY {
            bail!("body of {len} bytes is too large");
        }
        let mut body = vec![0u8; len];
        conn.read_exact(&mut body)?;
        body
    };
    request.body = decode(request.header("content-encoding"), raw)?;
    Ok(Some(request))
}

fn read_chunked(conn: &mut impl BufRead) -> anyhow::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut budget = MAX_HEAD;
        let line = read_line(conn, &mut budget)?.context("connection closed in a chunk")?;
        let size = line.split(';').next().unwrap_or_default().trim();
        let size = usize::from_str_radix(size, 16).context("bad chunk size")?;
        if size == 0 {
            // Trailers, up to the blank line.
            while !read_line(conn, &mut budget)?
                .context("connection closed in trailers")?
                .is_empty()
            {}
            return Ok(body);
        }
        if body.len() + size > MAX_BODY {
            bail!("chunked body too large");
        }
        let start = body.len();
        body.resize(start + size, 0);
        conn.read_exact(&mut body[start..])?;
        let mut crlf = [0u8; 2];
        conn.read_exact(&mut crlf)?;
    }
}

/// Undoes the `Content-Encoding` of a request body.
pub(crate) fn decode(encoding: Option<&str>, raw: Vec<u8>) -> anyhow::Result<Vec<u8>> {
    let Some(encoding) = encoding else {
        return Ok(raw);
    };
    let mut out = Vec::new();
    match encoding.trim().to_ascii_lowercase().as_str() {
        "" | "identity" => return Ok(raw),
        "gzip" | "x-gzip" => {
            flate2::read::GzDecoder::new(raw.as_slice()).read_to_end(&mut out)?;
        }
        "deflate" => {
            flate2::read::ZlibDecoder::new(raw.as_slice()).read_to_end(&mut out)?;
        }
        "zstd" => out = zstd::stream::decode_all(raw.as_slice())?,
        other => bail!("unsupported Content-Encoding {other}"),
    }
    Ok(out)
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        400 => "Bad Request",
        404 => "Not Found",
        _ => "Error",
    }
}

/// Writes a whole answer; `body` is left out for HEAD but counted.
pub(crate) fn write_full(
    w: &mut impl Write,
    status: u16,
    content_type: &str,
    body: &[u8],
    head_only: bool,
    keep_alive: bool,
) -> io::Result<()> {
    let connection = if keep_alive { "keep-alive" } else { "close" };
    let head = format!(
        "HTTP/1.1 {status} {}\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: {connection}\r\nrequest-id: req_fake\r\n\r\n",
        reason(status),
        body.len()
    );
    w.write_all(head.as_bytes())?;
    if !head_only {
        w.write_all(body)?;
    }
    w.flush()
}

/// Streams `steps` as `text/event-stream` in chunked encoding, flushing
/// after each event and sleeping at each pause.
pub(crate) fn write_sse(w: &mut impl Write, steps: &[Step], keep_alive: bool) -> io::Result<()> {
    let connection = if keep_alive { "keep-alive" } else { "close" };
    let head = format!(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\nConnection: {connection}\r\nrequest-id: req_fake\r\n\r\n"
    );
    w.write_all(head.as_bytes())?;
    w.flush()?;
    for step in steps {
        if let Step::Sleep(d) = step {
            std::thread::sleep(*d);
            continue;
        }
        let text = step.wire();
        write!(w, "{:x}\r\n{text}\r\n", text.len())?;
        w.flush()?;
    }
    w.write_all(b"0\r\n\r\n")?;
    w.flush()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Cursor};

    /// A fake connection: reads from `input`, collects what is written.
    struct Conn {
        input: Cursor<Vec<u8>>,
        output: Vec<u8>,
    }

    impl Read for Conn {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            self.input.read(buf)
        }
    }

    impl Write for Conn {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.output.extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    fn conn(bytes: Vec<u8>) -> BufReader<Conn> {
        BufReader::new(Conn {
            input: Cursor::new(bytes),
            output: Vec::new(),
        })
    }

    #[test]
    fn reads_several_requests_of_each_framing() {
        let gz = {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(br#"{"a":1}"#).unwrap();
            e.finish().unwrap()
        };
        let zs = zstd::stream::encode_all(&br#"{"z":2}"#[..], 0).unwrap();
        let mut bytes =
            b"POST /v1/messages?beta=true HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}".to_vec();
        bytes.extend_from_slice(b"POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n2;ext=1\r\nde\r\n0\r\nX-T: 1\r\n\r\n");
        bytes.extend_from_slice(format!("POST /g HTTP/1.1\r\nContent-Encoding: gzip\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", gz.len()).as_bytes());
        bytes.extend_from_slice(&gz);
        bytes.extend_from_slice(format!("POST /z HTTP/1.1\r\nContent-Encoding: zstd\r\nContent-Length: {}\r\nExpect: 100-continue\r\n\r\n", zs.len()).as_bytes());
        bytes.extend_from_slice(&zs);
        let mut c = conn(bytes);
        let r = read_request(&mut c).unwrap().unwrap();
        assert_eq!(
            (r.method.as_str(), r.path(), r.body.as_slice()),
            ("POST", "/v1/messages", &b"{}"[..])
        );
        assert!(r.keep_alive());
        let r = read_request(&mut c).unwrap().unwrap();
        assert_eq!(r.body, b"abcde");
        let r = read_request(&mut c).unwrap().unwrap();
        assert_eq!(r.body, br#"{"a":1}"#);
        assert!(!r.keep_alive());
        let r = read_request(&mut c).unwrap().unwrap();
        assert_eq!(r.body, br#"{"z":2}"#);
        assert!(c.get_ref().output.starts_with(b"HTTP/1.1 100 Continue"));
        assert!(read_request(&mut c).unwrap().is_none());
    }

    #[test]
    fn sse_is_chunked() {
        let mut out = Vec::new();
        let steps = [
            Step::Event(Some("ping".into()), serde_json::json!({"type": "ping"})),
            Step::Done,
        ];
        write_sse(&mut out, &steps, true).unwrap();
        let text = String::from_utf8(out).unwrap();
        assert!(text.contains("Transfer-Encoding: chunked\r\n"));
        assert!(text.ends_with("data: [DONE]\n\n\r\n0\r\n\r\n"));
    }
}
