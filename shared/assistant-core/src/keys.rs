//! Every key of the turns table, spelled once: for each kind of record its
//! partition and sort key, who writes it, and how long it is kept (the TTL
//! constant beside it). Everything else (stores, adapters, the worker's
//! crates) asks this module for a key and never spells one.
//!
//! The spellings are a contract: `template.yaml` grants each function the
//! partitions it may write by prefix (`dynamodb:LeadingKeys`), items already
//! stored are found by these keys, and the records table in
//! `docs/src/architecture.md` lists every prefix (`tests/docs.rs` checks it
//! against the code). The tests below pin each spelling.
//!
//! | record | partition / sort key | written by | kept |
//! |---|---|---|---|
//! | event claim | `EVENT#{team}#{event_id}` / `EVENT` | ingress; worker (an incident's thread) | [`EVENT_CLAIM_TTL_SECS`] |
//! | bot thread | `THREAD#{team}#{channel}#{thread_ts}` / `THREAD` | ingress; worker, in the claim | [`BOT_THREAD_TTL_SECS`] |
//! | action token | `ACTION_TOKEN#{turn_id}` / `TOKEN` | ingress, in the claim | [`ACTION_TOKEN_TTL_SECS`] |
//! | what a person has in view | `CONTEXT#{team}#{user}` / `CONTEXT` | ingress | [`USER_CONTEXT_TTL_SECS`] |
//! | sign-in state | `OAUTH_STATE#{state}` / `STATE` | worker; ingress (binds, takes) | [`STATE_TTL_SECS`] |
//! | sign-in outcome | `OAUTH_OUTCOME#{state}` / `OUTCOME` | worker | the state's expiry |
//! | registered OAuth client | `OAUTH_CLIENT#{hash}` / `CLIENT` | worker | [`CLIENT_TTL_SECS`] |
//! | turn head, parts, delivery, stream, feedback, a command's response_url posts | `TURN#{turn_id}` / `STATE`, `PART#…`, `DELIVERY`, `STREAM`, `FEEDBACK`, `RESPONSE_URL` | worker; responder (`DELIVERY`) | [`TURN_TTL_SECS`] |
//! | approval deadline | `APPROVAL_TIMERS` / `{due_at:012}#{turn_id}#{tool_use_id}` | worker | [`KEPT_AFTER_DUE_SECS`] |
//! | thread grant | `GRANTS#{team}#{channel}#{thread_ts}` / `GRANT#{scope}[#{user}]` | worker | [`GRANT_RECORD_SECS`] |
//! | a person's sealed tokens | `USER#{team}#{user}` / `TOKENS#{provider}` | worker | [`TOKENS_TTL_SECS`] |
//! | channel memory | `MEMORY#{team}#{channel}` / `THREAD#{thread_ts}#{turn_id}` | worker | [`DEFAULT_RETENTION_SECS`] unless configured |
//! | incident | `INCIDENT#{source}#{hash}` / `INCIDENT` | worker | [`INCIDENT_RECORD_SECS`] |
//! | incident count per hour | `INCIDENT_RATE#{channel}#{hour}` / `RATE` | worker | [`incident_rate_expires_at`] |
//! | a thread's incident | `INCIDENT_THREAD#{team}#{channel}#{thread_ts}` / `INCIDENT` | worker | [`INCIDENT_RECORD_SECS`] |
//! | postmortem canvas | `POSTMORTEM#{team}#{channel}#{thread_ts}` / `POSTMORTEM` | worker | [`RECORD_SECS`] |
//! | operator alert sent | `ALERT#{reference}` / `SENT` | worker, responder | [`REMEMBERED_SECS`] |
//! | operator alerts a minute | `ALERTS#{minute}` / `COUNT` | worker, responder | [`ALERT_COUNT_SECS`] |
//! | a workspace's stream starts a minute | `STREAM_STARTS#{team}#{minute}` / `COUNT` | worker | [`STREAM_STARTS_SECS`] |
//! | response modes | `CONFIG` / `RESPONSE_MODES` | worker | [`KEPT_SECS`] |
//! | kept assistant configuration | `WORKER#CONFIG` / `ASSISTANT` | worker | [`KEPT_FOR_SECS`] |
//! | health check's read | `HEALTH#check` / `HEALTH` | nobody | none |
//! | spend counter | `SPEND#DEPLOYMENT`, `SPEND_PERSON#{team}#{user}`, `SPEND_CHANNEL#{team}#{channel}` / `SPEND_DAY`, `SPEND_MONTH` | worker | its period's end and [`SPEND_KEPT_AFTER_SECS`] |
//! | a form a server asks the person who asked to fill in | `ELICIT#{id}` / `FORM` | worker (opens, closes on expiry); ingress (the person's answer or decline) | its expiry and [`crate::elicitation::FORM_KEPT_SECS`] |
//! | a team the app left | `DEPARTED#{team}` / `TEAM` | worker | [`DEPARTURE_SECS`] |
//! | a person who left | `DEPARTED#{team}#{user}` / `PERSON` | worker | [`DEPARTURE_SECS`] |
//! | a team's kept partitions | `TEAM_RECORDS#{team}` / `KEPT#{partition}` | worker | the record's own |
//! | an organization's workspaces with kept partitions | `ORG_TEAMS#{org}` / `TEAM#{team}#{kind}` | worker | the record's own |
//!
//! A [`RecordKey`] names a versioned record (one item, written through
//! [`crate::store::put_versioned`]); records kept as items beside a
//! partition (`VersionedRecords::put_part`) have a partition function and a
//! sort key (or sort-key prefix) function.

