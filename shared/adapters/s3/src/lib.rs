//! The artifact bucket (S3) as the [`ArtifactStore`] port: large tool
//! results, and configuration such as the system prompt.

use adapters_aws::{port_error, summarize};
use assistant_core::ports::{ArtifactStore, Bounded, PortError};
use async_trait::async_trait;
use aws_sdk_s3::Client;
use aws_sdk_s3::operation::get_object::GetObjectError;
use aws_sdk_s3::primitives::ByteStream;
use aws_sdk_s3::types::ServerSideEncryption;

/// An S3 client for this process. With an endpoint override (a local
/// emulator), path-style addressing: `bucket.localhost` does not resolve.
pub fn client(aws: &aws_config::SdkConfig) -> Client {
    let local = std::env::var_os("AWS_ENDPOINT_URL_S3").or_else(|| std::env::var_os("AWS_ENDPOINT_URL")).is_some();
    Client::from_conf(aws_sdk_s3::config::Builder::from(aws).force_path_style(local).build())
}

#[derive(Debug, Clone)]
pub struct S3Artifacts {
    client: Client,
    bucket: String,
}

impl S3Artifacts {
    pub fn new(client: Client, bucket: impl Into<String>) -> Self {
        Self { client, bucket: bucket.into() }
    }
}

#[async_trait]
impl ArtifactStore for S3Artifacts {
    async fn put(&self, key: &str, body: Vec<u8>, content_type: &'static str) -> Result<(), PortError> {
        self.client
            .put_object()
            .bucket(&self.bucket)
            .key(key)
            .content_type(content_type)
            .server_side_encryption(ServerSideEncryption::Aes256)
            .body(ByteStream::from(body))
            .send()
            .await
            .map_err(|err| port_error("S3 PutObject (artifact)", err))?;
        Ok(())
    }

    async fn get(&self, key: &str) -> Result<Option<Vec<u8>>, PortError> {
        Ok(match self.get_at_most(key, u64::MAX).await? {
            Bounded::Found(bytes) => Some(bytes),
            Bounded::Absent => None,
            Bounded::TooLarge { .. } => unreachable!("no object is over u64::MAX bytes"),
        })
    }

    /// The response's length decides before the body is read: a huge
    /// object is never held in memory.
    async fn get_at_most(&self, key: &str, max: u64) -> Result<Bounded, PortError> {
        let output = match self.client.get_object().bucket(&self.bucket).key(key).send().await {
            Ok(output) => output,
            Err(err) if matches!(err.as_service_error(), Some(GetObjectError::NoSuchKey(_))) => {
                return Ok(Bounded::Absent);
            }
            Err(err) => return Err(port_error("S3 GetObject (artifact)", err)),
        };
        let length = output.content_length().map_or(0, |length| length.max(0) as u64);
        if length > max {
            return Ok(Bounded::TooLarge { bytes: length });
        }
        let body = output
            .body
            .collect()
            .await
            .map_err(|err| PortError::new("S3 GetObject (artifact body)", err.to_string()).with_source(err))?;
        let bytes = body.into_bytes().to_vec();
        Ok(match bytes.len() as u64 {
            read if read > max => Bounded::TooLarge { bytes: read },
            _ => Bounded::Found(bytes),
        })
    }

    async fn list(&self, prefix: &str, max: usize) -> Result<Vec<(String, u64)>, PortError> {
        let mut found = Vec::new();
        let mut token = None;
        loop {
            let page = self.list_page(prefix, token).await?;
            for object in page.contents() {
                if let Some(key) = object.key() {
                    found.push((key.to_owned(), object.size().unwrap_or_default().max(0) as u64));
                }
            }
            token = page.next_continuation_token().map(str::to_owned);
            if found.len() >= max || token.is_none() {
                found.truncate(max);
                return Ok(found);
            }
        }
    }
}

impl S3Artifacts {
    async fn list_page(
        &self,
        prefix: &str,
        token: Option<String>,
    ) -> Result<aws_sdk_s3::operation::list_objects_v2::ListObjectsV2Output, PortError> {
        self.client
            .list_objects_v2()
            .bucket(&self.bucket)
            .prefix(prefix)
            .set_continuation_token(token)
            .send()
            .await
            .map_err(|err| port_error("S3 ListObjectsV2", err))
    }
}

/// Health: the bucket exists and we may reach it.
/// Health: the bucket answers a listing under `prefix`, the one listing the
/// worker may make (its role may list nothing else, so `HeadBucket` would
/// be refused).
pub async fn check_bucket(client: &Client, bucket: &str, prefix: &str) -> Result<(), String> {
    client
        .list_objects_v2()
        .bucket(bucket)
        .prefix(prefix)
        .max_keys(1)
        .send()
        .await
        .map(|_| ())
        .map_err(|err| summarize(&err))
}

/// The artifact bucket, for tests and local runs against a local emulator
/// (production's comes from `template.yaml`).
pub async fn provision_bucket(client: &Client, name: &str) -> Result<(), PortError> {
    client.create_bucket().bucket(name).send().await.map_err(|err| port_error("S3 CreateBucket", err))?;
    Ok(())
}
