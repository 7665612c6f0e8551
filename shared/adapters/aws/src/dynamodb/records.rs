//! Versioned records (turn state, delivery records) as the
//! [`VersionedRecords`] port: one item per record holding the JSON `state`,
//! its `version`, the `write_token` of the put that stored it and a TTL,
//! written by a conditional `PutItem`: where no
//! item exists for version 0, where the stored version is the expected one
//! otherwise. A refused put returns the stored item in the same call
//! (`ReturnValuesOnConditionCheckFailure=ALL_OLD`), so a redelivered start
//! finds the turn already begun without a second read, and a put the SDK
//! retried after a lost answer finds its own token there
//! (`assistant_core::store::put_versioned` decides).

use super::{PARTITION_KEY, SORT_KEY, TTL_ATTRIBUTE, key, record_item_key};
use crate::port_error;
use assistant_core::ports::{PortError, Put, RecordKey, RecordWrite, StoredRecord, VersionedRecords, WriteToken};
use assistant_core::retry::{Backoff, Verdict, retry};
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::operation::put_item::PutItemError;
use aws_sdk_dynamodb::types::{AttributeValue, KeysAndAttributes, ReturnValuesOnConditionCheckFailure};
use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

const VERSION: &str = "version";
const STATE: &str = "state";
const WRITE_TOKEN: &str = "write_token";

type Item = HashMap<String, AttributeValue>;

/// `BatchGetItem`'s limit on keys per request.
const BATCH_KEYS: usize = 100;
/// How often keys DynamoDB left unprocessed (throttling) are asked for
/// again, backing off, before the read fails.
const UNPROCESSED_RETRIES: u32 = 4;
/// The first request and [`UNPROCESSED_RETRIES`] more, waiting 50 ms, then
/// twice as long each time.
const UNPROCESSED_BACKOFF: Backoff = Backoff::new(UNPROCESSED_RETRIES + 1, Duration::from_millis(50));

/// Why one `BatchGetItem` try did not read every key it asked for.
enum Unread {
    /// DynamoDB left this many keys unprocessed: ask for them again.
    Unprocessed(usize),
    Failed(PortError),
}

#[derive(Debug, Clone)]
pub struct DynamoRecords {
    client: Client,
    table: String,
}

impl DynamoRecords {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self { client, table: table.into() }
    }
}

fn stored(item: &Item) -> Result<StoredRecord, PortError> {
    let unreadable = |what: &str| PortError::new("read record item", format!("item has no readable {what}"));
    let version = item
        .get(VERSION)
        .and_then(|v| v.as_n().ok())
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| unreadable(VERSION))?;
    let state = item.get(STATE).and_then(|v| v.as_s().ok()).ok_or_else(|| unreadable(STATE))?;
    let token = item.get(WRITE_TOKEN).and_then(|v| v.as_s().ok()).map(WriteToken::from_stored);
    Ok(StoredRecord { version, state: state.clone(), token })
}

