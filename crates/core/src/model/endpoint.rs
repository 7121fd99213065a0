//! Base URLs of the HTTP model providers, however they are written: with
//! or without their API version (`http://host:8000` or
//! `http://host:8000/v1`) and trailing slashes.

/// `base` without trailing slashes and without a final `/v1`.
pub fn api_root(base: &str) -> &str {
    let base = base.trim_end_matches('/');
    base.strip_suffix("/v1").unwrap_or(base)
}

/// `a` and `b` name the same API, however each is written.
pub fn same_api(a: &str, b: &str) -> bool {
    api_root(a) == api_root(b)
}