use crate::messages::ThreadRef;
use crate::ports::RecordKey;
use crate::turn::TurnId;
use slack::{ChannelId, EnterpriseId, EventId, TeamId, Ts, UserId};
use std::fmt::Display;

// ---------------------------------------------------------------------------
// What the ingress claims (`adapters-aws`'s `DynamoClaims`, one transaction).

/// How long an event id is remembered: Slack retries for about an hour, so
/// a few days is generous.
pub const EVENT_CLAIM_TTL_SECS: i64 = 3 * 24 * 3600;

/// An event claim: the event started work. Written by the ingress (a Slack
/// event) and by the worker (an incident's thread, claimed with the
/// incident's id), both through `EventClaims::claim`.
pub fn event_claim(team: &TeamId, event_id: &EventId) -> RecordKey {
    RecordKey { partition: format!("EVENT#{team}#{event_id}"), kind: "EVENT" }
}

/// How long a thread counts as one the bot takes part in after its last turn.
pub const BOT_THREAD_TTL_SECS: i64 = 30 * 24 * 3600;

/// A thread the bot takes part in. Written by the ingress, and the worker
/// for an incident's thread, in the claim's transaction.
pub fn bot_thread(thread: &ThreadRef) -> RecordKey {
    RecordKey { partition: format!("THREAD#{}#{}#{}", thread.team, thread.channel, thread.thread_ts), kind: "THREAD" }
}

/// How long an action token is kept: Slack's expire within minutes.
pub const ACTION_TOKEN_TTL_SECS: i64 = 15 * 60;

/// A person's action token, by the turn their event starts
/// (`{team}-{event_id}`, [`TurnId::for_claim`]). Written by the ingress, a
/// third put in the claim's transaction; read by the worker.
pub fn action_token(turn: &TurnId) -> RecordKey {
    RecordKey { partition: format!("ACTION_TOKEN#{turn}"), kind: "TOKEN" }
}

// ---------------------------------------------------------------------------
// What a person has in view (`adapters-aws`'s `DynamoContexts`).

/// How long what a person has in view is remembered: a question asked
/// within it gets it as context.
pub const USER_CONTEXT_TTL_SECS: i64 = 3600;

/// What a person has in view beside the bot's DM. Written by the ingress
/// (`UserContexts::remember`), overwritten by each change; read by the worker.
pub fn user_context(team: &TeamId, user: &UserId) -> RecordKey {
    RecordKey { partition: format!("CONTEXT#{team}#{user}"), kind: "CONTEXT" }
}

// ---------------------------------------------------------------------------
// Sign-in (`crate::oauth`).

/// How long a sign-in may take, from the Connect button to the callback.
pub const STATE_TTL_SECS: i64 = 10 * 60;

