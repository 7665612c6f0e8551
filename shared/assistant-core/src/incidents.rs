//! Incidents: alerts from monitoring that open a thread in an on-call
//! channel, where the bot investigates before anyone asks.
//!
//! Three sources speak three formats ([`sources`]): CloudWatch alarm state
//! changes (EventBridge puts them on the work queue), Alertmanager and
//! PagerDuty webhooks (the ingress verifies and enqueues them). Each becomes
//! an [`AlertNotice`]: the alert's identity at its source (its
//! *fingerprint*), what happened (fired, acknowledged, resolved) and what
//! makes this notification this one (its *delivery*, repeated by a
//! redelivery).
//!
//! An [`Incident`] is what the bot keeps per fingerprint, one versioned
//! record in the turns table (`INCIDENT#{source}#{hash}` / `INCIDENT`):
//! while it is open, a re-fire adds to its thread instead of opening
//! another; a resolve posts the resolution and the timeline there and
//! closes it; the next fire opens a new incident in a new thread.
//!
//! Exactly once, with any write's answer lost: a notice is applied to the
//! record in one conditional write that also remembers its delivery (a
//! redelivery changes nothing and only finishes what is pending); every
//! message the incident posts is a [`IncidentPost`], marked attempted
//! before `chat.postMessage` and posted with its `ts` after, and carries
//! metadata naming the incident and the post, so a post whose outcome is
//! unknown is looked for before it is made again.

pub mod sources;

use crate::keys;
use crate::messages::ThreadRef;
use crate::ports::{PortError, Put, RecordKey, VersionedRecords};
use crate::retry::{Raced, retry_races};
use crate::store::put_versioned;
use crate::turn::TurnId;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use slack::{ChannelId, EventId, TeamId, Ts, UserId};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

pub use crate::keys::INCIDENT_RECORD_SECS;
/// Deliveries an incident remembers, newest last: enough for every
/// redelivery SQS or a sender makes of the notices it got lately.
const SEEN_DELIVERIES: usize = 64;
/// A re-fire is noted in the thread at most this often.
pub const REFIRE_NOTE_SECS: i64 = 15 * 60;
/// Timeline entries kept; the first (the fire) always stays.
const TIMELINE_ENTRIES: usize = 50;
/// Counts of an hour's openings tried when another count came first.
const COUNT_TRIES: u32 = 5;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertSource {
    Cloudwatch,
    Alertmanager,
    Pagerduty,
    /// Not an alert: a configured schedule's firing, which opens its thread
    /// the same way (`worker-incidents`' schedules). Only the worker's own
    /// sweep makes one; no webhook reads into it.
    Schedule,
}

impl AlertSource {
    pub fn as_str(self) -> &'static str {
        match self {
            AlertSource::Cloudwatch => "cloudwatch",
            AlertSource::Alertmanager => "alertmanager",
            AlertSource::Pagerduty => "pagerduty",
            AlertSource::Schedule => "schedule",
        }
    }

    /// How people name it.
    pub fn display_name(self) -> &'static str {
        match self {
            AlertSource::Cloudwatch => "CloudWatch",
            AlertSource::Alertmanager => "Alertmanager",
            AlertSource::Pagerduty => "PagerDuty",
            AlertSource::Schedule => "Schedule",
        }
    }
}

impl fmt::Display for AlertSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Externally tagged (`"firing"`, `{"acknowledged": {"by": …}}`), as every
/// enum of these records: internally tagged ones and `flatten` buffer the
/// input and cost the worker's binary more.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AlertState {
    Firing,
    /// Someone took it (PagerDuty): noted in the thread.
    Acknowledged {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    Resolved,
}

/// One notification about one alert, as every source is read into.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertNotice {
    pub source: AlertSource,
    /// The alert's identity at its source: the alarm's ARN, Alertmanager's
    /// fingerprint, PagerDuty's incident id.
    pub fingerprint: String,
    /// This notification: an EventBridge event id, a PagerDuty event id,
    /// Alertmanager's alert and notification window. A redelivery repeats
    /// it; a new notification does not.
    pub delivery: String,
    pub state: AlertState,
    pub title: String,
    /// What the source says about it (a description, an alarm's reason).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub summary: String,
    /// What an `alerts[].match` rule is matched against (labels,
    /// `alarm_name`, `service`, `urgency`, …).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// The alert at its source (a console, a dashboard).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// When it happened at the source (Unix seconds).
    pub at: i64,
}

