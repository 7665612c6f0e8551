//! Approval deadlines as the [`ApprovalTimers`] port: one partition,
//! `APPROVAL_TIMERS`, whose sort key starts with the due time (zero-padded
//! Unix seconds), so the sweep is one `Query` for keys up to now. Few calls
//! wait for approval at once, so one partition is never hot; each item also
//! carries the table's TTL, a week after it was due.

use super::{PARTITION_KEY, SORT_KEY, key, put_json};
use crate::port_error;
use assistant_core::keys::{self, APPROVAL_TIMERS_PARTITION, KEPT_AFTER_DUE_SECS};
use assistant_core::ports::{ApprovalTimer, ApprovalTimers, PortError};
use async_trait::async_trait;
use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::AttributeValue;

const TIMER: &str = "timer";

#[derive(Debug, Clone)]
pub struct DynamoTimers {
    client: Client,
    table: String,
}

impl DynamoTimers {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self { client, table: table.into() }
    }
}

fn sort_key(timer: &ApprovalTimer) -> String {
    keys::approval_timer(timer.due_at, &timer.turn_id, &timer.tool_use_id)
}

#[async_trait]
impl ApprovalTimers for DynamoTimers {
    async fn set(&self, timer: &ApprovalTimer) -> Result<(), PortError> {
        let json = serde_json::to_string(timer).expect("timers are strings and numbers");
        put_json(
            &self.client,
            &self.table,
            (APPROVAL_TIMERS_PARTITION.to_owned(), &sort_key(timer)),
            (TIMER, json),
            timer.due_at + KEPT_AFTER_DUE_SECS,
            "DynamoDB PutItem (approval timer)",
        )
        .await
    }

    async fn due(&self, now_unix: i64, max: usize) -> Result<Vec<ApprovalTimer>, PortError> {
        let upper = keys::approval_timers_due_by(now_unix);
        let output = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("#pk = :pk AND #sk <= :upper")
            .expression_attribute_names("#pk", PARTITION_KEY)
            .expression_attribute_names("#sk", SORT_KEY)
            .expression_attribute_values(":pk", AttributeValue::S(APPROVAL_TIMERS_PARTITION.to_owned()))
            .expression_attribute_values(":upper", AttributeValue::S(upper))
            .limit(i32::try_from(max).unwrap_or(i32::MAX))
            .consistent_read(true)
            .send()
            .await
            .map_err(|err| port_error("DynamoDB Query (due approval timers)", err))?;
        output
            .items()
            .iter()
            .map(|item| {
                let json = item
                    .get(TIMER)
                    .and_then(|v| v.as_s().ok())
                    .ok_or_else(|| PortError::new("read approval timer", "item has no readable timer"))?;
                serde_json::from_str(json)
                    .map_err(|err| PortError::new("read approval timer", format!("timer does not parse: {err}")))
            })
            .collect()
    }

    async fn clear(&self, timer: &ApprovalTimer) -> Result<(), PortError> {
        self.client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(key(APPROVAL_TIMERS_PARTITION.to_owned(), &sort_key(timer))))
            .send()
            .await
            .map_err(|err| port_error("DynamoDB DeleteItem (approval timer)", err))?;
        Ok(())
    }
}