/// A sign-in's state. Written by the worker (`ConnectStates::open`, `arm`,
/// `burn`) and the ingress (`bind_browser`, `take`); kept [`STATE_TTL_SECS`].
pub fn oauth_state(state: &str) -> RecordKey {
    RecordKey { partition: format!("OAUTH_STATE#{state}"), kind: "STATE" }
}

/// How a sign-in's code exchange ended, in a partition of its own: the
/// worker writes it (`ConnectStates::record_outcome`), the ingress only reads it
/// (and cannot forge "Connected"). Kept until the state expires.
pub fn oauth_outcome(state: &str) -> RecordKey {
    RecordKey { partition: format!("OAUTH_OUTCOME#{state}"), kind: "OUTCOME" }
}

/// How long a registered client id is kept without a worker reading it.
pub const CLIENT_TTL_SECS: i64 = 5 * 365 * 24 * 3600;

/// The client id registered at an MCP server's authorization server, by
/// the hash of the issuer and the callback. Written by the worker
/// (`ConnectStates::keep_registered_client`).
pub fn oauth_client(hash: &str) -> RecordKey {
    RecordKey { partition: format!("OAUTH_CLIENT#{hash}"), kind: "CLIENT" }
}

/// How long tokens are kept without being used or refreshed.
pub const TOKENS_TTL_SECS: i64 = 90 * 24 * 3600;

/// A person's items: their sealed tokens, one per provider. Written by the
/// worker (`SealedVault`'s `TokenVault::put`).
pub fn user_partition(team: &TeamId, user: &UserId) -> String {
    format!("USER#{team}#{user}")
}

/// Where every sealed-token item of a person sorts.
pub const TOKENS_SORT_PREFIX: &str = "TOKENS#";

/// A person's sealed tokens at `provider`, under [`user_partition`].
pub fn user_tokens(provider: &str) -> String {
    format!("{TOKENS_SORT_PREFIX}{provider}")
}

// ---------------------------------------------------------------------------
// A turn's partition (`crate::store`, `crate::feedback`).

/// How long a turn (and its delivery record) is kept after its last change.
pub const TURN_TTL_SECS: i64 = 30 * 24 * 3600;

/// The partition holding a turn's records.
pub fn turn_partition(turn: &TurnId) -> String {
    format!("TURN#{turn}")
}

/// A turn's head (all but the transcript). The worker is its one writer
/// (`RecordTurns`: `TurnStore::create`, `save`).
pub fn turn_state(turn: &TurnId) -> RecordKey {
    RecordKey { partition: turn_partition(turn), kind: "STATE" }
}

/// Where a turn's transcript parts sort, under [`turn_partition`].
pub const TURN_PART_PREFIX: &str = "PART#";

/// One transcript part, named by the save that wrote it. Written by the
/// worker, before the head that names it.
pub fn turn_part(name: &str) -> String {
    format!("{TURN_PART_PREFIX}{name}")
}

/// A turn's delivery record. The responder is its one writer
/// (`RecordDeliveries`: `DeliveryLog::save`).
pub fn delivery(turn: &TurnId) -> RecordKey {
    RecordKey { partition: turn_partition(turn), kind: "DELIVERY" }
}

/// The answer the worker streamed into Slack. The worker is its one writer
/// (`StreamLog::save`).
pub fn stream(turn: &TurnId) -> RecordKey {
    RecordKey { partition: turn_partition(turn), kind: "STREAM" }
}

/// The posts claimed through the `response_url` of the slash command that
/// started a turn. Written by the worker (`response_url::claim`).
pub fn response_url(turn: &TurnId) -> RecordKey {
    RecordKey { partition: turn_partition(turn), kind: "RESPONSE_URL" }
}

/// Ratings of a turn's answer. Written by the worker (`FeedbackLog::rate`).
pub fn feedback(turn: &TurnId) -> RecordKey {
    RecordKey { partition: turn_partition(turn), kind: "FEEDBACK" }
}

// ---------------------------------------------------------------------------
// Approval deadlines (`adapters-aws`'s `DynamoTimers`).

/// How long a timer's item is kept after it was due.
pub const KEPT_AFTER_DUE_SECS: i64 = 7 * 24 * 3600;

