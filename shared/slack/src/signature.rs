//! Verifying Slack's request signatures
//! (<https://api.slack.com/authentication/verifying-requests-from-slack>).
//!
//! Slack signs `v0:{X-Slack-Request-Timestamp}:{raw body}` with HMAC-SHA256
//! and the app's signing secret, and sends `v0=` and the lowercase hex digest
//! in `X-Slack-Signature`. We check it over the exact bytes received, before
//! anything parses them, compare in constant time, and refuse timestamps more
//! than five minutes away from our clock in either direction, so a captured
//! request cannot be replayed later.
//!
//! The clock is a parameter (`now_unix`) so tests pin it.

use hmac::{Hmac, KeyInit, Mac};
use sha2::Sha256;
use std::fmt;

/// Header carrying `v0=<hex>`.
pub const SIGNATURE_HEADER: &str = "x-slack-signature";
/// Header carrying the Unix time (seconds) at which Slack signed.
pub const TIMESTAMP_HEADER: &str = "x-slack-request-timestamp";
/// Largest accepted distance between the request's timestamp and our clock.
pub const MAX_SKEW_SECS: i64 = 300;

const VERSION_PREFIX: &[u8] = b"v0=";
const DIGEST_HEX_LEN: usize = 64;
/// Unix seconds fit in 11 digits until the year 5138; more is not a timestamp.
const MAX_TIMESTAMP_DIGITS: usize = 11;

type HmacSha256 = Hmac<Sha256>;

/// The app's signing secret. Its `Debug` never prints it.
#[derive(Clone)]
pub struct SigningSecret(Vec<u8>);

impl SigningSecret {
    /// An empty secret would make every signature forgeable, so it is refused.
    pub fn new(secret: impl Into<String>) -> Result<Self, EmptySecret> {
        let secret = secret.into();
        if secret.trim().is_empty() {
            return Err(EmptySecret);
        }
        Ok(Self(secret.into_bytes()))
    }

    fn mac(&self, timestamp: &[u8], body: &[u8]) -> HmacSha256 {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC accepts keys of any length");
        mac.update(b"v0:");
        mac.update(timestamp);
        mac.update(b":");
        mac.update(body);
        mac
    }

    /// A key for another purpose of the same deployment, derived from the
    /// secret (HMAC-SHA256 of `purpose` under it): what it keys cannot
    /// forge a Slack signature, and the secret never leaves this type.
    pub fn derive_key(&self, purpose: &[u8]) -> [u8; 32] {
        let mut mac = HmacSha256::new_from_slice(&self.0).expect("HMAC accepts keys of any length");
        mac.update(purpose);
        mac.finalize().into_bytes().into()
    }

    /// The `X-Slack-Signature` value Slack would send for this request. Used
    /// by tests and by the local runner to sign the requests it makes up.
    pub fn sign(&self, timestamp: i64, body: &[u8]) -> String {
        let digest = self.mac(timestamp.to_string().as_bytes(), body).finalize().into_bytes();
        format!("v0={}", hex::encode(digest))
    }

    /// Checks a request's signature headers against its raw body.
    ///
    /// `timestamp` and `signature` are the raw header values, `None` when the
    /// header is absent.
    pub fn verify(
        &self,
        timestamp: Option<&[u8]>,
        signature: Option<&[u8]>,
        body: &[u8],
        now_unix: i64,
    ) -> Result<(), SignatureError> {
        let timestamp = timestamp.filter(|t| !t.is_empty()).ok_or(SignatureError::MissingTimestamp)?;
        let signature = signature.filter(|s| !s.is_empty()).ok_or(SignatureError::MissingSignature)?;

        let signed_at = parse_timestamp(timestamp)?;
        let skew = now_unix.saturating_sub(signed_at);
        if skew.unsigned_abs() > MAX_SKEW_SECS.unsigned_abs() {
            return Err(SignatureError::OutsideWindow { skew_secs: skew });
        }

        let digest_hex = signature.strip_prefix(VERSION_PREFIX).ok_or(SignatureError::UnsupportedVersion)?;
        // Slack sends exactly 64 lowercase hex digits. Anything else (upper
        // case, truncated, trailing bytes) is not a signature Slack made.
        if digest_hex.len() != DIGEST_HEX_LEN || !digest_hex.iter().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')) {
            return Err(SignatureError::MalformedSignature);
        }
        let digest = hex::decode(digest_hex).map_err(|_| SignatureError::MalformedSignature)?;

