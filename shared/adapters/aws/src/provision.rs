//! Creates the table and queues the way `template.yaml` declares them, for
//! tests and local runs against a local AWS emulator. Production resources
//! come from the template only; keep the two in step.

use crate::dynamodb::{PARTITION_KEY, SORT_KEY, TTL_ATTRIBUTE};
use crate::{build_error, port_error};
use assistant_core::ports::PortError;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, KeySchemaElement, KeyType, ScalarAttributeType, TimeToLiveSpecification,
};
use aws_sdk_sqs::types::QueueAttributeName;

/// The turns table: `pk`/`sk` strings, on demand, TTL on `expires_at`.
pub async fn turns_table(client: &aws_sdk_dynamodb::Client, name: &str) -> Result<(), PortError> {
    let attribute = |name: &str| {
        AttributeDefinition::builder()
            .attribute_name(name)
            .attribute_type(ScalarAttributeType::S)
            .build()
            .map_err(|err| build_error("build attribute definition", err))
    };
    let key = |name: &str, key_type| {
        KeySchemaElement::builder()
            .attribute_name(name)
            .key_type(key_type)
            .build()
            .map_err(|err| build_error("build key schema", err))
    };
    client
        .create_table()
        .table_name(name)
        .billing_mode(BillingMode::PayPerRequest)
        .attribute_definitions(attribute(PARTITION_KEY)?)
        .attribute_definitions(attribute(SORT_KEY)?)
        .key_schema(key(PARTITION_KEY, KeyType::Hash)?)
        .key_schema(key(SORT_KEY, KeyType::Range)?)
        .send()
        .await
        .map_err(|err| port_error("DynamoDB CreateTable", err))?;
    let ttl = TimeToLiveSpecification::builder()
        .attribute_name(TTL_ATTRIBUTE)
        .enabled(true)
        .build()
        .map_err(|err| build_error("build TTL specification", err))?;
    client
        .update_time_to_live()
        .table_name(name)
        .time_to_live_specification(ttl)
        .send()
        .await
        .map_err(|err| port_error("DynamoDB UpdateTimeToLive", err))?;
    Ok(())
}

#[derive(Debug, Clone)]
pub struct QueueUrls {
    pub queue: String,
    pub dead_letter: String,
}

/// A FIFO queue `{name}.fifo` whose messages move to `{name}-dlq.fifo` after
/// `max_receives` receives.
pub async fn fifo_queue_with_dlq(
    client: &aws_sdk_sqs::Client,
    name: &str,
    max_receives: u32,
    visibility_timeout_secs: u32,
) -> Result<QueueUrls, PortError> {
    let create = |queue_name: String| {
        client
            .create_queue()
            .queue_name(queue_name)
            .attributes(QueueAttributeName::FifoQueue, "true")
            .attributes(QueueAttributeName::VisibilityTimeout, visibility_timeout_secs.to_string())
    };
    let dead_letter = create(format!("{name}-dlq.fifo"))
        .send()
        .await
        .map_err(|err| port_error("SQS CreateQueue (dead-letter)", err))?
        .queue_url
        .unwrap_or_default();
    let dlq_arn = client
        .get_queue_attributes()
        .queue_url(&dead_letter)
        .attribute_names(QueueAttributeName::QueueArn)
        .send()
        .await
        .map_err(|err| port_error("SQS GetQueueAttributes", err))?
        .attributes
        .and_then(|mut attributes| attributes.remove(&QueueAttributeName::QueueArn))
        .unwrap_or_default();
    let redrive = format!(r#"{{"deadLetterTargetArn":"{dlq_arn}","maxReceiveCount":"{max_receives}"}}"#);
    let queue = create(format!("{name}.fifo"))
        .attributes(QueueAttributeName::RedrivePolicy, redrive)
        .send()
        .await
        .map_err(|err| port_error("SQS CreateQueue", err))?
        .queue_url
        .unwrap_or_default();
    Ok(QueueUrls { queue, dead_letter })
}