/// The one partition holding every approval deadline. Written by the worker
/// (`ApprovalTimers::set`, `clear`), swept by it.
pub const APPROVAL_TIMERS_PARTITION: &str = "APPROVAL_TIMERS";

/// A deadline's sort key: the due time first (zero-padded Unix seconds), so
/// the sweep is one query for keys up to [`approval_timers_due_by`].
pub fn approval_timer(due_at: i64, turn: &TurnId, tool_use_id: &str) -> String {
    format!("{:012}#{turn}#{tool_use_id}", due_at.max(0))
}

/// The highest sort key of a deadline due at `now_unix` or before: `$`
/// sorts after `#`, so every key due then or earlier, none later.
pub fn approval_timers_due_by(now_unix: i64) -> String {
    format!("{:012}$", now_unix.max(0))
}

// ---------------------------------------------------------------------------
// Thread grants (`crate::grants`).

/// How long a grant's record is kept after it ended.
pub const GRANT_RECORD_SECS: i64 = 30 * 24 * 3600;

/// A thread's grants ("Approve for this thread"). Written by the worker
/// (`ThreadGrants::put`).
pub fn grants_partition(thread: &ThreadRef) -> String {
    format!("GRANTS#{}#{}#{}", thread.team, thread.channel, thread.thread_ts)
}

/// Where every grant of a thread sorts.
pub const GRANT_SORT_PREFIX: &str = "GRANT#";

/// One item per scope and person, so two people's grants of one tool in a
/// thread stand (and are revoked) apart.
pub fn grant(scope: &str, for_user: Option<&UserId>) -> String {
    match for_user {
        Some(user) => format!("{GRANT_SORT_PREFIX}{scope}#{user}"),
        None => format!("{GRANT_SORT_PREFIX}{scope}"),
    }
}

// ---------------------------------------------------------------------------
// Channel memory (`crate::memory`).

/// How long a memory record is kept by default (90 days); the
/// configuration's `memory.retention_days` decides.
pub const DEFAULT_RETENTION_SECS: i64 = 90 * 24 * 3600;

/// A channel's memory of settled turns. Written by the worker
/// (`ChannelMemory::remember`, `forget_thread`).
pub fn memory_partition(team: &TeamId, channel: &ChannelId) -> String {
    format!("MEMORY#{team}#{channel}")
}

/// Every memory record's sort key starts so (DynamoDB's `begins_with`
/// takes no empty prefix), then the thread, so a thread's records are one
/// prefix ([`memory_thread`]).
pub const MEMORY_SORT_PREFIX: &str = "THREAD#";

/// The sort-key prefix of one thread's memory records.
pub fn memory_thread(thread_ts: &Ts) -> String {
    format!("{MEMORY_SORT_PREFIX}{thread_ts}#")
}

/// One settled turn's memory record.
pub fn memory(thread_ts: &Ts, turn: &TurnId) -> String {
    format!("{}{turn}", memory_thread(thread_ts))
}

// ---------------------------------------------------------------------------
// Incidents (`crate::incidents`, `worker-incidents`).

/// How long a closed incident's record stays (its timeline is in its
/// thread; the record only answers "is this fingerprint open?").
pub const INCIDENT_RECORD_SECS: i64 = 30 * 24 * 3600;

/// An alert's incident, by its source and the hash of its fingerprint.
/// Written by the worker (`Incidents::save`).
pub fn incident(source: impl Display, fingerprint_hash: &str) -> RecordKey {
    incident_at(format!("INCIDENT#{source}#{fingerprint_hash}"))
}

/// The incident record in `partition`, as a thread's pointer names it.
pub fn incident_at(partition: String) -> RecordKey {
    RecordKey { partition, kind: INCIDENT_SORT_KEY }
}

/// The sort key of an incident and of a thread's pointer to one.
pub const INCIDENT_SORT_KEY: &str = "INCIDENT";

/// A channel's incidents opened in an hour (storm limits). Written by the
/// worker (`Incidents::count_opening`); kept until
/// [`incident_rate_expires_at`].
pub fn incident_rate(channel: &ChannelId, hour: i64) -> RecordKey {
    RecordKey { partition: format!("INCIDENT_RATE#{channel}#{hour}"), kind: "RATE" }
}

