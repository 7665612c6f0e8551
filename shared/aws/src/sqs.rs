//! The work queue (SQS) as the [`WorkQueue`] port.
//!
//! On a FIFO queue (URL ending in `.fifo`) each message is sent with the
//! thread as its `MessageGroupId`, so one thread's work is handled in order,
//! and with a deduplication id that repeats for a repeated delivery, so SQS
//! drops copies within its five-minute window. Standard queues get neither
//! (SQS refuses them there).

use crate::{port_error, summarize};
use agent::WorkMessage;
use agent::ports::{PortError, WorkQueue};
use aws_sdk_sqs::Client;
use aws_sdk_sqs::types::QueueAttributeName;

#[derive(Debug, Clone)]
pub struct SqsWorkQueue {
    client: Client,
    url: String,
    fifo: bool,
}

impl SqsWorkQueue {
    pub fn new(client: Client, url: impl Into<String>) -> Self {
        let url = url.into();
        Self { fifo: url.ends_with(".fifo"), client, url }
    }
}

impl WorkQueue for SqsWorkQueue {
    async fn enqueue(&self, message: &WorkMessage) -> Result<(), PortError> {
        let mut send = self.client.send_message().queue_url(&self.url).message_body(message.encode());
        if self.fifo {
            send = send.message_group_id(message.thread().queue_group()).message_deduplication_id(message.dedupe_id());
        }
        send.send().await.map_err(|err| port_error("SQS SendMessage (work queue)", err))?;
        Ok(())
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
