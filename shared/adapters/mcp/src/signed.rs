//! An MCP server behind AWS IAM (`"auth": "aws_iam"`: Amazon Bedrock
//! AgentCore Gateway, an API Gateway or a Lambda function URL in front of
//! a server): rmcp's own Streamable HTTP client on the process's reqwest,
//! with each request's SigV4 headers computed first and handed to it as
//! custom headers.
//!
//! The signature covers the method, URL, the custom headers (the
//! configuration's and `MCP-Protocol-Version`) and the body: the JSON-RPC
//! message as `serde_json::to_vec` writes it, which is what reqwest's
//! `.json()` sends. Headers rmcp adds itself (`accept`, `content-type`,
//! `mcp-session-id`) are sent unsigned, which SigV4 allows.

use assistant_core::ports::{AwsScope, RequestSigner, UnsignedRequest};
use futures_util::stream::BoxStream;
use http::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse, StreamableHttpResponseLimits,
};
use sse_stream::Sse;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

type Error = StreamableHttpError<reqwest::Error>;

#[derive(Clone)]
pub struct SignedHttp {
    pub http: reqwest::Client,
    pub signer: Arc<dyn RequestSigner>,
    pub scope: AwsScope,
}

impl SignedHttp {
    /// `headers` with the signature of a request carrying them and `body`.
    async fn signed(
        &self,
        method: &str,
        uri: &str,
        mut headers: HashMap<HeaderName, HeaderValue>,
        body: &[u8],
    ) -> Result<HashMap<HeaderName, HeaderValue>, Error> {
        let listed: Vec<(String, String)> = headers
            .iter()
            .filter_map(|(name, value)| Some((name.as_str().to_owned(), value.to_str().ok()?.to_owned())))
            .collect();
        let unsigned = UnsignedRequest { method, url: uri, headers: &listed, body };
        let refused = |reason: String| StreamableHttpError::UnexpectedServerResponse(Cow::Owned(reason));
        let signature =
            self.signer.sign(unsigned, &self.scope).await.map_err(|err| refused(format!("cannot sign: {err}")))?;
        for (name, value) in signature {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|err| refused(err.to_string()))?;
            let mut value = HeaderValue::from_str(&value).map_err(|err| refused(err.to_string()))?;
            value.set_sensitive(true);
            headers.insert(name, value);
        }
        Ok(headers)
    }
}

impl StreamableHttpClient for SignedHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let limits = StreamableHttpResponseLimits::default();
        self.post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits).await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let mut limits = StreamableHttpResponseLimits::default();
        limits.max_sse_event_size = max_sse_event_size;
        self.post_message_with_response_limits(uri, message, session_id, auth_header, custom_headers, limits).await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, Error> {
        let body = serde_json::to_vec(&message)?;
        let headers = self.signed("POST", &uri, custom_headers, &body).await?;
        self.http.post_message_with_response_limits(uri, message, session_id, auth_header, headers, limits).await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), Error> {
        let headers = self.signed("DELETE", &uri, custom_headers, b"").await?;
        self.http.delete_session(uri, session_id, auth_header, headers).await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        let headers = self.signed("GET", &uri, custom_headers, b"").await?;
        self.http.get_stream(uri, session_id, last_event_id, auth_header, headers).await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<BoxStream<'static, Result<Sse, SseError>>, Error> {
        let headers = self.signed("GET", &uri, custom_headers, b"").await?;
        self.http
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                headers,
                max_sse_event_size,
            )
            .await
    }
}