/// An hour's incident count expires at the end of the next hour.
pub fn incident_rate_expires_at(hour: i64) -> i64 {
    (hour + 2) * 3600
}

/// Which incident a thread is (for its postmortem): one item under this
/// partition, sort key [`INCIDENT_SORT_KEY`]. Written by the worker
/// (`Incidents::point_thread`); kept [`INCIDENT_RECORD_SECS`].
pub fn incident_thread(thread: &ThreadRef) -> String {
    format!("INCIDENT_THREAD#{}#{}#{}", thread.team, thread.channel, thread.thread_ts)
}

/// How long the thread's postmortem record is kept.
pub const RECORD_SECS: i64 = 365 * 24 * 3600;

/// A thread's postmortem canvas. Written by the worker (`worker-incidents`'s
/// `write_postmortem` tool).
pub fn postmortem(thread: &ThreadRef) -> RecordKey {
    RecordKey {
        partition: format!("POSTMORTEM#{}#{}#{}", thread.team, thread.channel, thread.thread_ts),
        kind: "POSTMORTEM",
    }
}

// ---------------------------------------------------------------------------
// Departures: the app left a team, or a person left (`crate::departures`).

/// How long a departure is remembered: longer than any work for the team
/// or the person can wait in a queue or a paused turn (a turn is kept 30
/// days).
pub const DEPARTURE_SECS: i64 = TURN_TTL_SECS;

/// The app was uninstalled from `team` (or its bot token revoked), at the
/// time the record holds. Written by the worker (`Departures::depart`).
pub fn departed_team(team: &TeamId) -> RecordKey {
    RecordKey { partition: format!("DEPARTED#{team}"), kind: "TEAM" }
}

/// `user` of `team` left (deleted, or their token revoked). Written by the
/// worker (`Departures::depart`).
pub fn departed_person(team: &TeamId, user: &UserId) -> RecordKey {
    RecordKey { partition: format!("DEPARTED#{team}#{user}"), kind: "PERSON" }
}

/// Where a team's records about people and channels are listed: one item
/// per partition kept for the team (its sort key is that partition: a
/// channel's memory, a thread's grants, a person's tokens), written beside
/// the records themselves, so the team's data is found by one query, never
/// a scan of the table. Written by the worker (`TeamRecords::note`); each
/// item expires with the last record it lists.
pub fn team_records(team: &TeamId) -> String {
    format!("TEAM_RECORDS#{team}")
}

/// Where every item of [`team_records`] sorts.
pub const TEAM_RECORD_SORT_PREFIX: &str = "KEPT#";

/// The item of [`team_records`] that lists `partition`.
pub fn team_record(partition: &str) -> String {
    format!("{TEAM_RECORD_SORT_PREFIX}{partition}")
}

/// Where an org-wide deployment lists the workspaces of its organization
/// that have kept partitions: one item per workspace and kind of record
/// ([`org_team`]), written beside the item of the workspace's own list
/// ([`team_records`]), so an organization's uninstall finds every
/// workspace to forget by one query, never a scan. Written by the worker
/// (`departures::note`); each item expires with the last record it stands
/// for.
pub fn org_teams(org: &EnterpriseId) -> String {
    format!("ORG_TEAMS#{org}")
}

/// Where every item of [`org_teams`] sorts.
pub const ORG_TEAM_SORT_PREFIX: &str = "TEAM#";

/// The item of [`org_teams`] for `team`'s records whose sort keys start
/// with `kind` (a memory's, a grant's, a token's: records of one kind keep
/// alike, so the newest write's expiry stands for them all).
pub fn org_team(team: &TeamId, kind: &str) -> String {
    format!("{ORG_TEAM_SORT_PREFIX}{team}#{kind}")
}

/// The sort-key prefix of [`team_records`]' items that list the team's
/// thread grants ([`grants_partition`]).
pub fn team_record_grants(team: &TeamId) -> String {
    team_record(&format!("GRANTS#{team}#"))
}

// ---------------------------------------------------------------------------
// Spend (`crate::budgets`).

