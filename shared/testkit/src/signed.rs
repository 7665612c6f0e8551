//! A request signed as Slack signs it (`v0=` HMAC-SHA256 over
//! `v0:{timestamp}:{body}`), for tests, the benchmark and the local runner.

use http::{HeaderMap, HeaderValue};
use slack::SigningSecret;
use slack::signature::{SIGNATURE_HEADER, TIMESTAMP_HEADER};

/// Slack's two signing headers for `body`, signed with `secret` at
/// `signed_at` (Unix seconds), plus the content type.
pub fn headers(secret: &str, signed_at: i64, body: &str, content_type: &'static str) -> HeaderMap {
    let mut headers = HeaderMap::new();
    headers.insert(TIMESTAMP_HEADER, HeaderValue::from(signed_at));
    headers.insert(SIGNATURE_HEADER, HeaderValue::from_str(&signature(secret, signed_at, body)).expect("hex"));
    headers.insert(http::header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers
}

/// The `X-Slack-Signature` value for `body`.
pub fn signature(secret: &str, signed_at: i64, body: &str) -> String {
    SigningSecret::new(secret).expect("a non-empty signing secret").sign(signed_at, body.as_bytes())
}
