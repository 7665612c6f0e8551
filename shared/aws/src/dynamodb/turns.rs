//! Turn state as the [`TurnStore`] port: one item per turn holding the state
//! as JSON, its `version` and `status` beside it (for conditions and for
//! reading without parsing), and a TTL.
//!
//! Every write is a conditional `PutItem`: create only where no turn exists
//! (and return the existing one in the same call when it does), save only
//! where the stored version is the one this copy was read at.

use super::{TTL_ATTRIBUTE, key};
use crate::port_error;
use agent::ports::{Created, PortError, StoreError, TURN_TTL_SECS, TurnStore, deserialize_turn, serialize_turn};
use agent::turn::{Turn, TurnId};
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValuesOnConditionCheckFailure};
use std::collections::HashMap;

const VERSION: &str = "version";
const STATUS: &str = "status";
const STATE: &str = "state";

#[derive(Debug, Clone)]
pub struct DynamoTurns {
    client: Client,
    table: String,
}

type Item = HashMap<String, AttributeValue>;

impl DynamoTurns {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self { client, table: table.into() }
    }

    fn turn_key(id: &TurnId) -> Item {
        key(format!("TURN#{id}"), "STATE")
    }

    fn item(turn: &Turn, version: u64) -> Result<Item, StoreError> {
        let state = serialize_turn(turn)?;
        let mut item = Self::turn_key(&turn.id);
        item.insert(VERSION.to_owned(), AttributeValue::N(version.to_string()));
        item.insert(STATUS.to_owned(), AttributeValue::S(turn.status.as_str().to_owned()));
        item.insert(STATE.to_owned(), AttributeValue::S(state));
        item.insert(TTL_ATTRIBUTE.to_owned(), AttributeValue::N((turn.updated_at + TURN_TTL_SECS).to_string()));
        Ok(item)
    }

    fn turn_from(item: &Item) -> Result<Turn, StoreError> {
        let unreadable = |what: &str| PortError::new("read turn item", format!("item has no readable {what}"));
        let version = item
            .get(VERSION)
            .and_then(|v| v.as_n().ok())
            .and_then(|n| n.parse().ok())
            .ok_or_else(|| unreadable(VERSION))?;
        let state = item.get(STATE).and_then(|v| v.as_s().ok()).ok_or_else(|| unreadable(STATE))?;
        deserialize_turn(state, version)
    }

    fn is_condition_failure(err: &aws_sdk_dynamodb::error::SdkError<PutItemError>) -> bool {
        matches!(err.as_service_error(), Some(PutItemError::ConditionalCheckFailedException(_)))
    }
}

impl TurnStore for DynamoTurns {
    async fn create(&self, turn: &mut Turn) -> Result<Created, StoreError> {
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(Self::item(turn, 1)?))
            .condition_expression("attribute_not_exists(pk)")
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .send()
            .await;
        match result {
            Ok(_) => {
                turn.version = 1;
                Ok(Created::New)
            }
            Err(err) => {
                if let Some(PutItemError::ConditionalCheckFailedException(failed)) = err.as_service_error()
                    && let Some(existing) = failed.item()
                {
                    return Ok(Created::Existing(Box::new(Self::turn_from(existing)?)));
                }
                Err(port_error("DynamoDB PutItem (create turn)", err).into())
            }
        }
    }

    async fn load(&self, id: &TurnId) -> Result<Option<Turn>, StoreError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(Self::turn_key(id)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|err| port_error("DynamoDB GetItem (load turn)", err))?;
        output.item.as_ref().map(Self::turn_from).transpose()
    }

    async fn save(&self, turn: &mut Turn) -> Result<(), StoreError> {
        let next = turn.version + 1;
        let result = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(Self::item(turn, next)?))
            .condition_expression("#version = :expected")
            .expression_attribute_names("#version", VERSION)
            .expression_attribute_values(":expected", AttributeValue::N(turn.version.to_string()))
            .send()
            .await;
        match result {
            Ok(_) => {
                turn.version = next;
                Ok(())
            }
            Err(err) if Self::is_condition_failure(&err) => {
                Err(StoreError::Conflict { id: turn.id.clone(), expected: turn.version })
            }
            Err(err) => Err(port_error("DynamoDB PutItem (save turn)", err).into()),
        }
    }
}
