//! Signing requests as the process's AWS identity (SigV4;
//! `shared/adapters/sigv4`), for the team's APIs behind IAM auth.

use super::PortError;
use async_trait::async_trait;

/// Where a SigV4-signed request goes: AWS's signing name for the service
/// (`execute-api`, `lambda`, `bedrock-agentcore`) and its region (the
/// process's when `None`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwsScope {
    pub service: String,
    #[serde(default)]
    pub region: Option<String>,
}

/// A request to sign, exactly as it will be sent: every header given is
/// signed (and must then be sent unchanged); headers added later are not.
#[derive(Debug, Clone, Copy)]
pub struct UnsignedRequest<'a> {
    pub method: &'a str,
    pub url: &'a str,
    pub headers: &'a [(String, String)],
    pub body: &'a [u8],
}

/// Signs requests as the process's AWS identity (SigV4): the team's APIs
/// behind IAM auth (API Gateway, Lambda function URLs, AgentCore Gateway).
/// One signer for the process: the same credentials the AWS clients use.
#[async_trait]
pub trait RequestSigner: Send + Sync {
    /// The headers to add: `authorization`, `x-amz-date`, and
    /// `x-amz-security-token` with temporary credentials.
    async fn sign(&self, request: UnsignedRequest<'_>, scope: &AwsScope) -> Result<Vec<(String, String)>, PortError>;
}

/// A deployment that signs nothing: an `aws_iam` tool's calls fail.
pub struct NoSigner;

#[async_trait]
impl RequestSigner for NoSigner {
    async fn sign(&self, request: UnsignedRequest<'_>, _: &AwsScope) -> Result<Vec<(String, String)>, PortError> {
        Err(PortError::new("signing a request", format!("no AWS signer is configured for {}", request.url)))
    }
}