#[async_trait]
impl VersionedRecords for DynamoRecords {
    async fn get(&self, record: &RecordKey) -> Result<Option<StoredRecord>, PortError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(record_item_key(record)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|err| port_error("DynamoDB GetItem (record)", err))?;
        output.item.as_ref().map(stored).transpose()
    }

    /// One `BatchGetItem` (per hundred keys), consistent; keys it leaves
    /// unprocessed are asked for again with backoff. One key: a `GetItem`
    /// (a warm worker's read ahead of a continuation), the cheaper call.
    async fn get_many(&self, records: &[RecordKey]) -> Result<Vec<Option<StoredRecord>>, PortError> {
        let found: Mutex<HashMap<&RecordKey, StoredRecord>> = Mutex::default();
        let mut distinct: Vec<&RecordKey> = Vec::new();
        for record in records {
            if !distinct.contains(&record) {
                distinct.push(record);
            }
        }
        if let [only] = distinct[..] {
            let stored = self.get(only).await?;
            return Ok(records.iter().map(|_| stored.clone()).collect());
        }
        for chunk in distinct.chunks(BATCH_KEYS) {
            // The keys the next try asks for: the chunk's, then those left unprocessed.
            let pending = &Mutex::new(chunk.iter().map(|record| record_item_key(record)).collect::<Vec<Item>>());
            let found = &found;
            let read = retry(
                &UNPROCESSED_BACKOFF,
                |_| async move {
                    let failed = |err: PortError| Unread::Failed(err);
                    let keys = KeysAndAttributes::builder()
                        .set_keys(Some(std::mem::take(&mut *pending.lock().expect("pending keys lock"))))
                        .consistent_read(true)
                        .build()
                        .map_err(|err| failed(PortError::new("DynamoDB BatchGetItem (records)", err.to_string())))?;
                    let output = self
                        .client
                        .batch_get_item()
                        .request_items(&self.table, keys)
                        .send()
                        .await
                        .map_err(|err| failed(port_error("DynamoDB BatchGetItem (records)", err)))?;
                    for item in output.responses.unwrap_or_default().remove(&self.table).unwrap_or_default() {
                        let named = |name: &str| item.get(name).and_then(|value| value.as_s().ok()).map(String::as_str);
                        let record = chunk
                            .iter()
                            .find(|record| {
                                named(PARTITION_KEY) == Some(record.partition.as_str())
                                    && named(SORT_KEY) == Some(record.kind)
                            })
                            .ok_or_else(|| {
                                failed(PortError::new("DynamoDB BatchGetItem (records)", "an item no key asked for"))
                            })?;
                        let stored = stored(&item).map_err(failed)?;
                        found.lock().expect("found records lock").insert(record, stored);
                    }
                    let left = output
                        .unprocessed_keys
                        .unwrap_or_default()
                        .remove(&self.table)
                        .map(|left| left.keys)
                        .unwrap_or_default();
                    if left.is_empty() {
                        return Ok(());
                    }
                    let unprocessed = left.len();
                    *pending.lock().expect("pending keys lock") = left;
                    Err(Unread::Unprocessed(unprocessed))
                },
                |failed| match failed.error {
                    Unread::Unprocessed(_) => Verdict::Retry,
                    Unread::Failed(_) => Verdict::Stop,
                },
            )
            .await;
            match read {
                Ok(()) => {}
                Err(Unread::Failed(err)) => return Err(err),
                Err(Unread::Unprocessed(left)) => {
                    return Err(PortError::new(
                        "DynamoDB BatchGetItem (records)",
                        format!("{left} keys still unprocessed after {UNPROCESSED_RETRIES} retries"),
                    ));
                }
            }
        }
        let found = found.into_inner().expect("found records lock");
        Ok(records.iter().map(|record| found.get(record).cloned()).collect())
    }

    async fn put(&self, record: &RecordKey, write: &RecordWrite) -> Result<Put, PortError> {
        let expected = write.expected;
        let mut item = record_item_key(record);
        item.insert(VERSION.to_owned(), AttributeValue::N((expected + 1).to_string()));
        item.insert(STATE.to_owned(), AttributeValue::S(write.state.clone()));
        item.insert(WRITE_TOKEN.to_owned(), AttributeValue::S(write.token.as_str().to_owned()));
        item.insert(TTL_ATTRIBUTE.to_owned(), AttributeValue::N(write.expires_at.to_string()));
        let request = self
            .client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld);
        let request = if expected == 0 {
            request.condition_expression("attribute_not_exists(pk)")
        } else {
            request
                .condition_expression("#version = :expected")
                .expression_attribute_names("#version", VERSION)
                .expression_attribute_values(":expected", AttributeValue::N(expected.to_string()))
        };
        match request.send().await {
            Ok(_) => Ok(Put::Written),
            Err(err) => match err.as_service_error() {
                Some(PutItemError::ConditionalCheckFailedException(failed)) => {
                    Ok(Put::Conflict { current: failed.item().map(stored).transpose()? })
                }
                _ => Err(port_error("DynamoDB PutItem (record)", err)),
            },
        }
    }

    async fn put_part(&self, partition: &str, sort_key: &str, state: String, expires_at: i64) -> Result<(), PortError> {
        let mut item = key(partition.to_owned(), sort_key);
        item.insert(STATE.to_owned(), AttributeValue::S(state));
        item.insert(TTL_ATTRIBUTE.to_owned(), AttributeValue::N(expires_at.to_string()));
        self.client
            .put_item()
            .table_name(&self.table)
            .set_item(Some(item))
            .send()
            .await
            .map_err(|err| port_error("DynamoDB PutItem (record part)", err))?;
        Ok(())
    }

    async fn delete_part(&self, partition: &str, sort_key: &str) -> Result<(), PortError> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(key(partition.to_owned(), sort_key)))
            .send()
            .await
            .map_err(|err| port_error("DynamoDB DeleteItem (record part)", err))?;
        Ok(())
    }

    async fn parts(&self, partition: &str, prefix: &str) -> Result<Vec<(String, String)>, PortError> {
        let pages = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("#pk = :pk AND begins_with(#sk, :prefix)")
            .expression_attribute_names("#pk", PARTITION_KEY)
            .expression_attribute_names("#sk", SORT_KEY)
            .expression_attribute_values(":pk", AttributeValue::S(partition.to_owned()))
            .expression_attribute_values(":prefix", AttributeValue::S(prefix.to_owned()))
            .consistent_read(true)
            .into_paginator()
            .items()
            .send()
            .collect::<Vec<_>>()
            .await;
        let mut parts = Vec::new();
        for item in pages {
            let item = item.map_err(|err| port_error("DynamoDB Query (record parts)", err))?;
            let readable = |name: &str| item.get(name).and_then(|v| v.as_s().ok()).cloned();
            let (Some(sort_key), Some(state)) = (readable(SORT_KEY), readable(STATE)) else {
                return Err(PortError::new("read record part", "item has no readable sort key or state"));
            };
            parts.push((sort_key, state));
        }
        Ok(parts)
    }
}
