//! The responder's delivery records as the [`DeliveryLog`] port: one item
//! per turn beside the turn's state (same partition key, sort key
//! `DELIVERY`), written with a conditional `PutItem` on its own version.

use super::{TTL_ATTRIBUTE, key};
use crate::port_error;
use agent::ports::{DeliveryLog, DeliveryRecord, PortError, StoreError, TURN_TTL_SECS};
use agent::turn::TurnId;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::AttributeValue;

const VERSION: &str = "version";
const STATE: &str = "state";

#[derive(Debug, Clone)]
pub struct DynamoDeliveries {
    client: Client,
    table: String,
}

impl DynamoDeliveries {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self { client, table: table.into() }
    }
}

impl DeliveryLog for DynamoDeliveries {
    async fn load(&self, id: &TurnId) -> Result<DeliveryRecord, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(key(format!("TURN#{id}"), "DELIVERY")))
            .consistent_read(true)
            .send()
            .await
            .map_err(|err| port_error("DynamoDB GetItem (load delivery record)", err))?;
        let Some(item) = output.item else { return Ok(DeliveryRecord::default()) };
        let unreadable = |what: &str| PortError::new("read delivery record", format!("item has no readable {what}"));
        let version: u64 = item
            .get(VERSION)
            .and_then(|v| v.as_n().ok())
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| unreadable(VERSION))?;
        let state = item.get(STATE).and_then(|v| v.as_s().ok()).ok_or_else(|| unreadable(STATE))?;
        DeliveryRecord::from_state(state, version)
    }

    async fn save(&self, id: &TurnId, record: &mut DeliveryRecord) -> Result<(), StoreError> {
        let next = record.version + 1;
        let mut item = key(format!("TURN#{id}"), "DELIVERY");
        item.insert(VERSION.to_owned(), AttributeValue::N(next.to_string()));
        item.insert(STATE.to_owned(), AttributeValue::S(record.to_state()));
        item.insert(TTL_ATTRIBUTE.to_owned(), AttributeValue::N((record.updated_at + TURN_TTL_SECS).to_string()));
        let request = self.client.put_item().table_name(&self.table).set_item(Some(item));
        let request = if record.version == 0 {
            request.condition_expression("attribute_not_exists(pk)")
        } else {
            request
                .condition_expression("#version = :expected")
                .expression_attribute_names("#version", VERSION)
                .expression_attribute_values(":expected", AttributeValue::N(record.version.to_string()))
        };
        match request.send().await {
            Ok(_) => {
                record.version = next;
                Ok(())
            }
            Err(err) if matches!(err.as_service_error(), Some(PutItemError::ConditionalCheckFailedException(_))) => {
                Err(StoreError::Conflict { id: id.clone(), expected: record.version })
            }
            Err(err) => Err(port_error("DynamoDB PutItem (save delivery record)", err).into()),
        }
    }
}
