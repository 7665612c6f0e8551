//! What a person has in view beside the bot's DM, in the turns table
//! (DynamoDB in AWS; `shared/adapters/aws/src/dynamodb/contexts.rs`):
//! written by the ingress, read by the worker.

use super::PortError;
use async_trait::async_trait;
use slack::{ChannelId, TeamId, UserId};

/// What a person had in view beside the bot's DM (`app_context_changed`,
/// or the channel an assistant thread was opened from).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct UserContext {
    /// The channel in view; none when nothing in particular is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub channel: Option<ChannelId>,
    /// When it was seen (Unix seconds).
    pub at: i64,
}

/// What people have in view, remembered for [`crate::keys::USER_CONTEXT_TTL_SECS`]: a
/// small item per person, written by the ingress, read by the worker.
#[async_trait]
pub trait UserContexts: Send + Sync {
    async fn remember(&self, team: &TeamId, user: &UserId, context: &UserContext) -> Result<(), PortError>;

    /// The person's context, unless it is older than the TTL at `now_unix`.
    async fn recall(&self, team: &TeamId, user: &UserId, now_unix: i64) -> Result<Option<UserContext>, PortError>;
}