        // `verify_slice` compares in constant time.
        self.mac(timestamp, body).verify_slice(&digest).map_err(|_| SignatureError::Mismatch)
    }
}

impl fmt::Debug for SigningSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SigningSecret(<redacted>)")
    }
}

/// Only ASCII digits: no sign, no padding, no fraction.
fn parse_timestamp(raw: &[u8]) -> Result<i64, SignatureError> {
    if raw.len() > MAX_TIMESTAMP_DIGITS || !raw.iter().all(u8::is_ascii_digit) {
        return Err(SignatureError::MalformedTimestamp);
    }
    std::str::from_utf8(raw).ok().and_then(|s| s.parse().ok()).ok_or(SignatureError::MalformedTimestamp)
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the Slack signing secret is empty")]
pub struct EmptySecret;

/// Why a request was refused. None of these say anything about the secret.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SignatureError {
    #[error("missing X-Slack-Request-Timestamp header")]
    MissingTimestamp,
    #[error("missing X-Slack-Signature header")]
    MissingSignature,
    #[error("X-Slack-Request-Timestamp is not a Unix time in seconds")]
    MalformedTimestamp,
    #[error("request timestamp is {skew_secs} s away from our clock (limit {MAX_SKEW_SECS} s)")]
    OutsideWindow { skew_secs: i64 },
    #[error("X-Slack-Signature does not start with v0=")]
    UnsupportedVersion,
    #[error("X-Slack-Signature is not 64 lowercase hex digits")]
    MalformedSignature,
    #[error("signature does not match the body")]
    Mismatch,
}

#[cfg(test)]
mod tests {
    use super::*;

    // Slack's documented example
    // (https://api.slack.com/authentication/verifying-requests-from-slack).
    const DOC_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
    const DOC_TIMESTAMP: i64 = 1531420618;
    const DOC_SIGNATURE: &str = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
    const DOC_BODY: &str = "token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";

    fn doc_secret() -> SigningSecret {
        SigningSecret::new(DOC_SECRET).unwrap()
    }

    fn verify_doc(timestamp: &str, signature: &str, body: &str) -> Result<(), SignatureError> {
        doc_secret().verify(Some(timestamp.as_bytes()), Some(signature.as_bytes()), body.as_bytes(), DOC_TIMESTAMP)
    }

    #[test]
    fn slacks_documented_example_verifies() {
        assert_eq!(verify_doc("1531420618", DOC_SIGNATURE, DOC_BODY), Ok(()));
    }

    #[test]
    fn signing_reproduces_slacks_documented_signature() {
        assert_eq!(doc_secret().sign(DOC_TIMESTAMP, DOC_BODY.as_bytes()), DOC_SIGNATURE);
    }

    #[test]
    fn own_vectors_round_trip_and_bind_secret_timestamp_and_body() {
        let secret = SigningSecret::new("another-secret").unwrap();
        let body = br#"{"type":"event_callback"}"#;
        let signature = secret.sign(1_700_000_000, body);
        let ok = secret.verify(Some(b"1700000000"), Some(signature.as_bytes()), body, 1_700_000_010);
        assert_eq!(ok, Ok(()));
        // The same signature with another secret, timestamp or body fails.
        let wrong_secret = doc_secret().verify(Some(b"1700000000"), Some(signature.as_bytes()), body, 1_700_000_000);
        assert_eq!(wrong_secret, Err(SignatureError::Mismatch));
        let wrong_time = secret.verify(Some(b"1700000001"), Some(signature.as_bytes()), body, 1_700_000_000);
        assert_eq!(wrong_time, Err(SignatureError::Mismatch));
        let empty_body = secret.verify(Some(b"1700000000"), Some(signature.as_bytes()), b"", 1_700_000_000);
        assert_eq!(empty_body, Err(SignatureError::Mismatch));
    }

    #[test]
    fn missing_or_empty_headers_are_refused() {
        let secret = doc_secret();
        let body = DOC_BODY.as_bytes();
        let sig = Some(DOC_SIGNATURE.as_bytes());
        assert_eq!(secret.verify(None, sig, body, DOC_TIMESTAMP), Err(SignatureError::MissingTimestamp));
        assert_eq!(secret.verify(Some(b""), sig, body, DOC_TIMESTAMP), Err(SignatureError::MissingTimestamp));
        let ts = Some(b"1531420618".as_slice());
        assert_eq!(secret.verify(ts, None, body, DOC_TIMESTAMP), Err(SignatureError::MissingSignature));
        assert_eq!(secret.verify(ts, Some(b""), body, DOC_TIMESTAMP), Err(SignatureError::MissingSignature));
    }

