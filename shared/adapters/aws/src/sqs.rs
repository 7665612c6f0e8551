//! SQS queues as the [`WorkQueue`] and [`ReplyQueue`] ports.
//!
//! On a FIFO queue (URL ending in `.fifo`) each message is sent with its
//! thread as the `MessageGroupId`, so one thread's messages are handled in
//! order, and with a deduplication id that repeats for a repeated send, so
//! SQS drops copies within its five-minute window. Standard queues get
//! neither (SQS refuses them there).

use crate::{port_error, summarize};
use assistant_core::WorkMessage;
use assistant_core::messages::{QueueMessage, ReplyMessage};
use assistant_core::ports::{PortError, ReplyQueue, WorkQueue};
use async_trait::async_trait;
use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::QueueAttributeName;

#[derive(Debug, Clone)]
pub struct SqsQueue {
    client: Client,
    url: String,
    fifo: bool,
}

impl SqsQueue {
    pub fn new(client: Client, url: impl Into<String>) -> Self {
        let url = url.into();
        Self { fifo: url.ends_with(".fifo"), client, url }
    }

    async fn send_message(&self, message: &impl QueueMessage, operation: &'static str) -> Result<(), PortError> {
        let mut send = self.client.send_message().queue_url(&self.url).message_body(message.encode());
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