impl AlertNotice {
    /// The FIFO group: one alert's notices are handled in order, different
    /// alerts in parallel.
    pub fn queue_group(&self) -> String {
        format!("alert:{}:{}", self.source, short_hash(&[&self.fingerprint], 32))
    }

    /// The FIFO deduplication id: repeated by a repeated send.
    pub fn dedupe_id(&self) -> String {
        format!("alert:{}:{}", self.source, short_hash(&[&self.fingerprint, &self.delivery], 40))
    }

    fn record_key(&self) -> RecordKey {
        keys::incident(self.source, &short_hash(&[&self.fingerprint], 40))
    }

    /// The id of the incident this notice opens, when it opens one.
    fn incident_id(&self) -> String {
        format!("I{}", short_hash(&[self.source.as_str(), &self.fingerprint, &self.delivery], 20))
    }
}

/// A CloudWatch alarm state change as the template's EventBridge rule puts
/// it on the work queue (`{"v":1,"kind":"cloudwatch_alarm","event":…}`):
/// the whole event, read by [`sources::cloudwatch`] in the worker.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CloudwatchAlarm {
    pub event: serde_json::Value,
}

fn short_hash(parts: &[&str], hex_chars: usize) -> String {
    let mut hasher = Sha256::new();
    for part in parts {
        hasher.update((part.len() as u64).to_be_bytes());
        hasher.update(part.as_bytes());
    }
    let mut hex = hex::encode(hasher.finalize());
    hex.truncate(hex_chars);
    hex
}

/// Where a matched alert goes, as the configuration decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AlertRoute {
    pub channel: ChannelId,
    /// Instructions for the investigation (a bucket object); the bundled
    /// ones without it.
    pub prompt_key: Option<String>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum IncidentStatus {
    Open,
    Resolved,
}

/// How loud an incident may be, decided once when it opens from how many
/// incidents the channel opened that hour (an alert storm).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Loudness {
    /// A thread, and the bot investigates in it.
    Investigate,
    /// A thread, not investigated unless someone asks in it.
    ThreadOnly,
    /// Recorded, not posted: the channel had its hour's threads.
    Quiet,
}

/// Something that happened to an incident, for its timeline.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Happening {
    Fired,
    FiredAgain,
    Acknowledged {
        #[serde(default, skip_serializing_if = "Option::is_none")]
        by: Option<String>,
    },
    InvestigationStarted,
    Resolved,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TimelineEntry {
    /// Unix seconds.
    pub at: i64,
    pub happening: Happening,
}

/// A message the incident posts: the root (which makes the thread), or a
/// note in its thread.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IncidentPost {
    /// Unique within the incident (`root`, `refire-2`, `resolved`): the
    /// message's metadata names it.
    pub key: String,
    pub what: PostKind,
    #[serde(default)]
    pub state: PostState,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PostKind {
    Root,
    FiredAgain { at: i64, count: u32 },
    Acknowledged { at: i64, by: Option<String> },
    Resolved { at: i64 },
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PostState {
    #[default]
    Pending,
    /// `chat.postMessage` began; its outcome was not recorded.
    Attempted,
    Posted {
        ts: Ts,
    },
}

/// One alert's incident, open or the last one closed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Incident {
    /// `I…`, from the notice that opened it. The investigation's turn is
    /// `{team}-{id}`, and every message the incident posts names it.
    pub id: String,
    pub source: AlertSource,
    pub fingerprint: String,
    pub status: IncidentStatus,
    pub team: TeamId,
    pub channel: ChannelId,
    pub title: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub summary: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prompt_key: Option<String>,
    pub loudness: Loudness,
    /// When it fired at the source (Unix seconds).
    pub fired_at: i64,
    #[serde(default)]
    pub fired_again: u32,
    pub timeline: Vec<TimelineEntry>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub posts: Vec<IncidentPost>,
    /// The investigation was handed to the work queue (its turn's id is
    /// the incident's).
    #[serde(default)]
    pub investigation_queued: bool,
    /// Deliveries applied, newest last.
    #[serde(default)]
    pub seen: Vec<String>,
    /// When a re-fire was last noted in the thread.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refire_noted_at: Option<i64>,
}

