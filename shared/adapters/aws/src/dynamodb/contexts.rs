//! What people have in view as the [`UserContexts`] port: one small item
//! per person, `CONTEXT#{team}#{user}` / `CONTEXT`, overwritten by each
//! change (the ingress is its one writer) and expiring an hour after it
//! was seen. Reads filter on the expiry: DynamoDB deletes expired items
//! late.

use super::{key, put_json};
use crate::port_error;
use assistant_core::ports::{PortError, USER_CONTEXT_TTL_SECS, UserContext, UserContexts};
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use slack::{TeamId, UserId};

const SORT: &str = "CONTEXT";
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

fn partition(team: &TeamId, user: &UserId) -> String {
    format!("CONTEXT#{team}#{user}")
}

#[async_trait]
impl UserContexts for DynamoContexts {
    async fn remember(&self, team: &TeamId, user: &UserId, context: &UserContext) -> Result<(), PortError> {
        let json = serde_json::to_string(context).expect("contexts are strings and numbers");
        put_json(
            &self.client,
            &self.table,
            (partition(team, user), SORT),
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
            .set_key(Some(key(partition(team, user), SORT)))
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
