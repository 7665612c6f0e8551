//! When the bot speaks in a channel (`response_mode` in the assistant
//! configuration): every reply in a thread it is in (`thread_replies`, the
//! default), only when mentioned (`mentions_only`), or also every new
//! top-level question (`every_question`, for channels that opt in).
//!
//! The worker decides the first two with the configuration it has. The
//! third needs the ingress, which never reads the configuration, to start
//! a turn for a message that names no one: a worker that reads the
//! configuration from the bucket (a cold start whose kept copy is stale, a
//! running worker every five minutes) publishes the channels that opted in
//! (globs) to the table, and the ingress reads them, at most once a minute
//! per instance, only for a top-level message that mentions no one. A cold
//! worker started from the kept copy publishes nothing: its reader did. A
//! configuration change reaches the ingress when a worker next reads the
//! bucket (within five minutes), and within a minute after that.

use crate::Clock;
use crate::glob::glob_matches;
use crate::keys::{KEPT_SECS, RESPONSE_MODES_PARTITION, RESPONSE_MODES_SORT_KEY};
use crate::ports::{PortError, VersionedRecords};
use serde::Deserialize;
use slack::ChannelId;
use std::sync::{Arc, Mutex};

/// How long an ingress instance trusts what it read.
pub const CACHE_SECS: i64 = 60;

/// When the bot speaks in the channels a rule names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResponseMode {
    /// A mention starts a thread the bot is in; every reply there is
    /// answered, mentioned or not.
    #[default]
    ThreadReplies,
    /// Only messages that mention the bot.
    MentionsOnly,
    /// As `thread_replies`, and every new top-level message is a question
    /// to answer (for channels made for asking the bot).
    EveryQuestion,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ResponseRule {
    /// A glob over channel ids (`C0ASK*`).
    pub channels: String,
    pub mode: ResponseMode,
}

/// How the bot answers in `channel`: the first rule that matches.
pub fn mode_in(rules: &[ResponseRule], channel: &str) -> ResponseMode {
    rules.iter().find(|rule| glob_matches(&rule.channels, channel)).map_or_else(ResponseMode::default, |rule| rule.mode)
}

/// The channels (globs) where every new top-level question is answered.
pub struct EveryQuestionChannels {
    records: Arc<dyn VersionedRecords>,
    clock: Arc<dyn Clock>,
    read: Mutex<Option<(i64, Vec<String>)>>,
}

impl EveryQuestionChannels {
    pub fn new(records: Arc<dyn VersionedRecords>, clock: Arc<dyn Clock>) -> Self {
        Self { records, clock, read: Mutex::new(None) }
    }

    /// Publishes the configuration's `every_question` globs (none: the
    /// setting is off everywhere). A plain put: repeating it changes
    /// nothing, and the last worker to start wins.
    pub async fn publish(&self, globs: &[String]) -> Result<(), PortError> {
        let json = serde_json::to_string(globs).expect("globs are strings");
        let now = self.clock.now_unix();
        self.records.put_part(RESPONSE_MODES_PARTITION, RESPONSE_MODES_SORT_KEY, json, now + KEPT_SECS).await
    }

    /// Whether `channel` answers every new question, from what was
    /// published (read again after [`CACHE_SECS`]).
    pub async fn include(&self, channel: &ChannelId) -> Result<bool, PortError> {
        let now = self.clock.now_unix();
        let cached = self.read.lock().expect("cache lock").clone();
        let globs = match cached {
            Some((at, globs)) if now - at < CACHE_SECS => globs,
            _ => {
                let found = self.records.parts(RESPONSE_MODES_PARTITION, RESPONSE_MODES_SORT_KEY).await?;
                let globs: Vec<String> = found
                    .iter()
                    .find(|(sort_key, _)| sort_key == RESPONSE_MODES_SORT_KEY)
                    .and_then(|(_, json)| serde_json::from_str(json).ok())
                    .unwrap_or_default();
                *self.read.lock().expect("cache lock") = Some((now, globs.clone()));
                globs
            }
        };
        Ok(globs.iter().any(|glob| glob_matches(glob, channel.as_str())))
    }
}
