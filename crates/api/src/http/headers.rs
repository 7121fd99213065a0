//! Headers every answer of the server carries, the API's and the console's
//! alike, whatever produced it (a handler, an error, a fallback, the
//! connection gate).

use axum::http::{HeaderValue, Response, header};

/// Adds `X-Content-Type-Options: nosniff`: a browser treats the body as the
/// type the server named and never guesses one (a file read back as
/// `text/plain` or JSON carrying markup is not run as HTML or script).
pub(super) fn harden<B>(mut response: Response<B>) -> Response<B> {
    response.headers_mut().insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// [`harden`] as the router's last layer (`axum::middleware::map_response`).
pub(super) async fn layer(response: axum::response::Response) -> axum::response::Response {
    harden(response)
}
