//! SQS queues as the [`WorkQueue`] and [`ReplyQueue`] ports.
//!
//! On a FIFO queue (URL ending in `.fifo`) each message is sent with its
//! thread as the `MessageGroupId`, so one thread's messages are handled in
//! order, and with a deduplication id that repeats for a repeated send, so
//! SQS drops copies within its five-minute window. Standard queues get
//! neither (SQS refuses them there).

use crate::{Later, port_error, summarize};
use assistant_core::WorkMessage;
use assistant_core::messages::{QueueMessage, ReplyMessage};
use assistant_core::ports::{MessageVisibility, PortError, ReplyQueue, WorkQueue};
use async_trait::async_trait;
use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::QueueAttributeName;
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

/// The SQS client on `aws`, built when a call first needs it: a function
/// sends to a queue or changes a message's visibility on some events only.
pub fn client_on_first_use(aws: &aws_config::SdkConfig) -> Later<Client> {
    let aws = aws.clone();
    Later::new(move || Client::new(&aws))
}

#[derive(Debug, Clone)]
pub struct SqsQueue {
    client: Later<Client>,
    url: String,
    fifo: bool,
}

impl SqsQueue {
    pub fn new(client: impl Into<Later<Client>>, url: impl Into<String>) -> Self {
        let url = url.into();
        Self { fifo: url.ends_with(".fifo"), client: client.into(), url }
    }

    async fn send_message(&self, message: &impl QueueMessage, operation: &'static str) -> Result<(), PortError> {
        let mut send = self.client.get().send_message().queue_url(&self.url).message_body(message.encode());
        if self.fifo {
            send = send.message_group_id(message.group()).message_deduplication_id(message.dedupe_id());
        }
        send.send().await.map_err(|err| port_error(operation, err))?;
        Ok(())
    }
}

#[async_trait]
impl WorkQueue for SqsQueue {
    async fn enqueue(&self, message: &WorkMessage) -> Result<(), PortError> {
        self.send_message(message, "SQS SendMessage (work queue)").await
    }
}

#[async_trait]
impl ReplyQueue for SqsQueue {
    async fn send(&self, message: &ReplyMessage) -> Result<(), PortError> {
        self.send_message(message, "SQS SendMessage (reply queue)").await
    }
}

/// Health: the queue exists and we may read its attributes.
pub async fn check_queue(client: &Client, url: &str) -> Result<(), String> {
    client
        .get_queue_attributes()
        .queue_url(url)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map(|_| ())
        .map_err(|err| summarize(&err))
}

/// Sets when SQS hands a received message out again
/// (`ChangeMessageVisibility`): the backoff of a failed record, or a hold
/// for the rest of an invocation. Queues are named by ARN, as Lambda's
/// events name them; an ARN whose queue is one of the function's own
/// (`known`) needs no lookup, any other's URL is asked for once per process.
#[derive(Debug)]
pub struct Visibility {
    client: Later<Client>,
    known: Vec<String>,
    urls: Mutex<HashMap<String, String>>,
}

impl Visibility {
    /// `known`: the URLs of the queues the function consumes
    /// (`…/{account}/{name}`).
    pub fn new(client: impl Into<Later<Client>>, known: &[&str]) -> Self {
        Self {
            client: client.into(),
            known: known.iter().map(|url| (*url).to_owned()).collect(),
            urls: Mutex::default(),
        }
    }

    async fn url(&self, queue_arn: &str) -> Result<String, PortError> {
        if let Some(url) = self.urls.lock().expect("urls lock").get(queue_arn) {
            return Ok(url.clone());
        }
        // arn:aws:sqs:region:account:name
        let mut parts = queue_arn.rsplitn(3, ':');
        let (Some(name), Some(account)) = (parts.next(), parts.next()) else {
            return Err(PortError::new("SQS GetQueueUrl", format!("{queue_arn:?} is not a queue ARN")));
        };
        let path = format!("/{account}/{name}");
        if let Some(url) = self.known.iter().find(|url| url.ends_with(&path)) {
            return Ok(url.clone());
        }
        let url = self
            .client
            .get()
            .get_queue_url()
            .queue_name(name)
            .queue_owner_aws_account_id(account)
            .send()
            .await
            .map_err(|err| port_error("SQS GetQueueUrl", err))?
            .queue_url
            .unwrap_or_default();
        self.urls.lock().expect("urls lock").insert(queue_arn.to_owned(), url.clone());
        Ok(url)
    }
}

#[async_trait]
impl MessageVisibility for Visibility {
    /// SQS allows at most 12 hours.
    async fn set(&self, queue_arn: &str, receipt_handle: &str, after: Duration) -> Result<(), PortError> {
        let url = self.url(queue_arn).await?;
        let seconds = after.as_secs_f64().ceil().min(43_200.0) as i32;
        self.client
            .get()
            .change_message_visibility()
            .queue_url(url)
            .receipt_handle(receipt_handle)
            .visibility_timeout(seconds)
            .send()
            .await
            .map_err(|err| port_error("SQS ChangeMessageVisibility", err))?;
        Ok(())
    }
}
