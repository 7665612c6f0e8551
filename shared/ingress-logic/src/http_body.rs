//! Getting the raw bytes Slack signed out of a Lambda HTTP event, whose body
//! is a string that API Gateway and Function URLs may base64-encode.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use std::borrow::Cow;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum BodyError {
    #[error("body is {0} bytes, over the {1} byte limit")]
    TooLarge(usize, usize),
    #[error("body is marked base64 but is not valid base64")]
    NotBase64,
}

/// The body as the bytes that were signed, refusing bodies over `limit`
/// before any decoding work.
pub fn raw_body(body: Option<&str>, is_base64: bool, limit: usize) -> Result<Cow<'_, [u8]>, BodyError> {
    let body = body.unwrap_or_default();
    if !is_base64 {
        return match body.len() {
            len if len > limit => Err(BodyError::TooLarge(len, limit)),
            _ => Ok(Cow::Borrowed(body.as_bytes())),
        };
    }
    let decoded_len = body.len() / 4 * 3;
    if decoded_len > limit + 3 {
        return Err(BodyError::TooLarge(decoded_len, limit));
    }
    let bytes = STANDARD.decode(body).map_err(|_| BodyError::NotBase64)?;
    if bytes.len() > limit {
        return Err(BodyError::TooLarge(bytes.len(), limit));
    }
    Ok(Cow::Owned(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_bodies_are_borrowed_as_is() {
        assert_eq!(&*raw_body(Some("a=1"), false, 10).unwrap(), b"a=1");
        assert_eq!(&*raw_body(None, false, 10).unwrap(), b"");
    }

    #[test]
    fn base64_bodies_are_decoded_to_the_signed_bytes() {
        assert_eq!(&*raw_body(Some("eyJhIjoxfQ=="), true, 10).unwrap(), br#"{"a":1}"#);
        assert_eq!(raw_body(Some("not base64!"), true, 100), Err(BodyError::NotBase64));
    }

    #[test]
    fn bodies_over_the_limit_are_refused_before_and_after_decoding() {
        assert_eq!(raw_body(Some("0123456789x"), false, 10), Err(BodyError::TooLarge(11, 10)));
        let big = STANDARD.encode([7u8; 64]);
        assert!(matches!(raw_body(Some(&big), true, 10), Err(BodyError::TooLarge(..))));
        let edge = STANDARD.encode([7u8; 11]);
        assert_eq!(raw_body(Some(&edge), true, 10), Err(BodyError::TooLarge(11, 10)));
        assert_eq!(raw_body(Some(&edge), true, 11).unwrap().len(), 11);
    }
}
