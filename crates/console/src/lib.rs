//! The web console: the assets `crates/console/web` builds (Vite, committed
//! in `crates/console/dist`, checked against their sources by
//! `scripts/console-setup.sh`), compiled into the binary and served at `/`
//! by `paddock serve`. The console talks to the server only through the
//! public `/v1` API with the tenant token it was given, so it can do nothing
//! a client of the API could not.

use axum::Router;
use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use include_dir::{Dir, include_dir};

static DIST: Dir<'static> = include_dir!("$CARGO_MANIFEST_DIR/dist");

/// Scripts and styles only from this server; no frames, no plug-ins, and
/// fetches only to this origin. CodeMirror sets element styles, hence
/// `style-src 'unsafe-inline'` (styles only: scripts stay strict).
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data: blob:; connect-src 'self'; font-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// `GET /` (the page) and `GET /assets/{file}` (its hashed, immutable assets).
pub fn router<S: Clone + Send + Sync + 'static>() -> Router<S> {
    Router::new()
        .route("/", get(index))
        .route("/assets/{file}", get(asset))
}

/// Every file the console ships (path under `dist/`, contents).
pub fn shipped_files() -> Vec<(&'static str, &'static [u8])> {
    fn walk(dir: &'static Dir<'static>, out: &mut Vec<(&'static str, &'static [u8])>) {
        for file in dir.files() {
            if let Some(path) = file.path().to_str() {
                out.push((path, file.contents()));
            }
        }
        for sub in dir.dirs() {
            walk(sub, out);
        }
    }
    let mut files = Vec::new();
    walk(&DIST, &mut files);
    files
}

async fn index() -> Response {
    match DIST.get_file("index.html") {
        Some(file) => respond(file.contents(), "text/html; charset=utf-8", "no-cache"),
        None => (
            StatusCode::NOT_FOUND,
            "the console was not built into this binary",
        )
            .into_response(),
    }
}

async fn asset(Path(file): Path<String>) -> Response {
    // One path segment (axum never matches `/` inside `{file}`); no `..`.
    if file.contains("..") {
        return StatusCode::NOT_FOUND.into_response();
    }
    match DIST.get_file(format!("assets/{file}")) {
        Some(found) => respond(
            found.contents(),
            content_type(&file),
            "public, max-age=31536000, immutable",
        ),
        None => StatusCode::NOT_FOUND.into_response(),
    }
}

fn respond(body: &'static [u8], content_type: &'static str, cache: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::REFERRER_POLICY,
        HeaderValue::from_static("no-referrer"),
    );
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}

fn content_type(file: &str) -> &'static str {
    match file.rsplit('.').next() {
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("woff2") => "font/woff2",
        _ => "application/octet-stream",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::body::Body;
    use axum::http::Request;
    use http_body_util::BodyExt;
    use std::io::Write;
    use tower::ServiceExt;

    async fn get_path(path: &str) -> (StatusCode, axum::http::HeaderMap, Vec<u8>) {
        let app: Router = router();
        let response = app
            .oneshot(Request::get(path).body(Body::empty()).unwrap())
            .await
            .unwrap();
        let status = response.status();
        let headers = response.headers().clone();
        let body = response.into_body().collect().await.unwrap().to_bytes();
        (status, headers, body.to_vec())
    }

    #[tokio::test]
    async fn the_page_names_only_assets_the_binary_serves() {
        let (status, headers, body) = get_path("/").await;
        assert_eq!(status, StatusCode::OK);
        assert!(
            headers[header::CONTENT_SECURITY_POLICY]
                .to_str()
                .unwrap()
                .contains("script-src 'self'")
        );
        let page = String::from_utf8(body).unwrap();
        let assets: Vec<&str> = page
            .split('"')
            .filter(|part| part.starts_with("/assets/"))
            .collect();
        assert!(!assets.is_empty(), "index.html names no asset: {page}");
        for asset in assets {
            let (status, headers, body) = get_path(asset).await;
            assert_eq!(status, StatusCode::OK, "{asset}");
            assert!(!body.is_empty(), "{asset}");
            assert!(
                headers[header::CACHE_CONTROL]
                    .to_str()
                    .unwrap()
                    .contains("immutable")
            );
        }
    }

    #[tokio::test]
    async fn unknown_and_traversing_asset_paths_are_not_found() {
        for path in [
            "/assets/nope.js",
            "/assets/..%2Findex.html",
            "/assets/..",
            "/assets/a/b.js",
        ] {
            let (status, _, _) = get_path(path).await;
            assert_eq!(status, StatusCode::NOT_FOUND, "{path}");
        }
    }

    #[test]
    fn shipped_javascript_and_css_fit_the_400_kb_gzip_budget() {
        let gzipped: usize = shipped_files()
            .into_iter()
            .filter(|(path, _)| path.ends_with(".js") || path.ends_with(".css"))
            .map(|(_, contents)| gzip_len(contents))
            .sum();
        assert!(gzipped > 10_000, "nothing shipped? {gzipped} bytes");
        assert!(
            gzipped < 400 * 1024,
            "shipped JS+CSS is {gzipped} bytes gzipped"
        );
    }

    /// What the system's `gzip -9` makes of the input, in bytes.
    fn gzip_len(input: &'static [u8]) -> usize {
        let mut child = std::process::Command::new("gzip")
            .arg("-9c")
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut stdin = child.stdin.take().unwrap();
        let writer = std::thread::spawn(move || stdin.write_all(input));
        let output = child.wait_with_output().unwrap();
        writer.join().unwrap().unwrap();
        output.stdout.len()
    }
}
