//! A slash command's `response_url`, counted: Slack accepts at most five
//! posts to it, within thirty minutes of the command
//! (<https://docs.slack.dev/interactivity/handling-user-interaction#message_responses>).
//! Each post is claimed first, by name, in the turn's partition
//! (`TURN#{turn}` / `RESPONSE_URL`, a conditional put):
//!
//! - a name already claimed is not posted again: at most once, also when
//!   the claim or the post lost its answer (a redelivery finds the claim);
//! - a sixth claim, or one after the URL's lifetime (less a margin for the
//!   post itself), is refused, and the caller says what it says elsewhere;
//! - two claims at once (two deliveries) conflict on the version, and the
//!   loser reads again.
//!
//! A claim whose post then fails is spent: what the URL would have shown
//! is always also where the person finds it for good (their DM thread),
//! so a lost ephemeral copy loses nothing.

use crate::keys;
use crate::ports::{PortError, Put, VersionedRecords};
use crate::store::put_versioned;
use crate::turn::TurnId;
use serde::{Deserialize, Serialize};
use std::sync::Arc;

/// Slack's limit on posts to one `response_url`.
pub const MAX_USES: usize = 5;
/// How long a `response_url` works after the command (seconds).
pub const LIFETIME_SECS: i64 = 30 * 60;
/// Claims stop this long before the URL expires: the post must arrive in time.
pub const MARGIN_SECS: i64 = 60;

/// Whether a post may be sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// This post is claimed: send it (once).
    Granted,
    /// A post of this name was claimed before (sent, or lost): not again.
    AlreadyClaimed,
    /// Five posts were claimed.
    Exhausted,
    /// The URL's thirty minutes are over (or nearly).
    Expired,
}

/// The claims made so far, by name, in order.
#[derive(Debug, Default, Serialize, Deserialize)]
struct Uses {
    claimed: Vec<String>,
}

/// The claims of commands' `response_url` posts, on the turns table.
#[derive(Clone)]
pub struct ResponseUrls {
    records: Arc<dyn VersionedRecords>,
}

impl ResponseUrls {
    pub fn new(records: Arc<dyn VersionedRecords>) -> Self {
        Self { records }
    }

    /// Claims post `name` through the `response_url` of the command that
    /// started `turn`, asked at `asked_at` (Unix seconds); `now` is the clock.
    pub async fn claim(&self, turn: &TurnId, name: &str, asked_at: i64, now: i64) -> Result<Claim, PortError> {
        let key = keys::response_url(turn);
        // Each conflict is another delivery's claim landing first: a few
        // reads settle it (at most five claims can ever land).
        for _ in 0..=MAX_USES {
            let stored = self.records.get(&key).await?;
            let (version, mut uses) = match &stored {
                Some(record) => (
                    record.version,
                    serde_json::from_str::<Uses>(&record.state)
                        .map_err(|err| PortError::new("response_url uses", err.to_string()))?,
                ),
                None => (0, Uses::default()),
            };
            if uses.claimed.iter().any(|claimed| claimed == name) {
                return Ok(Claim::AlreadyClaimed);
            }
            if uses.claimed.len() >= MAX_USES {
                return Ok(Claim::Exhausted);
            }
            if now >= asked_at + LIFETIME_SECS - MARGIN_SECS {
                return Ok(Claim::Expired);
            }
            uses.claimed.push(name.to_owned());
            let state = serde_json::to_string(&uses).expect("strings");
            match put_versioned(self.records.as_ref(), &key, version, state, now + keys::TURN_TTL_SECS).await? {
                Put::Written => return Ok(Claim::Granted),
                Put::Conflict { .. } => continue,
            }
        }
        Err(PortError::new("response_url uses", "claims kept conflicting"))
    }
}