/// How long a day's or a month's counter outlives its period: nothing
/// reads a past period (a new one starts afresh in the same record), so
/// this only keeps a quiet scope's last figures for a while.
pub const SPEND_KEPT_AFTER_SECS: i64 = 35 * 24 * 3600;

/// Where every spend counter sorts (what a team's uninstall deletes).
pub const SPEND_SORT_PREFIX: &str = "SPEND_";

/// A scope's spend counter for a period kind: one record per scope and
/// kind, holding the current period (a new period starts it afresh).
/// Written by the worker (`Spending::charge`).
pub fn spend(scope: &crate::budgets::Scope, period: crate::budgets::Period) -> RecordKey {
    use crate::budgets::{Period, Scope};
    let partition = match scope {
        Scope::Person(team, user) => format!("SPEND_PERSON#{team}#{user}"),
        Scope::Channel(team, channel) => format!("SPEND_CHANNEL#{team}#{channel}"),
        Scope::Deployment => "SPEND#DEPLOYMENT".to_owned(),
    };
    let kind = match period {
        Period::Day => "SPEND_DAY",
        Period::Month => "SPEND_MONTH",
    };
    RecordKey { partition, kind }
}

// ---------------------------------------------------------------------------
// Forms servers ask people to fill in (`crate::elicitation`).

/// A form waiting for the person who asked: opened by the worker, answered
/// or declined by the ingress (the person's click), closed by the worker
/// when nobody answered in time.
pub fn form(id: &str) -> RecordKey {
    RecordKey { partition: format!("ELICIT#{id}"), kind: "FORM" }
}

// ---------------------------------------------------------------------------
// Operator alerts (`crate::alerts`).

/// How long an alert's reference is remembered.
pub const REMEMBERED_SECS: i64 = 7 * 24 * 3600;

/// An operator alert posted once per reference. Written by the worker and
/// the responder (`OpsAlerts::raise`), each for its own references.
pub fn alert_sent(reference: &str) -> RecordKey {
    RecordKey { partition: format!("ALERT#{reference}"), kind: "SENT" }
}

/// How long a minute's alert count is kept.
pub const ALERT_COUNT_SECS: i64 = 3_600;

/// The alerts posted in one minute (`now / 60`), across every instance.
/// Written by the worker and the responder (`OpsAlerts::raise`).
pub fn alerts_minute(minute: i64) -> RecordKey {
    RecordKey { partition: format!("ALERTS#{minute}"), kind: "COUNT" }
}

/// How long a minute's count of stream starts is kept.
pub const STREAM_STARTS_SECS: i64 = 600;

/// The answer streams a workspace started in one minute (`now / 60`),
/// across every worker. Written by the worker (`StreamLog::take_start`).
pub fn stream_starts(team: &TeamId, minute: i64) -> RecordKey {
    RecordKey { partition: format!("STREAM_STARTS#{team}#{minute}"), kind: "COUNT" }
}

// ---------------------------------------------------------------------------
// Configuration kept in the table.

/// The channels that answer every question: kept far longer than any
/// worker lives without starting again.
pub const KEPT_SECS: i64 = 365 * 24 * 3600;

/// The response modes' partition. Written by the worker whenever it reads
/// the configuration from the bucket, at a start or a re-assembly
/// (`EveryQuestionChannels::publish`); read by the ingress.
pub const RESPONSE_MODES_PARTITION: &str = "CONFIG";

/// The response modes' sort key, under [`RESPONSE_MODES_PARTITION`].
pub const RESPONSE_MODES_SORT_KEY: &str = "RESPONSE_MODES";

/// A copy no worker refreshes goes away after a year. Every read of a good
/// object refreshes it; a long life is for the fallback: a configuration
/// broken over a long weekend still falls back to the last good one.
pub const KEPT_FOR_SECS: i64 = 365 * 24 * 3600;

/// The assistant configuration as a worker last read it from the bucket: a
/// `WORKER#` partition, which only the worker's role may write (the
/// template denies the responder's; the ingress's may write only its own
/// partitions and read `CONFIG`). Written by `worker-config`'s
/// `KeptConfiguration::keep`.
pub fn worker_config() -> RecordKey {
    RecordKey { partition: "WORKER#CONFIG".to_owned(), kind: "ASSISTANT" }
}

