//! axum's extractors with their rejections turned into [`ApiError`]s, so a
//! malformed request gets the same JSON error shape as everything else.

use axum::body::Bytes;
use axum::extract::rejection::{BytesRejection, JsonRejection, PathRejection, QueryRejection};
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::request::Parts;
use axum::http::{HeaderMap, StatusCode, header};
use paddock_core::sandbox::SandboxId;
use paddock_proto::FsPath;
use serde::de::DeserializeOwned;

use super::ApiError;

/// A JSON object body (`Content-Type: application/json`); unknown fields are
/// refused by the command types themselves. Every request type is an object:
/// serde would also read a struct from an array of its fields (`[]` as "all
/// defaults"), so anything but an object is refused here, as the document says.
#[derive(Debug)]
pub struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        if !has_json_content_type(req.headers()) {
            return Err(unsupported_media_type());
        }
        let bytes = Bytes::from_request(req, state)
            .await
            .map_err(bytes_rejection)?;
        let value = match axum::Json::<T>::from_bytes(&bytes) {
            Ok(axum::Json(value)) => value,
            Err(rejection) => return Err(json_rejection(rejection)),
        };
        if bytes.trim_ascii_start().first() != Some(&b'{') {
            return Err(ApiError::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "invalid_request",
                "request body: expected a JSON object",
            ));
        }
        Ok(ApiJson(value))
    }
}

/// `application/json` or an `application/*+json` type, as axum's `Json` takes.
fn has_json_content_type(headers: &HeaderMap) -> bool {
    let Some(value) = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
    else {
        return false;
    };
    let essence = value.split(';').next().unwrap_or_default().trim();
    let essence = essence.to_ascii_lowercase();
    essence == "application/json"
        || essence
            .strip_prefix("application/")
            .is_some_and(|sub| sub.ends_with("+json"))
}

fn json_rejection(rejection: JsonRejection) -> ApiError {
    match rejection {
        JsonRejection::JsonDataError(e) => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "invalid_request",
            serde_message(&e.body_text()),
        ),
        JsonRejection::JsonSyntaxError(e) => ApiError::new(
            StatusCode::BAD_REQUEST,
            "malformed_json",
            serde_message(&e.body_text()),
        ),
        JsonRejection::MissingJsonContentType(_) => unsupported_media_type(),
        JsonRejection::BytesRejection(e) => bytes_rejection(e),
        other => ApiError::invalid(format!("unreadable request body ({})", other.status())),
    }
}

fn unsupported_media_type() -> ApiError {
    ApiError::new(
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "unsupported_media_type",
        "expected Content-Type: application/json",
    )
}

/// axum prefixes serde's message with its own words; keep serde's part,
/// which names the field and position.
fn serde_message(text: &str) -> String {
    let message = text
        .split_once(": ")
        .map_or(text, |(_, rest)| rest)
        .to_owned();
    format!("request body: {message}")
}

/// The raw request body, bounded by the server's body limit.
#[derive(Debug)]
pub struct RawBody(pub Bytes);

impl<S: Send + Sync> FromRequest<S> for RawBody {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        Bytes::from_request(req, state)
            .await
            .map(RawBody)
            .map_err(bytes_rejection)
    }
}

fn bytes_rejection(rejection: BytesRejection) -> ApiError {
    if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
        ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "payload_too_large",
            "the request body is larger than this server accepts",
        )
    } else {
        ApiError::invalid("the request body could not be read")
    }
}

/// Query parameters; unknown ones are refused by the target types.
#[derive(Debug)]
pub struct ApiQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Query::<T>::from_request_parts(parts, state)
            .await
            .map(|q| ApiQuery(q.0))
            .map_err(|e: QueryRejection| {
                ApiError::invalid(format!("query string: {}", serde_message(&e.body_text())))
            })
    }
}

