//! The turns table (DynamoDB). One table holds dedupe records, bot-thread
//! records and turn state, keyed by a string partition key `pk` and sort key
//! `sk`:
//!
//! | item | pk | sk | adapter |
//! |---|---|---|---|
//! | event claim | `EVENT#{team}#{event_id}` | `EVENT` | [`claims::DynamoClaims`] |
//! | bot thread | `THREAD#{team}#{channel}#{thread_ts}` | `THREAD` | [`claims::DynamoClaims`] |
//! | turn state | `TURN#{turn_id}` | `STATE` | [`records::DynamoRecords`] |
//! | what the responder posted | `TURN#{turn_id}` | `DELIVERY` | [`records::DynamoRecords`] |
//! | the answer the worker streamed | `TURN#{turn_id}` | `STREAM` | [`records::DynamoRecords`] |
//! | ratings of the answer | `TURN#{turn_id}` | `FEEDBACK` | [`records::DynamoRecords`] |
//! | what a person has in view | `CONTEXT#{team}#{user}` | `CONTEXT` | [`contexts::DynamoContexts`] |
//! | a person's sealed tokens per provider | `USER#{team}#{user}` | `TOKENS#{provider}` | [`records::DynamoRecords`] |
//! | a sign-in in progress | `OAUTH_STATE#{state}` | `STATE` | [`records::DynamoRecords`] |
//! | how a sign-in's code exchange ended | `OAUTH_OUTCOME#{state}` | `OUTCOME` | [`records::DynamoRecords`] |
//! | the client id registered at an MCP server's authorization server | `OAUTH_CLIENT#{hash}` | `CLIENT` | [`records::DynamoRecords`] |
//! | the channels that answer every question, published by workers | `CONFIG` | `RESPONSE_MODES` | [`records::DynamoRecords`] |
//! | a thread's grants | `GRANTS#{team}#{channel}#{thread_ts}` | `GRANT#{scope}` | [`records::DynamoRecords`] |
//! | approval deadline | `APPROVAL_TIMERS` | `{due_at}#{turn_id}#{tool_use_id}` | [`timers::DynamoTimers`] |
//! | a person's action token (Slack search as them), 15 minutes | `ACTION_TOKEN#{team}-{event_id}` | `TOKEN` | [`claims::DynamoClaims`] |
//! | an alert's incident (or a schedule's firing) | `INCIDENT#{source}#{hash}` | `INCIDENT` | [`records::DynamoRecords`] |
//! | a channel's incidents opened in an hour (storm limits) | `INCIDENT_RATE#{channel}#{hour}` | `RATE` | [`records::DynamoRecords`] |
//! | which incident a thread is | `INCIDENT_THREAD#{team}#{channel}#{thread_ts}` | `INCIDENT` | [`records::DynamoRecords`] |
//! | a thread's postmortem canvas | `POSTMORTEM#{team}#{channel}#{thread_ts}` | `POSTMORTEM` | [`records::DynamoRecords`] |
//!
//! Turn state and delivery records are versioned records: which key and
//! what JSON is decided once, in `assistant_core::store`.
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
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::AttributeValue;
use std::collections::HashMap;

pub const PARTITION_KEY: &str = "pk";
pub const SORT_KEY: &str = "sk";
pub const TTL_ATTRIBUTE: &str = "expires_at";

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
        .set_key(Some(key("HEALTH#check".to_owned(), "HEALTH")))
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