/// A key no record uses, read by the health checks (`dynamodb`): proves
/// the table, the read permission and the data plane. Never written.
pub fn health_check() -> RecordKey {
    RecordKey { partition: "HEALTH#check".to_owned(), kind: "HEALTH" }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(record: RecordKey) -> (String, &'static str) {
        (record.partition, record.kind)
    }

    /// The spellings as they were before this module held them: the IAM
    /// policy and every stored item depend on them, so none may change.
    #[test]
    fn every_key_is_spelled_as_before() {
        let (team, channel, user) = (TeamId::new("T1"), ChannelId::new("C1"), UserId::new("U1"));
        let thread = ThreadRef { team: team.clone(), channel: channel.clone(), thread_ts: Ts::new("1700.01") };
        let turn = TurnId::new("T1-Ev1");
        let s = |text: &str| text.to_owned();

        assert_eq!(key(event_claim(&team, &EventId::new("Ev1"))), (s("EVENT#T1#Ev1"), "EVENT"));
        assert_eq!(key(bot_thread(&thread)), (s("THREAD#T1#C1#1700.01"), "THREAD"));
        assert_eq!(key(action_token(&turn)), (s("ACTION_TOKEN#T1-Ev1"), "TOKEN"));
        assert_eq!(key(user_context(&team, &user)), (s("CONTEXT#T1#U1"), "CONTEXT"));
        assert_eq!(key(oauth_state("st")), (s("OAUTH_STATE#st"), "STATE"));
        assert_eq!(key(oauth_outcome("st")), (s("OAUTH_OUTCOME#st"), "OUTCOME"));
        assert_eq!(key(oauth_client("ab12")), (s("OAUTH_CLIENT#ab12"), "CLIENT"));
        assert_eq!((user_partition(&team, &user), user_tokens("idp")), (s("USER#T1#U1"), s("TOKENS#idp")));
        assert_eq!(TOKENS_SORT_PREFIX, "TOKENS#");
        assert_eq!(key(turn_state(&turn)), (s("TURN#T1-Ev1"), "STATE"));
        assert_eq!(turn_part("3.0.ab"), "PART#3.0.ab");
        assert_eq!(TURN_PART_PREFIX, "PART#");
        assert_eq!(key(delivery(&turn)), (s("TURN#T1-Ev1"), "DELIVERY"));
        assert_eq!(key(stream(&turn)), (s("TURN#T1-Ev1"), "STREAM"));
        assert_eq!(key(feedback(&turn)), (s("TURN#T1-Ev1"), "FEEDBACK"));
        assert_eq!(key(response_url(&turn)), (s("TURN#T1-Ev1"), "RESPONSE_URL"));
        assert_eq!(key(departed_team(&team)), (s("DEPARTED#T1"), "TEAM"));
        assert_eq!(key(departed_person(&team, &user)), (s("DEPARTED#T1#U1"), "PERSON"));
        assert_eq!(team_records(&team), "TEAM_RECORDS#T1");
        let org = EnterpriseId::new("E1");
        assert_eq!((org_teams(&org), org_team(&team, MEMORY_SORT_PREFIX)), (s("ORG_TEAMS#E1"), s("TEAM#T1#THREAD#")));
        assert!(org_team(&team, "X").starts_with(ORG_TEAM_SORT_PREFIX));
        assert_eq!(team_record(&grants_partition(&thread)), "KEPT#GRANTS#T1#C1#1700.01");
        assert!(team_record(&grants_partition(&thread)).starts_with(&team_record_grants(&team)));
        assert!(!team_record(&grants_partition(&thread)).starts_with(&team_record_grants(&TeamId::new("T"))));
        assert_eq!(APPROVAL_TIMERS_PARTITION, "APPROVAL_TIMERS");
        assert_eq!(approval_timer(1_700_000_000, &turn, "tu1"), "001700000000#T1-Ev1#tu1");
        assert_eq!(approval_timer(-5, &turn, "tu1"), "000000000000#T1-Ev1#tu1");
        assert_eq!(approval_timers_due_by(1_700_000_000), "001700000000$");
        assert_eq!(grants_partition(&thread), "GRANTS#T1#C1#1700.01");
        assert_eq!(
            (grant("deploy*", Some(&user)), grant("deploy*", None)),
            (s("GRANT#deploy*#U1"), s("GRANT#deploy*"))
        );
        assert_eq!(GRANT_SORT_PREFIX, "GRANT#");
        assert_eq!(memory_partition(&team, &channel), "MEMORY#T1#C1");
        assert_eq!(
            (memory_thread(&thread.thread_ts), memory(&thread.thread_ts, &turn)),
            (s("THREAD#1700.01#"), s("THREAD#1700.01#T1-Ev1"))
        );
        assert_eq!(MEMORY_SORT_PREFIX, "THREAD#");
        assert_eq!(key(incident("cloudwatch", "f00d")), (s("INCIDENT#cloudwatch#f00d"), "INCIDENT"));
        assert_eq!(key(incident_at(s("INCIDENT#x#y"))), (s("INCIDENT#x#y"), "INCIDENT"));
        assert_eq!(key(incident_rate(&channel, 472_222)), (s("INCIDENT_RATE#C1#472222"), "RATE"));
        assert_eq!(incident_rate_expires_at(10), 12 * 3600);
        assert_eq!((incident_thread(&thread), INCIDENT_SORT_KEY), (s("INCIDENT_THREAD#T1#C1#1700.01"), "INCIDENT"));
        assert_eq!(key(postmortem(&thread)), (s("POSTMORTEM#T1#C1#1700.01"), "POSTMORTEM"));
        use crate::budgets::{Period, Scope};
        let person = Scope::Person(team.clone(), user.clone());
        assert_eq!(key(spend(&person, Period::Day)), (s("SPEND_PERSON#T1#U1"), "SPEND_DAY"));
        assert_eq!(
            key(spend(&Scope::Channel(team.clone(), channel.clone()), Period::Month)),
            (s("SPEND_CHANNEL#T1#C1"), "SPEND_MONTH")
        );
        assert_eq!(key(spend(&Scope::Deployment, Period::Month)), (s("SPEND#DEPLOYMENT"), "SPEND_MONTH"));
        assert!(spend(&person, Period::Month).kind.starts_with(SPEND_SORT_PREFIX));
        assert_eq!(key(form("f00d")), (s("ELICIT#f00d"), "FORM"));
        assert_eq!(key(alert_sent("Ev1")), (s("ALERT#Ev1"), "SENT"));
        assert_eq!(key(alerts_minute(28_333_333)), (s("ALERTS#28333333"), "COUNT"));
        assert_eq!(key(stream_starts(&TeamId::new("T1"), 28_333_333)), (s("STREAM_STARTS#T1#28333333"), "COUNT"));
        assert_eq!((RESPONSE_MODES_PARTITION, RESPONSE_MODES_SORT_KEY), ("CONFIG", "RESPONSE_MODES"));
        assert_eq!(key(worker_config()), (s("WORKER#CONFIG"), "ASSISTANT"));
        assert_eq!(key(health_check()), (s("HEALTH#check"), "HEALTH"));
    }

    #[test]
    fn the_ttls_are_as_before() {
        let day = 24 * 3600;
        assert_eq!(
            [EVENT_CLAIM_TTL_SECS, BOT_THREAD_TTL_SECS, ACTION_TOKEN_TTL_SECS, USER_CONTEXT_TTL_SECS, STATE_TTL_SECS],
            [3 * day, 30 * day, 15 * 60, 3600, 10 * 60]
        );
        assert_eq!(
            [CLIENT_TTL_SECS, TOKENS_TTL_SECS, TURN_TTL_SECS, KEPT_AFTER_DUE_SECS],
            [5 * 365 * day, 90 * day, 30 * day, 7 * day]
        );
        assert_eq!(
            [GRANT_RECORD_SECS, DEFAULT_RETENTION_SECS, INCIDENT_RECORD_SECS, RECORD_SECS],
            [30 * day, 90 * day, 30 * day, 365 * day]
        );
        assert_eq!(
            [REMEMBERED_SECS, ALERT_COUNT_SECS, KEPT_SECS, KEPT_FOR_SECS],
            [7 * day, 3600, 365 * day, 365 * day]
        );
    }
}