    #[test]
    fn timestamps_that_are_not_plain_digits_are_refused() {
        for timestamp in [
            "abc",
            " 1531420618",
            "1531420618 ",
            "1531420618\n",
            "+1531420618",
            "-1531420618",
            "1531420618.0",
            "0x5b47a8ca",
            "99999999999999999999",
        ] {
            assert_eq!(
                verify_doc(timestamp, DOC_SIGNATURE, DOC_BODY),
                Err(SignatureError::MalformedTimestamp),
                "timestamp {timestamp:?}"
            );
        }
    }

    #[test]
    fn the_window_is_five_minutes_either_way() {
        let secret = doc_secret();
        let check =
            |now: i64| secret.verify(Some(b"1531420618"), Some(DOC_SIGNATURE.as_bytes()), DOC_BODY.as_bytes(), now);
        assert_eq!(check(DOC_TIMESTAMP + 300), Ok(()));
        assert_eq!(check(DOC_TIMESTAMP - 300), Ok(()));
        assert_eq!(check(DOC_TIMESTAMP + 301), Err(SignatureError::OutsideWindow { skew_secs: 301 }));
        assert_eq!(check(DOC_TIMESTAMP - 301), Err(SignatureError::OutsideWindow { skew_secs: -301 }));
    }

    #[test]
    fn signatures_not_exactly_as_slack_writes_them_are_refused() {
        let digest = DOC_SIGNATURE.strip_prefix("v0=").unwrap();
        let cases = [
            (format!("v1={digest}"), SignatureError::UnsupportedVersion),
            (digest.to_owned(), SignatureError::UnsupportedVersion),
            (format!("V0={digest}"), SignatureError::UnsupportedVersion),
            (format!("v0={}", digest.to_uppercase()), SignatureError::MalformedSignature),
            (format!("v0={}", &digest[..63]), SignatureError::MalformedSignature),
            (format!("v0={}", &digest[..32]), SignatureError::MalformedSignature),
            (format!("v0={digest}0"), SignatureError::MalformedSignature),
            (format!("v0={digest} "), SignatureError::MalformedSignature),
            (format!("v0={digest},v0={digest}"), SignatureError::MalformedSignature),
            (format!("v0={}g", &digest[..63]), SignatureError::MalformedSignature),
            ("v0=".to_owned(), SignatureError::MalformedSignature),
        ];
        for (signature, expected) in cases {
            assert_eq!(verify_doc("1531420618", &signature, DOC_BODY), Err(expected), "signature {signature:?}");
        }
    }

    #[test]
    fn modified_bodies_are_refused() {
        let cases = [
            DOC_BODY.replace("text=", "text=rm+-rf"),
            format!("{DOC_BODY}&extra=1"),
            format!("{DOC_BODY}\n"),
            DOC_BODY[1..].to_owned(),
            String::new(),
        ];
        for body in cases {
            assert_eq!(verify_doc("1531420618", DOC_SIGNATURE, &body), Err(SignatureError::Mismatch));
        }
        // One flipped bit in the signature.
        let mut flipped = DOC_SIGNATURE.to_owned();
        flipped.replace_range(10..11, "0");
        assert_ne!(flipped, DOC_SIGNATURE);
        assert_eq!(verify_doc("1531420618", &flipped, DOC_BODY), Err(SignatureError::Mismatch));
    }

    #[test]
    fn the_secret_never_shows_in_debug_or_errors() {
        let secret = doc_secret();
        assert!(!format!("{secret:?}").contains(DOC_SECRET));
        assert!(!format!("{:?}", Config { secret: secret.clone() }).contains(DOC_SECRET));
        for err in [
            verify_doc("1531420618", "v0=", DOC_BODY).unwrap_err(),
            verify_doc("1", DOC_SIGNATURE, DOC_BODY).unwrap_err(),
        ] {
            assert!(!err.to_string().contains(DOC_SECRET));
        }

        #[derive(Debug)]
        #[allow(dead_code)]
        struct Config {
            secret: SigningSecret,
        }
    }

    #[test]
    fn an_empty_secret_is_refused() {
        assert_eq!(SigningSecret::new("").unwrap_err(), EmptySecret);
        assert_eq!(SigningSecret::new("  \n").unwrap_err(), EmptySecret);
    }
}
