//! The Connect protocol (connectrpc.com/docs/protocol) as envd speaks it to
//! E2B's SDKs: unary calls (`application/json` or `application/proto`),
//! server streams and client streams (`application/connect+json` or
//! `+proto`, each message in an envelope: a flags byte, a big-endian u32
//! length, the message; a stream's answer ends with an end-of-stream
//! envelope, flag 0x02, carrying the error if any). Envelopes are cut by
//! tokio-util's length-delimited codec; messages are prost's (binary) or
//! serde's proto3 JSON. No compression is offered or accepted.

use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::{Stream, StreamExt, TryStreamExt};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio_util::codec::{FramedRead, LengthDelimitedCodec};
use tokio_util::io::StreamReader;

use crate::service::ServiceError;

/// The largest message accepted in a request (a file's bytes go by
/// `/files`, not here).
pub const MAX_MESSAGE: usize = 4 << 20;
/// Flag of a compressed envelope (refused) and of the end of a stream.
const FLAG_COMPRESSED: u8 = 0x01;
const FLAG_END_STREAM: u8 = 0x02;

/// How a call's messages are encoded.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    Json,
    Proto,
}

/// What a request's `Content-Type` says of the call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallShape {
    pub codec: Codec,
    pub streaming: bool,
}

impl CallShape {
    pub fn of(headers: &HeaderMap) -> Result<Self, ConnectError> {
        let content_type = headers
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default();
        let essence = content_type
            .split(';')
            .next()
            .unwrap_or_default()
            .trim()
            .to_ascii_lowercase();
        let (codec, streaming) = match essence.as_str() {
            "application/json" => (Codec::Json, false),
            "application/proto" => (Codec::Proto, false),
            "application/connect+json" => (Codec::Json, true),
            "application/connect+proto" => (Codec::Proto, true),
            other => {
                return Err(ConnectError::new(
                    Code::InvalidArgument,
                    format!(
                        "content type {other:?}: expected application/json, application/proto or their connect+ stream forms"
                    ),
                ));
            }
        };
        if let Some(encoding) = headers
            .get("content-encoding")
            .or_else(|| headers.get("connect-content-encoding"))
            .and_then(|v| v.to_str().ok())
            && !encoding.eq_ignore_ascii_case("identity")
        {
            return Err(ConnectError::new(
                Code::Unimplemented,
                format!("content encoding {encoding:?}: only identity is served"),
            ));
        }
        Ok(Self { codec, streaming })
    }

    fn content_type(self) -> &'static str {
        match (self.codec, self.streaming) {
            (Codec::Json, false) => "application/json",
            (Codec::Proto, false) => "application/proto",
            (Codec::Json, true) => "application/connect+json",
            (Codec::Proto, true) => "application/connect+proto",
        }
    }
}

/// The deadline a call carries in `Connect-Timeout-Ms`, if any.
pub fn deadline(headers: &HeaderMap) -> Option<Duration> {
    headers
        .get("connect-timeout-ms")
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_millis)
}

/// Connect's error codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Code {
    InvalidArgument,
    DeadlineExceeded,
    NotFound,
    AlreadyExists,
    PermissionDenied,
    ResourceExhausted,
    FailedPrecondition,
    Unimplemented,
    Internal,
    Unavailable,
    Unauthenticated,
}

impl Code {
    pub fn as_str(self) -> &'static str {
        match self {
            Code::InvalidArgument => "invalid_argument",
            Code::DeadlineExceeded => "deadline_exceeded",
            Code::NotFound => "not_found",
            Code::AlreadyExists => "already_exists",
            Code::PermissionDenied => "permission_denied",
            Code::ResourceExhausted => "resource_exhausted",
            Code::FailedPrecondition => "failed_precondition",
            Code::Unimplemented => "unimplemented",
            Code::Internal => "internal",
            Code::Unavailable => "unavailable",
            Code::Unauthenticated => "unauthenticated",
        }
    }

    /// The HTTP status of a unary error with this code.
    fn status(self) -> StatusCode {
        match self {
            Code::Internal => StatusCode::INTERNAL_SERVER_ERROR,
            Code::InvalidArgument | Code::FailedPrecondition => StatusCode::BAD_REQUEST,
            Code::DeadlineExceeded => StatusCode::GATEWAY_TIMEOUT,
            Code::NotFound => StatusCode::NOT_FOUND,
            Code::AlreadyExists => StatusCode::CONFLICT,
            Code::PermissionDenied => StatusCode::FORBIDDEN,
            Code::ResourceExhausted => StatusCode::TOO_MANY_REQUESTS,
            Code::Unimplemented => StatusCode::NOT_IMPLEMENTED,
            Code::Unavailable => StatusCode::SERVICE_UNAVAILABLE,
            Code::Unauthenticated => StatusCode::UNAUTHORIZED,
        }
    }

    /// The code of an HTTP API error's status and stable code.
    fn of_api(status: StatusCode, code: &str) -> Self {
        match (status.as_u16(), code) {
            (_, "already_exists") => Code::AlreadyExists,
            (_, "not_found" | "file_not_found") => Code::NotFound,
            (400 | 413 | 422, _) => Code::InvalidArgument,
            (401, _) => Code::Unauthenticated,
            (403, _) => Code::PermissionDenied,
            (404, _) => Code::NotFound,
            (409, _) => Code::FailedPrecondition,
            (429, _) => Code::ResourceExhausted,
            (503, _) => Code::Unavailable,
            (504, _) => Code::DeadlineExceeded,
            _ => Code::Internal,
        }
    }
}

