//! Event claims (dedupe) and bot-thread records as the [`EventClaims`] port.
//!
//! A claim is a single `TransactWriteItems`: the event's conditional put and
//! the thread's put (or its existence check and refresh) succeed or fail
//! together, in one round trip. A person's action token (Slack's Data
//! Access API), when the event carries one, is a third put in the same
//! transaction (`ACTION_TOKEN#{team}-{event_id}`, kept 15 minutes): the
//! worker's Slack search reads it by the turn the event starts, and it never
//! travels on the queue.

use super::{PARTITION_KEY, TTL_ATTRIBUTE, record_item_key};
use crate::{build_error, port_error};
use assistant_core::TurnId;
use assistant_core::keys;
use assistant_core::keys::{ACTION_TOKEN_TTL_SECS, BOT_THREAD_TTL_SECS, EVENT_CLAIM_TTL_SECS};
use assistant_core::ports::{ActionTokens, ClaimOutcome, EventClaim, EventClaims, PortError, ThreadRule};
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem, Update};
use slack::events::ActionToken;
use std::collections::HashMap;

const CONDITION_FAILED: &str = "ConditionalCheckFailed";

#[derive(Debug, Clone)]
pub struct DynamoClaims {
    client: Client,
    table: String,
}

impl DynamoClaims {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self { client, table: table.into() }
    }

    fn event_key(claim: &EventClaim) -> HashMap<String, AttributeValue> {
        record_item_key(&keys::event_claim(&claim.team, &claim.event_id))
    }

    fn thread_key(claim: &EventClaim) -> HashMap<String, AttributeValue> {
        record_item_key(&keys::bot_thread(&claim.thread))
    }

    fn build_transaction(&self, claim: &EventClaim, now: i64) -> Result<Vec<TransactWriteItem>, PortError> {
        let number = |n: i64| AttributeValue::N(n.to_string());
        let mut event_item = Self::event_key(claim);
        event_item.insert(TTL_ATTRIBUTE.to_owned(), number(now + EVENT_CLAIM_TTL_SECS));
        event_item.insert("claimed_at".to_owned(), number(now));
        let event_put = Put::builder()
            .table_name(&self.table)
            .set_item(Some(event_item))
            .condition_expression("attribute_not_exists(#pk) OR #exp < :now")
            .expression_attribute_names("#pk", PARTITION_KEY)
            .expression_attribute_names("#exp", TTL_ATTRIBUTE)
            .expression_attribute_values(":now", number(now))
            .build()
            .map_err(|err| build_error("build event claim", err))?;

        let thread_write = match claim.rule {
            ThreadRule::OpensLater => None,
            ThreadRule::Opens => {
                let mut thread_item = Self::thread_key(claim);
                thread_item.insert(TTL_ATTRIBUTE.to_owned(), number(now + BOT_THREAD_TTL_SECS));
                let put = Put::builder()
                    .table_name(&self.table)
                    .set_item(Some(thread_item))
                    .build()
                    .map_err(|err| build_error("build thread record", err))?;
                Some(TransactWriteItem::builder().put(put).build())
            }
            ThreadRule::MustBeKnown => {
                let update = Update::builder()
                    .table_name(&self.table)
                    .set_key(Some(Self::thread_key(claim)))
                    .update_expression("SET #exp = :expires")
                    .condition_expression("attribute_exists(#pk) AND #exp >= :now")
                    .expression_attribute_names("#pk", PARTITION_KEY)
                    .expression_attribute_names("#exp", TTL_ATTRIBUTE)
                    .expression_attribute_values(":now", number(now))
                    .expression_attribute_values(":expires", number(now + BOT_THREAD_TTL_SECS))
                    .build()
                    .map_err(|err| build_error("build thread check", err))?;
                Some(TransactWriteItem::builder().update(update).build())
            }
        };
        let mut items = vec![TransactWriteItem::builder().put(event_put).build()];
        items.extend(thread_write);
        if let Some(token) = &claim.action_token {
            let mut token_item = record_item_key(&keys::action_token(&TurnId::for_claim(&claim.team, &claim.event_id)));
            token_item.insert("token".to_owned(), AttributeValue::S(token.expose().to_owned()));
            token_item.insert(TTL_ATTRIBUTE.to_owned(), number(now + ACTION_TOKEN_TTL_SECS));
            let put = Put::builder()
                .table_name(&self.table)
                .set_item(Some(token_item))
                .build()
                .map_err(|err| build_error("build action token", err))?;
            items.push(TransactWriteItem::builder().put(put).build());
        }
        Ok(items)
    }
}

#[async_trait::async_trait]
impl ActionTokens for DynamoClaims {
    async fn action_token(&self, turn: &TurnId, now_unix: i64) -> Result<Option<ActionToken>, PortError> {
        let item = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(record_item_key(&keys::action_token(turn))))
            .consistent_read(true)
            .send()
            .await
            .map_err(|err| port_error("DynamoDB GetItem (action token)", err))?
            .item;
        let Some(item) = item else { return Ok(None) };
        let live = item
            .get(TTL_ATTRIBUTE)
            .and_then(|value| value.as_n().ok())
            .and_then(|n| n.parse::<i64>().ok())
            .is_some_and(|expires| expires >= now_unix);
        let token = item.get("token").and_then(|value| value.as_s().ok());
        Ok(token.filter(|_| live).map(|token| ActionToken::new(token.clone())))
    }
}

#[async_trait::async_trait]
impl EventClaims for DynamoClaims {
    async fn claim(&self, claim: &EventClaim, now_unix: i64) -> Result<ClaimOutcome, PortError> {
        let items = self.build_transaction(claim, now_unix)?;
        let result = self.client.transact_write_items().set_transact_items(Some(items)).send().await;
        let err = match result {
            Ok(_) => return Ok(ClaimOutcome::Claimed),
            Err(err) => err,
        };
        if let Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) = err.as_service_error() {
            let failed = |index: usize| {
                cancelled.cancellation_reasons().get(index).and_then(|reason| reason.code()) == Some(CONDITION_FAILED)
            };
            // Item 0 is the event claim, item 1 the thread write (if any).
            if failed(0) {
                return Ok(ClaimOutcome::Duplicate);
            }
            if claim.rule != ThreadRule::OpensLater && failed(1) {
                return Ok(ClaimOutcome::NotABotThread);
            }
        }
        // Anything else, a concurrent transaction on the same event
        // included, is retryable: Slack retries and finds the claim.
        Err(port_error("DynamoDB TransactWriteItems (claim event)", err))
    }
}
