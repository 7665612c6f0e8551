//! The turns table (DynamoDB). One table holds every record, keyed by a
//! string partition key `pk` and sort key `sk`; `assistant_core::keys`
//! spells every key (with its writer and TTL), and these adapters write
//! what it spells:
//!
//! - [`claims::DynamoClaims`]: event claims, bot threads, action tokens;
//! - [`contexts::DynamoContexts`]: what a person has in view;
//! - [`timers::DynamoTimers`]: approval deadlines;
//! - [`records::DynamoRecords`]: every versioned record and the items
//!   beside one (turns, deliveries, sign-ins, grants, tokens, memory,
//!   incidents, alerts, kept configuration). Which key and what JSON is
//!   decided once, in `assistant_core` (`store`, `oauth`, `grants`, …).
//!
//! Items carry `expires_at` (Unix seconds), the table's TTL attribute.
//! DynamoDB deletes expired items late (up to days), so conditions on claims
//! also treat an item past `expires_at` as absent.

pub mod claims;
pub mod contexts;
pub mod records;
pub mod timers;

pub use claims::DynamoClaims;
pub use contexts::DynamoContexts;
pub use records::DynamoRecords;
pub use timers::DynamoTimers;

use crate::summarize;
use assistant_core::ports::RecordKey;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

pub const PARTITION_KEY: &str = "pk";
pub const SORT_KEY: &str = "sk";
pub const TTL_ATTRIBUTE: &str = "expires_at";

/// The item key of `record`.
fn record_item_key(record: &RecordKey) -> HashMap<String, AttributeValue> {
    key(record.partition.clone(), record.kind)
}

fn key(pk: String, sk: &str) -> HashMap<String, AttributeValue> {
    HashMap::from([
        (PARTITION_KEY.to_owned(), AttributeValue::S(pk)),
        (SORT_KEY.to_owned(), AttributeValue::S(sk.to_owned())),
    ])
}

/// An item holding one JSON attribute, written whatever was there (the
/// record's one writer decides), expiring at `expires_at`.
async fn put_json(
    client: &Client,
    table: &str,
    (pk, sk): (String, &str),
    (attribute, json): (&str, String),
    expires_at: i64,
    operation: &'static str,
) -> Result<(), assistant_core::ports::PortError> {
    let mut item = key(pk, sk);
    item.insert(attribute.to_owned(), AttributeValue::S(json));
    item.insert(TTL_ATTRIBUTE.to_owned(), AttributeValue::N(expires_at.to_string()));
    client
        .put_item()
        .table_name(table)
        .set_item(Some(item))
        .send()
        .await
        .map_err(|err| crate::port_error(operation, err))?;
    Ok(())
}

/// Health, for a function that reads items: a consistent read of a key no
/// record uses answers. Proves what the function needs (the table, read
/// permission, the data plane) with no `DescribeTable` permission, and
/// keeps that operation's large response model out of the binary.
pub async fn check_reads(client: &Client, table: &str) -> Result<(), String> {
    client
        .get_item()
        .table_name(table)
        .set_key(Some(record_item_key(&assistant_core::keys::health_check())))
        .consistent_read(true)
        .send()
        .await
        .map(|_| ())
        .map_err(|err| summarize(&err))
}

/// Health, for a function that may not read items (the ingress, limited
/// to its own keys): the table exists and we may describe it.
pub async fn check_table(client: &Client, table: &str) -> Result<(), String> {
    client.describe_table().table_name(table).send().await.map(|_| ()).map_err(|err| summarize(&err))
}