impl Incident {
    /// The root message's `ts`, once posted: the incident's thread.
    pub fn root_ts(&self) -> Option<&Ts> {
        self.posts.iter().find(|post| post.key == ROOT).and_then(|post| match &post.state {
            PostState::Posted { ts } => Some(ts),
            _ => None,
        })
    }

    pub fn thread(&self) -> Option<ThreadRef> {
        let thread_ts = self.root_ts()?.clone();
        Some(ThreadRef { team: self.team.clone(), channel: self.channel.clone(), thread_ts })
    }

    /// The investigation's turn: the incident's id as the event that
    /// started it, in the incident's thread.
    pub fn investigation_event(&self) -> EventId {
        EventId::new(&self.id)
    }

    /// The id every message of the incident carries in its metadata.
    pub fn message_owner(&self) -> TurnId {
        TurnId::new(format!("{}-{}", self.team, self.id))
    }

    /// Posts not known to be posted, in order (the root first).
    pub fn unposted(&self) -> impl Iterator<Item = &IncidentPost> {
        self.posts.iter().filter(|post| !matches!(post.state, PostState::Posted { .. }))
    }

    pub fn post_mut(&mut self, key: &str) -> Option<&mut IncidentPost> {
        self.posts.iter_mut().find(|post| post.key == key)
    }

    fn note(&mut self, at: i64, happening: Happening) {
        self.timeline.push(TimelineEntry { at, happening });
        if self.timeline.len() > TIMELINE_ENTRIES {
            self.timeline.remove(1);
        }
    }

    fn post(&mut self, key: String, what: PostKind) {
        if self.loudness != Loudness::Quiet {
            self.posts.push(IncidentPost { key, what, state: PostState::Pending });
        }
    }

    fn saw(&mut self, delivery: &str) {
        self.seen.push(delivery.to_owned());
        if self.seen.len() > SEEN_DELIVERIES {
            self.seen.remove(0);
        }
    }
}

/// The key of an incident's root message.
pub const ROOT: &str = "root";

/// An alert's record as stored: its version, and its incident (none before
/// the alert's first fire).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct IncidentRecord {
    pub version: u64,
    pub incident: Option<Incident>,
}

/// What a notice did to the record.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Applied {
    /// The record changed: save it, then finish its pending work.
    Changed,
    /// Opening an incident needs to know how loud it may be first
    /// ([`Incidents::count_opening`]); apply again with it.
    NeedsLoudness,
    /// Nothing to change (why, for the log); pending work may remain from
    /// an earlier delivery whose finishing was cut short.
    Unchanged(&'static str),
}