/// An error of a Connect call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectError {
    pub code: Code,
    pub message: String,
}

#[derive(Serialize)]
struct ErrorJson<'a> {
    code: &'static str,
    message: &'a str,
}

impl ConnectError {
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Self {
            code,
            message: message.into(),
        }
    }

    fn json(&self) -> ErrorJson<'_> {
        ErrorJson {
            code: self.code.as_str(),
            message: &self.message,
        }
    }
}

/// A sandbox that is gone is `unavailable` with the words of E2B's proxy,
/// so the SDK says it is not running (rather than naming a missing file).
impl From<ServiceError> for ConnectError {
    fn from(err: ServiceError) -> Self {
        match &err {
            ServiceError::NotFound {
                entity: "sandbox",
                id,
            } => Self::new(Code::Unavailable, format!("The sandbox {id} was not found")),
            ServiceError::NotRunning { id, state } => Self::new(
                Code::Unavailable,
                format!("The sandbox {id} was not found: it is {state}"),
            ),
            _ => crate::http::ApiError::from(err).into(),
        }
    }
}

impl From<crate::http::ApiError> for ConnectError {
    fn from(err: crate::http::ApiError) -> Self {
        Self::new(Code::of_api(err.status, err.code), err.message)
    }
}

impl From<super::super::error::E2bError> for ConnectError {
    fn from(err: super::super::error::E2bError) -> Self {
        Self::new(Code::of_api(err.status, ""), err.message)
    }
}

impl IntoResponse for ConnectError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&self.json()).unwrap_or_default();
        (
            self.code.status(),
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            )],
            body,
        )
            .into_response()
    }
}

/// A message of either codec.
pub trait Message: prost::Message + Default + Serialize + DeserializeOwned + 'static {}
impl<T: prost::Message + Default + Serialize + DeserializeOwned + 'static> Message for T {}

pub fn decode<T: Message>(codec: Codec, bytes: &[u8]) -> Result<T, ConnectError> {
    let invalid =
        |e: String| ConnectError::new(Code::InvalidArgument, format!("the request message: {e}"));
    match codec {
        Codec::Json if bytes.is_empty() => Ok(T::default()),
        Codec::Json => serde_json::from_slice(bytes).map_err(|e| invalid(e.to_string())),
        Codec::Proto => T::decode(bytes).map_err(|e| invalid(e.to_string())),
    }
}

pub fn encode<T: Message>(codec: Codec, message: &T) -> Vec<u8> {
    match codec {
        Codec::Json => serde_json::to_vec(message).unwrap_or_else(|_| b"{}".to_vec()),
        Codec::Proto => message.encode_to_vec(),
    }
}

/// The envelope of one message of a stream.
fn envelope(flags: u8, payload: &[u8]) -> Bytes {
    let mut out = Vec::with_capacity(5 + payload.len());
    out.push(flags);
    out.extend_from_slice(
        &u32::try_from(payload.len())
            .unwrap_or(u32::MAX)
            .to_be_bytes(),
    );
    out.extend_from_slice(payload);
    Bytes::from(out)
}

/// The envelopes of a request body, as they arrive.
pub fn request_envelopes(
    body: Body,
) -> impl Stream<Item = Result<Bytes, ConnectError>> + Send + Unpin + 'static {
    let reader = StreamReader::new(
        body.into_data_stream()
            .map_err(|e| std::io::Error::other(e.to_string())),
    );
    let codec = LengthDelimitedCodec::builder()
        .length_field_offset(1)
        .length_field_length(4)
        .length_adjustment(5)
        .num_skip(0)
        .max_frame_length(MAX_MESSAGE + 5)
        .big_endian()
        .new_codec();
    FramedRead::new(reader, codec).map(|frame| {
        let frame = frame.map_err(|e| {
            ConnectError::new(Code::InvalidArgument, format!("a request envelope: {e}"))
        })?;
        match frame.first().copied() {
            Some(flags) if flags & FLAG_COMPRESSED != 0 => Err(ConnectError::new(
                Code::Unimplemented,
                "a compressed envelope: only identity is served",
            )),
            _ => Ok(frame.freeze().slice(5..)),
        }
    })
}

