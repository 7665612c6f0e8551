//! Feedback on answers: the 👍 / 👎 buttons under every answer, what a
//! button carries, and how clicks are kept.
//!
//! A click is kept by turn: who, which way, when; never the answer's text
//! (it is in the turn, for as long as the turn is kept). A second click by
//! the same person replaces their first. The worker is the record's one
//! writer; clicks of a thread reach it in order (the thread is the FIFO
//! group), so the last click wins.

use crate::keys::{self, TURN_TTL_SECS};
use crate::messages::{decode_envelope_at, encode_envelope_at};
use crate::ports::{PortError, Put, VersionedRecords};
use crate::retry::{Raced, retry_races};
use crate::turn::TurnId;
use serde::{Deserialize, Serialize};
use slack::UserId;
use std::collections::BTreeMap;
use std::sync::Arc;

/// Which way a person rated an answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rating {
    Positive,
    Negative,
}

impl Rating {
    pub fn as_str(self) -> &'static str {
        match self {
            Rating::Positive => "positive",
            Rating::Negative => "negative",
        }
    }
}

/// What a feedback button carries in Slack's `value`: the turn and the
/// rating, versioned like every button (they stay in Slack across deploys).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedbackButton {
    pub turn_id: TurnId,
    pub rating: Rating,
}

const FEEDBACK_BUTTON_VERSION: u32 = 1;

impl FeedbackButton {
    pub fn encode(&self) -> String {
        encode_envelope_at(FEEDBACK_BUTTON_VERSION, self)
    }

    /// `None` for a value this build did not write (foreign, forged, or
    /// from a version it does not read).
    pub fn decode(value: &str) -> Option<Self> {
        let button: Self = decode_envelope_at(FEEDBACK_BUTTON_VERSION, value).ok()?;
        TurnId::is_well_formed(button.turn_id.as_str()).then_some(button)
    }
}

/// One person's rating of one answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rated {
    pub rating: Rating,
    /// Unix seconds.
    pub at: i64,
}

/// Every rating of a turn's answer, by who gave it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedbackRecord {
    #[serde(skip)]
    pub version: u64,
    pub ratings: BTreeMap<UserId, Rated>,
}

/// Feedback records on any [`VersionedRecords`] (the turn's partition,
/// kind `FEEDBACK`).
#[derive(Clone)]
pub struct FeedbackLog(Arc<dyn VersionedRecords>);

/// Saves tried when another save of the same record came first.
const SAVE_TRIES: u32 = 3;

impl FeedbackLog {
    pub fn new(records: Arc<dyn VersionedRecords>) -> Self {
        Self(records)
    }

    pub async fn load(&self, id: &TurnId) -> Result<FeedbackRecord, PortError> {
        let Some(stored) = self.0.get(&keys::feedback(id)).await? else { return Ok(FeedbackRecord::default()) };
        let mut record: FeedbackRecord = serde_json::from_str(&stored.state)
            .map_err(|err| PortError::new("read feedback", format!("stored state does not parse: {err}")))?;
        record.version = stored.version;
        Ok(record)
    }

    /// Records `user`'s rating of the turn's answer, in place of any
    /// earlier one of theirs.
    pub async fn rate(&self, id: &TurnId, user: &UserId, rated: Rated) -> Result<(), PortError> {
        let saved = retry_races(SAVE_TRIES, |_| async {
            let mut record = self.load(id).await?;
            record.ratings.insert(user.clone(), rated.clone());
            let state = serde_json::to_string(&record).expect("feedback is strings and numbers");
            match crate::store::put_versioned(
                self.0.as_ref(),
                &keys::feedback(id),
                record.version,
                state,
                rated.at + TURN_TTL_SECS,
            )
            .await?
            {
                Put::Written => Ok(()),
                Put::Conflict { .. } => Err(Raced::Lost),
            }
        })
        .await?;
        saved.ok_or_else(|| PortError::new("save feedback", "the record kept changing under the save"))
    }
}

/// What every answer ends with, as Slack's guidelines for agents ask: a
/// line saying an AI wrote it, and the 👍 / 👎 buttons (`context_actions`
/// with `feedback_buttons`), whose values name the turn.
pub fn answer_footer(turn_id: &TurnId) -> Vec<serde_json::Value> {
    let button = |rating: Rating, text: &str, label: &str| {
        serde_json::json!({
            "text": {"type": "plain_text", "text": text},
            "value": FeedbackButton { turn_id: turn_id.clone(), rating }.encode(),
            "accessibility_label": label,
        })
    };
    vec![
        serde_json::json!({
            "type": "context",
            "elements": [{"type": "mrkdwn", "text": AI_DISCLAIMER}],
        }),
        serde_json::json!({
            "type": "context_actions",
            "elements": [{
                "type": "feedback_buttons",
                "action_id": slack::interaction::FEEDBACK_ACTION_ID,
                "positive_button": button(Rating::Positive, "👍", "This answer helped"),
                "negative_button": button(Rating::Negative, "👎", "This answer was wrong or unhelpful"),
            }],
        }),
    ]
}

/// The line under every answer.
pub const AI_DISCLAIMER: &str = "_Written by AI from your team's tools; it can be wrong. Check before you act._";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_footer_says_ai_wrote_it_and_its_buttons_name_the_turn() {
        let footer = answer_footer(&TurnId::new("T1-Ev1"));
        assert_eq!(footer[0]["elements"][0]["text"], AI_DISCLAIMER);
        let buttons = &footer[1]["elements"][0];
        assert_eq!(
            (footer[1]["type"].as_str(), buttons["type"].as_str()),
            (Some("context_actions"), Some("feedback_buttons"))
        );
        let value = buttons["negative_button"]["value"].as_str().unwrap();
        assert_eq!(
            FeedbackButton::decode(value),
            Some(FeedbackButton { turn_id: TurnId::new("T1-Ev1"), rating: Rating::Negative })
        );
    }

    #[test]
    fn buttons_round_trip_and_foreign_values_are_refused() {
        let button = FeedbackButton { turn_id: TurnId::new("T1-Ev1"), rating: Rating::Negative };
        assert_eq!(FeedbackButton::decode(&button.encode()), Some(button.clone()));
        let encoded = button.encode();
        assert!(encoded.contains(r#""rating":"negative""#), "{encoded}");
        for foreign in [
            "positive_feedback",
            "",
            r#"{"v":2,"turn_id":"T1-Ev1","rating":"positive"}"#,
            r#"{"v":1,"turn_id":"T1-Ev1","rating":"meh"}"#,
            r#"{"v":1,"turn_id":"../../etc","rating":"positive"}"#,
        ] {
            assert_eq!(FeedbackButton::decode(foreign), None, "{foreign}");
        }
    }
}