impl IncidentRecord {
    /// Applies `notice`, routed to `route`, in workspace `team`, at `now`
    /// (`loudness`: what the channel's hour allows, known once asked for).
    /// A re-fire is timed when it arrives: sources repeat the alert's start.
    pub fn apply(
        &mut self,
        notice: &AlertNotice,
        route: &AlertRoute,
        team: &TeamId,
        now: i64,
        loudness: Option<Loudness>,
    ) -> Applied {
        let open = self.incident.as_mut().filter(|incident| incident.status == IncidentStatus::Open);
        if let Some(incident) = &open
            && incident.seen.iter().any(|seen| seen == &notice.delivery)
        {
            return Applied::Unchanged("already applied");
        }
        match (&notice.state, open) {
            (AlertState::Firing, None) => {
                if self.incident.as_ref().is_some_and(|closed| closed.seen.contains(&notice.delivery)) {
                    return Applied::Unchanged("already applied");
                }
                let Some(loudness) = loudness else { return Applied::NeedsLoudness };
                let mut incident = Incident {
                    id: notice.incident_id(),
                    source: notice.source,
                    fingerprint: notice.fingerprint.clone(),
                    status: IncidentStatus::Open,
                    team: team.clone(),
                    channel: route.channel.clone(),
                    title: notice.title.clone(),
                    summary: notice.summary.clone(),
                    url: notice.url.clone(),
                    labels: notice.labels.clone(),
                    prompt_key: route.prompt_key.clone(),
                    loudness,
                    fired_at: notice.at,
                    fired_again: 0,
                    timeline: Vec::new(),
                    posts: Vec::new(),
                    investigation_queued: false,
                    seen: Vec::new(),
                    refire_noted_at: None,
                };
                incident.note(notice.at, Happening::Fired);
                incident.post(ROOT.to_owned(), PostKind::Root);
                incident.saw(&notice.delivery);
                self.incident = Some(incident);
                Applied::Changed
            }
            (AlertState::Firing, Some(incident)) => {
                incident.fired_again += 1;
                let count = incident.fired_again;
                let at = now.max(notice.at);
                incident.note(at, Happening::FiredAgain);
                // A flapping alert is counted every time, and noted in its
                // thread at most once per REFIRE_NOTE_SECS.
                if incident.refire_noted_at.is_none_or(|noted| at - noted >= REFIRE_NOTE_SECS) {
                    incident.post(format!("refire-{count}"), PostKind::FiredAgain { at, count });
                    incident.refire_noted_at = Some(at);
                }
                incident.saw(&notice.delivery);
                Applied::Changed
            }
            (AlertState::Acknowledged { by }, Some(incident)) => {
                incident.note(notice.at, Happening::Acknowledged { by: by.clone() });
                let key = format!("ack-{}", incident.timeline.len());
                incident.post(key, PostKind::Acknowledged { at: notice.at, by: by.clone() });
                incident.saw(&notice.delivery);
                Applied::Changed
            }
            // A resolve from before this incident fired belongs to an
            // earlier one (a sender's late retry): it closes nothing.
            (AlertState::Resolved, Some(incident)) if notice.at < incident.fired_at => {
                Applied::Unchanged("a resolve older than the incident")
            }
            (AlertState::Resolved, Some(incident)) => {
                incident.status = IncidentStatus::Resolved;
                incident.note(notice.at, Happening::Resolved);
                incident.post("resolved".to_owned(), PostKind::Resolved { at: notice.at });
                incident.saw(&notice.delivery);
                Applied::Changed
            }
            (AlertState::Acknowledged { .. } | AlertState::Resolved, None) => Applied::Unchanged("no open incident"),
        }
    }
}

/// Incident records and the channels' hourly counts, on the turns table.
#[derive(Clone)]
pub struct Incidents(Arc<dyn VersionedRecords>);

/// A conditional write lost to a concurrent one: re-read and apply again.
#[derive(Debug, thiserror::Error)]
#[error("the incident record changed since it was read")]
pub struct Changed;

