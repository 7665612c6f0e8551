//! Operator alerts in the deployment's ops channel (`OPS_CHANNEL_ID`): a
//! dead letter, a Slack refusal that needs a human, a failed turn, a
//! degraded health check. Short: what happened, the reference to search
//! the logs for, and a link to the thread.
//!
//! **Once per reference.** An alert is posted only if no alert with its
//! reference was (a conditional put of an `ALERT#{reference}` record), so a
//! redelivered dead letter or a health check failing every five minutes
//! does not repeat itself (health references carry the hour).
//!
//! **Bounded.** At most [`OpsAlerts::PER_MINUTE`] alerts a minute across
//! every function instance (a versioned counter record per minute); the
//! rest are suppressed, and say so in the caller's log line. An incident
//! that fails every turn pings the channel a few times, not a thousand.
//!
//! An alert Slack refuses (the bot not in the ops channel, a revoked token)
//! is reported to the caller, which logs it at ERROR, and is not tried again:
//! the reference is already taken, and the CloudWatch alarms still fire.

use crate::Clock;
use crate::delivery::PostError;
use crate::keys::{self, ALERT_COUNT_SECS, REMEMBERED_SECS};
use crate::messages::ThreadRef;
use crate::ports::{AlertPoster, PortError, Put, RecordKey, VersionedRecords};
use crate::store::put_versioned;
use slack::ChannelId;
use slack::text::escape;
use std::sync::Arc;

/// One alert.
#[derive(Debug, Clone, Copy)]
pub struct Alert<'a> {
    /// What to search the logs for: the turn's reference, or a health
    /// check's name and hour.
    pub reference: &'a str,
    /// What happened, in a sentence (already redacted; mrkdwn is escaped
    /// here).
    pub what: &'a str,
    /// The thread it happened in, when there is one.
    pub thread: Option<&'a ThreadRef>,
}

/// What became of an alert.
#[derive(Debug)]
pub enum Raised {
    Posted,
    /// An alert with this reference was posted before.
    Duplicate,
    /// Over the minute's bound.
    Suppressed,
    /// The store or Slack failed: the caller logs it (at ERROR).
    Failed(String),
}

/// Why an alert was not posted: the table (its once-record or the
/// minute's count) or Slack failed.
#[derive(Debug, thiserror::Error)]
enum AlertFailed {
    #[error(transparent)]
    Store(#[from] PortError),
    #[error(transparent)]
    Slack(#[from] PostError),
}

pub struct OpsAlerts {
    channel: ChannelId,
    slack: Arc<dyn AlertPoster>,
    records: Arc<dyn VersionedRecords>,
    clock: Arc<dyn Clock>,
}

impl OpsAlerts {
    pub const PER_MINUTE: u64 = 5;

    pub fn new(
        channel: ChannelId,
        slack: Arc<dyn AlertPoster>,
        records: Arc<dyn VersionedRecords>,
        clock: Arc<dyn Clock>,
    ) -> Self {
        Self { channel, slack, records, clock }
    }

    pub async fn raise(&self, alert: Alert<'_>) -> Raised {
        match self.try_raise(alert).await {
            Ok(raised) => raised,
            Err(err) => Raised::Failed(err.to_string()),
        }
    }

    async fn try_raise(&self, alert: Alert<'_>) -> Result<Raised, AlertFailed> {
        let now = self.clock.now_unix();
        let minute = keys::alerts_minute(now / 60);
        let stored = self.records.get(&minute).await?;
        if stored.as_ref().is_some_and(|record| crate::store::window_count(&record.state) >= Self::PER_MINUTE) {
            return Ok(Raised::Suppressed);
        }
        let once = keys::alert_sent(alert.reference);
        let sent_once = put_versioned(self.records.as_ref(), &once, 0, "{}".into(), now + REMEMBERED_SECS).await;
        match sent_once? {
            Put::Written => {}
            Put::Conflict { .. } => return Ok(Raised::Duplicate),
        }
        if !self.count_one(&minute, stored, now).await? {
            return Ok(Raised::Suppressed);
        }
        self.slack.post_to_channel(&self.channel, &text(&alert)).await?;
        Ok(Raised::Posted)
    }

    /// Takes one of the minute's alerts; `false` when none is left.
    async fn count_one(
        &self,
        minute: &RecordKey,
        stored: Option<crate::ports::StoredRecord>,
        now: i64,
    ) -> Result<bool, PortError> {
        crate::store::take_one(self.records.as_ref(), minute, stored, Self::PER_MINUTE, now + ALERT_COUNT_SECS).await
    }
}

/// The alert as posted: mrkdwn, with Slack's control characters escaped so
/// the text can neither ping nor link.
fn text(alert: &Alert<'_>) -> String {
    let mut text = format!(":rotating_light: {}\nReference: `{}`", escape(alert.what), escape(alert.reference));
    if let Some(thread) = alert.thread {
        let ts: String = thread.thread_ts.as_str().chars().filter(char::is_ascii_digit).collect();
        text.push_str(&format!(
            "\nThread: <https://slack.com/archives/{channel}/p{ts}|open it> in <#{channel}>",
            channel = thread.channel
        ));
    }
    text
}