/// Reads the one message of a unary call or a server stream's request.
pub async fn single_request<T: Message>(shape: CallShape, body: Body) -> Result<T, ConnectError> {
    if !shape.streaming {
        let bytes = axum::body::to_bytes(body, MAX_MESSAGE).await.map_err(|e| {
            ConnectError::new(Code::InvalidArgument, format!("the request body: {e}"))
        })?;
        return decode(shape.codec, &bytes);
    }
    let mut envelopes = request_envelopes(body);
    match envelopes.next().await {
        Some(payload) => decode(shape.codec, &payload?),
        None => Err(ConnectError::new(
            Code::InvalidArgument,
            "the stream carried no request message",
        )),
    }
}

/// The answer of a unary call.
pub fn unary<T: Message>(shape: CallShape, result: Result<T, ConnectError>) -> Response {
    match result {
        Ok(message) => (
            [(
                header::CONTENT_TYPE,
                HeaderValue::from_static(shape.content_type()),
            )],
            encode(shape.codec, &message),
        )
            .into_response(),
        Err(err) => err.into_response(),
    }
}

#[derive(Serialize)]
struct EndStream<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<ErrorJson<'a>>,
}

/// The answer of a streaming call: each message in an envelope as it
/// comes, then the end of the stream with the error that ended it, if any.
pub fn streaming<T, S>(shape: CallShape, messages: S) -> Response
where
    T: Message,
    S: Stream<Item = Result<T, ConnectError>> + Send + 'static,
{
    let codec = shape.codec;
    let body = async_stream_of(messages, move |item| match item {
        Ok(message) => (envelope(0, &encode(codec, &message)), false),
        Err(err) => {
            let end = EndStream {
                error: Some(err.json()),
            };
            let json = serde_json::to_vec(&end).unwrap_or_default();
            (envelope(FLAG_END_STREAM, &json), true)
        }
    });
    (
        [(
            header::CONTENT_TYPE,
            HeaderValue::from_static(shape.content_type()),
        )],
        Body::from_stream(body),
    )
        .into_response()
}

/// `messages` framed by `frame` (which says when a frame ends the stream),
/// closed with a clean end frame when the messages end without an error.
fn async_stream_of<T, S>(
    messages: S,
    frame: impl Fn(T) -> (Bytes, bool) + Send + 'static,
) -> impl Stream<Item = Result<Bytes, std::io::Error>> + Send + 'static
where
    T: Send + 'static,
    S: Stream<Item = T> + Send + 'static,
{
    let clean_end = || {
        let json = serde_json::to_vec(&EndStream { error: None }).unwrap_or_default();
        envelope(FLAG_END_STREAM, &json)
    };
    let messages = Box::pin(messages);
    futures_util::stream::unfold(Some((messages, frame)), move |state| async move {
        let (mut messages, frame) = state?;
        match messages.next().await {
            Some(item) => {
                let (bytes, ended) = frame(item);
                Some((Ok(bytes), (!ended).then_some((messages, frame))))
            }
            None => Some((Ok(clean_end()), None)),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_envelope_is_flags_length_and_payload() {
        assert_eq!(&envelope(2, b"{}")[..], b"\x02\x00\x00\x00\x02{}");
    }

    #[tokio::test]
    async fn request_envelopes_are_cut_at_their_lengths_across_chunks() {
        let mut wire = envelope(0, b"{\"a\":1}").to_vec();
        wire.extend_from_slice(&envelope(0, b"{}"));
        let (first, second) = wire.split_at(3);
        let chunks = vec![
            Ok::<_, std::io::Error>(Bytes::copy_from_slice(first)),
            Ok(Bytes::copy_from_slice(second)),
        ];
        let body = Body::from_stream(futures_util::stream::iter(chunks));
        let got: Vec<_> = request_envelopes(body).collect().await;
        assert_eq!(
            got,
            vec![
                Ok(Bytes::from_static(b"{\"a\":1}")),
                Ok(Bytes::from_static(b"{}"))
            ]
        );
    }

    #[tokio::test]
    async fn a_compressed_envelope_is_refused() {
        let body = Body::from(envelope(FLAG_COMPRESSED, b"x").to_vec());
        let got: Vec<_> = request_envelopes(body).collect().await;
        assert!(matches!(&got[..], [Err(e)] if e.code == Code::Unimplemented));
    }

    #[test]
    fn a_gone_sandbox_is_unavailable_as_the_proxy_says_it() {
        let err = ConnectError::from(ServiceError::NotFound {
            entity: "sandbox",
            id: "sb-1".into(),
        });
        assert_eq!(err.code, Code::Unavailable);
        assert!(err.message.contains("was not found"));
        let err = ConnectError::from(ServiceError::invalid("path", "empty"));
        assert_eq!(err.code, Code::InvalidArgument);
    }
}
