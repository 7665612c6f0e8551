//! What people have in view as the [`UserContexts`] port: one small item
//! per person, `CONTEXT#{team}#{user}` / `CONTEXT`, overwritten by each
//! change (the ingress is its one writer) and expiring an hour after it
//! was seen. Reads filter on the expiry: DynamoDB deletes expired items
//! late.

use super::{put_json, record_item_key};
use crate::port_error;
use assistant_core::keys::{self, USER_CONTEXT_TTL_SECS};
use assistant_core::ports::{PortError, UserContext, UserContexts};
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use slack::{TeamId, UserId};

const CONTEXT: &str = "context";

#[derive(Debug, Clone)]
pub struct DynamoContexts {
    client: Client,
    table: String,
}

impl DynamoContexts {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self { client, table: table.into() }
    }
}

#[async_trait]
impl UserContexts for DynamoContexts {
    async fn remember(&self, team: &TeamId, user: &UserId, context: &UserContext) -> Result<(), PortError> {
        let json = serde_json::to_string(context).expect("contexts are strings and numbers");
        let key = keys::user_context(team, user);
        put_json(
            &self.client,
            &self.table,
            (key.partition, key.kind),
            (CONTEXT, json),
            context.at + USER_CONTEXT_TTL_SECS,
            "DynamoDB PutItem (user context)",
        )
        .await
    }

    async fn recall(&self, team: &TeamId, user: &UserId, now_unix: i64) -> Result<Option<UserContext>, PortError> {
        let output = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(record_item_key(&keys::user_context(team, user))))
            .send()
            .await
            .map_err(|err| port_error("DynamoDB GetItem (user context)", err))?;
        let Some(json) = output.item().and_then(|item| item.get(CONTEXT)).and_then(|v| v.as_s().ok()) else {
            return Ok(None);
        };
        let context: UserContext = serde_json::from_str(json)
            .map_err(|err| PortError::new("read user context", format!("stored context does not parse: {err}")))?;
        Ok((now_unix < context.at + USER_CONTEXT_TTL_SECS).then_some(context))
    }
}