/// Path parameters.
#[derive(Debug)]
pub struct ApiPath<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiPath<T>
where
    S: Send + Sync,
    T: DeserializeOwned + Send,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, ApiError> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| ApiPath(p.0))
            .map_err(|e: PathRejection| ApiError::invalid(format!("path: {}", e.body_text())))
    }
}

/// The `{id}` and `{*path}` of a files route (`/v1/sandboxes/{id}/files/{*path}`),
/// the path as raw bytes: percent-decoded from the request's own URI, so a
/// name not in UTF-8 (`%FF`) is named exactly, where axum's `Path` refuses
/// one (docs/api.md, "Paths not in UTF-8").
#[derive(Debug)]
pub struct FilesPath {
    pub id: String,
    pub path: FsPath,
}

impl<S: Send + Sync> FromRequestParts<S> for FilesPath {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        // "", "v1", "sandboxes", id, "files", the rest (the router matched it)
        let mut segments = parts.uri.path().splitn(6, '/').skip(3);
        match (segments.next(), segments.next(), segments.next()) {
            (Some(id), Some("files"), Some(rest)) if !rest.is_empty() => Ok(Self {
                id: String::from_utf8(percent_decode(id))
                    .map_err(|_| ApiError::invalid("path: the sandbox id is not UTF-8"))?,
                path: FsPath::from(percent_decode(rest)),
            }),
            _ => Err(ApiError::invalid(
                "path: expected /v1/sandboxes/{id}/files/{path}",
            )),
        }
    }
}

/// The raw value of query parameter `name` (percent-decoded bytes, `+` a
/// space), when given: a path not in UTF-8 in a query string, which serde's
/// form decoding would make lossy.
pub fn raw_query_value(parts_query: Option<&str>, name: &str) -> Option<Vec<u8>> {
    parts_query?.split('&').find_map(|pair| {
        let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
        (key == name).then(|| percent_decode(&value.replace('+', " ")))
    })
}

/// `%XX` escapes decoded to their bytes; a `%` not followed by two hex
/// digits is kept as it is (as browsers and axum do).
pub fn percent_decode(text: &str) -> Vec<u8> {
    fn hex(digit: u8) -> Option<u8> {
        (digit as char)
            .to_digit(16)
            .and_then(|d| u8::try_from(d).ok())
    }
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        if bytes[at] == b'%'
            && let (Some(high), Some(low)) = (
                bytes.get(at + 1).copied().and_then(hex),
                bytes.get(at + 2).copied().and_then(hex),
            )
        {
            out.push((high << 4) | low);
            at += 3;
        } else {
            out.push(bytes[at]);
            at += 1;
        }
    }
    out
}

/// A sandbox id from the path; malformed ids are a 400, not a 404.
pub fn sandbox_id(raw: &str) -> Result<SandboxId, ApiError> {
    SandboxId::parse(raw)
        .map_err(|e| ApiError::new(StatusCode::BAD_REQUEST, "invalid_id", e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percent_escapes_decode_to_any_bytes() {
        assert_eq!(percent_decode("old%FF"), b"old\xff");
        assert_eq!(percent_decode("d%fe/x%2Fy"), b"d\xfe/x/y");
        assert_eq!(percent_decode("%C3%A9t%C3%A9"), "été".as_bytes());
        // a `%` without two hex digits stays as it is
        assert_eq!(percent_decode("100%"), b"100%");
        assert_eq!(percent_decode("%zz%4"), b"%zz%4");
    }

    #[test]
    fn a_query_value_is_read_as_bytes() {
        let query = Some("x=1&dir=d%FE%2Fsub+dir&y");
        assert_eq!(
            raw_query_value(query, "dir").as_deref(),
            Some(&b"d\xfe/sub dir"[..])
        );
        assert_eq!(raw_query_value(query, "y").as_deref(), Some(&b""[..]));
        assert_eq!(raw_query_value(query, "z"), None);
        assert_eq!(raw_query_value(None, "dir"), None);
    }
}