#[derive(Debug, thiserror::Error)]
pub enum IncidentError {
    #[error(transparent)]
    Changed(#[from] Changed),
    #[error(transparent)]
    Port(#[from] PortError),
    #[error("incident record unreadable: {0}")]
    Corrupt(#[source] serde_json::Error),
}

impl Incidents {
    pub fn new(records: Arc<dyn VersionedRecords>) -> Self {
        Self(records)
    }

    pub async fn load(&self, notice: &AlertNotice) -> Result<IncidentRecord, IncidentError> {
        let Some(stored) = self.0.get(&notice.record_key()).await? else { return Ok(IncidentRecord::default()) };
        let incident = serde_json::from_str(&stored.state).map_err(IncidentError::Corrupt)?;
        Ok(IncidentRecord { version: stored.version, incident: Some(incident) })
    }

    /// Saves `record` where it is still at its version (a lost answer to
    /// this very write counts as written), then bumps the version.
    pub async fn save(
        &self,
        notice: &AlertNotice,
        record: &mut IncidentRecord,
        now_unix: i64,
    ) -> Result<(), IncidentError> {
        let Some(incident) = &record.incident else { return Ok(()) };
        let state = serde_json::to_string(incident).expect("incidents are strings and numbers");
        let expires_at = now_unix + INCIDENT_RECORD_SECS;
        match put_versioned(self.0.as_ref(), &notice.record_key(), record.version, state, expires_at).await? {
            Put::Written => {
                record.version += 1;
                Ok(())
            }
            Put::Conflict { .. } => Err(Changed.into()),
        }
    }

    /// Remembers which incident `thread` is (for its postmortem): an item
    /// beside the thread naming the incident's record; the same bytes again
    /// on a retry.
    pub async fn point_thread(
        &self,
        notice: &AlertNotice,
        thread: &ThreadRef,
        now_unix: i64,
    ) -> Result<(), IncidentError> {
        let pointer = serde_json::json!({ "record": notice.record_key().partition }).to_string();
        Ok(self
            .0
            .put_part(&keys::incident_thread(thread), keys::INCIDENT_SORT_KEY, pointer, now_unix + INCIDENT_RECORD_SECS)
            .await?)
    }

    /// The incident whose thread `thread` is, if it is one.
    pub async fn of_thread(&self, thread: &ThreadRef) -> Result<Option<Incident>, IncidentError> {
        let parts = self.0.parts(&keys::incident_thread(thread), keys::INCIDENT_SORT_KEY).await?;
        let Some((_, pointer)) = parts.first() else { return Ok(None) };
        let pointer: serde_json::Value = serde_json::from_str(pointer).map_err(IncidentError::Corrupt)?;
        let Some(partition) = pointer["record"].as_str() else { return Ok(None) };
        let key = keys::incident_at(partition.to_owned());
        let Some(stored) = self.0.get(&key).await? else { return Ok(None) };
        let incident: Incident = serde_json::from_str(&stored.state).map_err(IncidentError::Corrupt)?;
        // The record may since hold a later incident of the same alert.
        Ok(incident.root_ts().is_some_and(|root| root == &thread.thread_ts).then_some(incident))
    }

    /// Counts an incident opening in `channel` this hour and says how loud
    /// it may be: the first `investigate` investigated, up to `threads`
    /// with a thread, the rest quiet. A count whose answer was lost counts
    /// once; a crash after the count and before the incident's save counts
    /// the redelivery again (louder never, quieter at worst).
    pub async fn count_opening(
        &self,
        channel: &ChannelId,
        limits: StormLimits,
        now_unix: i64,
    ) -> Result<(Loudness, u32), IncidentError> {
        let hour = now_unix.div_euclid(3600);
        let key = keys::incident_rate(channel, hour);
        let counted: Result<_, IncidentError> = retry_races(COUNT_TRIES, |_| async {
            let stored = self.0.get(&key).await.map_err(Raced::failed)?;
            let (version, opened) = match &stored {
                Some(stored) => {
                    (stored.version, serde_json::from_str::<HourCount>(&stored.state).map_or(0, |c| c.opened))
                }
                None => (0, 0),
            };
            let opened = opened + 1;
            let state = serde_json::to_string(&HourCount { opened }).expect("a count serializes");
            match put_versioned(self.0.as_ref(), &key, version, state, keys::incident_rate_expires_at(hour))
                .await
                .map_err(Raced::failed)?
            {
                Put::Written => Ok((limits.loudness(opened), opened)),
                Put::Conflict { .. } => Err(Raced::Lost),
            }
        })
        .await;
        counted?.ok_or_else(|| Changed.into())
    }
}

#[derive(Serialize, Deserialize)]
struct HourCount {
    opened: u32,
}

/// How many incidents a channel opens an hour before it is an alert storm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StormLimits {
    /// Investigated by the model (each costs a turn).
    pub investigate: u32,
    /// With a thread of their own.
    pub threads: u32,
}

impl Default for StormLimits {
    fn default() -> Self {
        Self { investigate: 5, threads: 30 }
    }
}

impl StormLimits {
    pub fn loudness(self, opened: u32) -> Loudness {
        if opened <= self.investigate {
            Loudness::Investigate
        } else if opened <= self.threads {
            Loudness::ThreadOnly
        } else {
            Loudness::Quiet
        }
    }
}

/// The workspace and bot user an incident's thread belongs to: alerts come
/// from no Slack event, so the bot asks Slack who it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BotIdentity {
    pub team: TeamId,
    pub user: UserId,
}

#[cfg(test)]
mod tests;
