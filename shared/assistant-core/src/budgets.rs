//! Spend a team controls (`budgets` in the assistant configuration): US
//! dollars per person, per channel and for the whole deployment, per UTC day
//! and per UTC month, counted from each turn's estimated cost (the model's
//! and the enhancer's tokens, the guardrail's text units, the AWS requests
//! and compute: [`crate::pricing::estimate`]).
//!
//! **Counted as the turn goes.** Before each model call the worker charges
//! what the turn has cost since its last charge to every counter a budget
//! names ([`Spending::charge`]), then reads the totals: a budget spent ends
//! the turn with a message that says which budget, until when, and whom to
//! ask ([`Used::message`]). The settled turn's last step is charged before
//! its final save.
//!
//! **Safe under concurrency.** A counter is one versioned record per scope
//! and period kind (`SPEND#…` / `SPEND_DAY`, `SPEND_MONTH`: [`keys::spend`]),
//! written by a conditional put on the version it read; two turns charging
//! at once conflict, and the loser reads again and adds its own amount on
//! top. A counter that keeps conflicting is left for the next charge: each
//! charge carries everything not charged before, so nothing is lost, only
//! counted a step later.
//!
//! **Safe under lost answers.** Each counter keeps, beside its total, what
//! each recent turn has charged to it (the turn's running total, by turn
//! id). A charge adds only the difference between the turn's cost now and
//! what the counter already holds for it, so a put whose answer was lost
//! (found applied by its write token: [`put_versioned`]) or a redelivery
//! after a crash between a charge and the turn's save adds nothing twice.
//! A counter with no entry for the turn (a new day or month, or an entry
//! older than [`TURN_ENTRY_SECS`]) counts from what the turn's own record
//! says it charged (`Turn::charged_micros`).
//!
//! Turns running at once may each pass a budget by at most one step: the
//! check reads the totals before the call, not during it.

use crate::alerts::{Alert, OpsAlerts, Raised};
use crate::clock::{civil_from_days, unix_from_rfc3339};
use crate::config_checks::ConfigError;
use crate::keys;
use crate::ports::{PortError, Put, RecordKey, StoredRecord, VersionedRecords};
use crate::retry::{Raced, retry_races};
use crate::store::put_versioned;
use crate::turn::TurnId;
use serde::{Deserialize, Serialize};
use slack::{ChannelId, EnterpriseId, TeamId, UserId};
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};

/// The largest budget accepted, in dollars: a typo's extra zeros are refused.
pub const MAX_BUDGET_USD: f64 = 1_000_000.0;
/// The share of the deployment's monthly budget at which operators are
/// alerted, unless the configuration says otherwise.
pub const DEFAULT_ALERT_AT: f64 = 0.8;
/// How long a counter remembers what a turn charged to it: longer than a
/// redelivery takes to come back after a crash.
pub const TURN_ENTRY_SECS: i64 = 6 * 3600;
/// The most turns a counter remembers; past it, the oldest are dropped
/// (the record stays far under DynamoDB's 400 KB item limit).
pub const MAX_TURN_ENTRIES: usize = 2_000;
/// Conflicting charges of one counter tried before it is left for the next.
const CHARGE_TRIES: u32 = 8;

/// A daily and a monthly cap, in US dollars; either may be absent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Caps {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monthly_usd: Option<f64>,
}

/// The whole deployment's caps, and when operators hear of its month.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeploymentCaps {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub daily_usd: Option<f64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monthly_usd: Option<f64>,
    /// The share of `monthly_usd` at which the ops channel is told and
    /// `BudgetAlerts` counted, once a month.
    #[serde(default = "default_alert_at")]
    pub alert_at: f64,
}

fn default_alert_at() -> f64 {
    DEFAULT_ALERT_AT
}

/// `budgets` in the assistant configuration.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BudgetsConfig {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_person: Option<Caps>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub per_channel: Option<Caps>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deployment: Option<DeploymentCaps>,
    /// Who raises budgets: people (`U…`) and user groups (`S…`), named in
    /// the message of a turn over budget, and shown the deployment's usage
    /// on their Home tab.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub admins: Vec<String>,
}

impl BudgetsConfig {
    /// What is wrong with it, if anything (values are never quoted: a
    /// configuration may hold what should not be in a log).
    pub fn problem(&self) -> Option<ConfigError> {
        let caps = [
            ("per_person.daily_usd", self.per_person.and_then(|caps| caps.daily_usd)),
            ("per_person.monthly_usd", self.per_person.and_then(|caps| caps.monthly_usd)),
            ("per_channel.daily_usd", self.per_channel.and_then(|caps| caps.daily_usd)),
            ("per_channel.monthly_usd", self.per_channel.and_then(|caps| caps.monthly_usd)),
            ("deployment.daily_usd", self.deployment.and_then(|caps| caps.daily_usd)),
            ("deployment.monthly_usd", self.deployment.and_then(|caps| caps.monthly_usd)),
        ];
        for (field, usd) in caps {
            if let Some(usd) = usd
                && !(usd > 0.0 && usd <= MAX_BUDGET_USD)
            {
                return Some(ConfigError::must(
                    format!("budgets.{field}"),
                    format_args!("be more than 0 and at most {MAX_BUDGET_USD} (US dollars)"),
                ));
            }
        }
        if caps.iter().all(|(_, usd)| usd.is_none()) {
            return Some(ConfigError::that("budgets", "names no daily_usd or monthly_usd: remove it or set one"));
        }
        if let Some(deployment) = self.deployment {
            if !(deployment.alert_at > 0.0 && deployment.alert_at <= 1.0) {
                return Some(ConfigError::must("budgets.deployment.alert_at", "be more than 0 and at most 1"));
            }
            if deployment.monthly_usd.is_none() && deployment.alert_at != DEFAULT_ALERT_AT {
                return Some(ConfigError::that("budgets.deployment.alert_at", "needs deployment.monthly_usd"));
            }
        }
        for admin in &self.admins {
            if !is_person_or_group(admin) {
                return Some(ConfigError::must(
                    "budgets.admins",
                    "name people (U…, W…) and user groups (S…) by their ids",
                ));
            }
        }
        None
    }

    /// The counters these budgets need for a turn of `who`, each with its cap.
    fn counters(&self, who: &Spender<'_>) -> Vec<(Scope, Period, f64)> {
        let mut counters = Vec::new();
        let mut add = |scope: Scope, daily: Option<f64>, monthly: Option<f64>| {
            if let Some(usd) = daily {
                counters.push((scope.clone(), Period::Day, usd));
            }
            if let Some(usd) = monthly {
                counters.push((scope, Period::Month, usd));
            }
        };
        if let Some(caps) = self.per_person {
            add(Scope::Person(who.team.clone(), who.user.clone()), caps.daily_usd, caps.monthly_usd);
        }
        if let Some(caps) = self.per_channel {
            add(Scope::Channel(who.team.clone(), who.channel.clone()), caps.daily_usd, caps.monthly_usd);
        }
        if let Some(caps) = self.deployment {
            add(Scope::Deployment, caps.daily_usd, caps.monthly_usd);
        }
        counters
    }

    /// The admins as Slack mentions (`<@U…>`, `<!subteam^S…>`), "or" between.
    pub fn whom_to_ask(&self) -> Option<String> {
        let mentions: Vec<String> = self
            .admins
            .iter()
            .map(|id| if id.starts_with('S') { format!("<!subteam^{id}>") } else { format!("<@{id}>") })
            .collect();
        match mentions.as_slice() {
            [] => None,
            [one] => Some(one.clone()),
            [rest @ .., last] => Some(format!("{} or {last}", rest.join(", "))),
        }
    }
}

fn is_person_or_group(id: &str) -> bool {
    let mut chars = id.chars();
    matches!(chars.next(), Some('U' | 'W' | 'S'))
        && (3..=20).contains(&id.len())
        && chars.all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
}

/// Whose spend a counter holds.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Scope {
    Person(TeamId, UserId),
    Channel(TeamId, ChannelId),
    Deployment,
}

impl Scope {
    /// As the turn's message says it.
    fn described(&self) -> &'static str {
        match self {
            Scope::Person(..) => "your",
            Scope::Channel(..) => "this channel's",
            Scope::Deployment => "this assistant's overall",
        }
    }

    /// The team whose data the counter is (forgotten with it), if any.
    fn team(&self) -> Option<&TeamId> {
        match self {
            Scope::Person(team, _) | Scope::Channel(team, _) => Some(team),
            Scope::Deployment => None,
        }
    }

    pub fn as_str(&self) -> &'static str {
        match self {
            Scope::Person(..) => "person",
            Scope::Channel(..) => "channel",
            Scope::Deployment => "deployment",
        }
    }
}

/// A UTC day or a UTC month.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Period {
    Day,
    Month,
}

impl Period {
    /// The period `now` is in (`2026-11-28`, `2026-11`) and when it ends
    /// (Unix seconds).
    pub fn at(self, now: i64) -> (String, i64) {
        let days = now.div_euclid(86_400);
        let (year, month, day) = civil_from_days(days);
        match self {
            Period::Day => (format!("{year:04}-{month:02}-{day:02}"), (days + 1) * 86_400),
            Period::Month => {
                let (next_year, next_month) = if month == 12 { (year + 1, 1) } else { (year, month + 1) };
                let end = unix_from_rfc3339(&format!("{next_year:04}-{next_month:02}-01T00:00:00Z"))
                    .expect("the first of a month is a date");
                (format!("{year:04}-{month:02}"), end)
            }
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Period::Day => "daily",
            Period::Month => "monthly",
        }
    }
}

/// Who a turn's spend is counted for.
#[derive(Debug, Clone, Copy)]
pub struct Spender<'a> {
    pub turn: &'a TurnId,
    pub team: &'a TeamId,
    pub user: &'a UserId,
    pub channel: &'a ChannelId,
}

/// One counter as a charge or a read left it.
#[derive(Debug, Clone, PartialEq)]
pub struct Used {
    pub scope: Scope,
    pub period: Period,
    /// Spent in the period so far, in millionths of a dollar.
    pub micros: u64,
    /// The cap, in US dollars.
    pub cap_usd: f64,
    /// When the period ends and the counter starts again (Unix seconds).
    pub resets_at: i64,
}

impl Used {
    pub fn usd(&self) -> f64 {
        self.micros as f64 / 1e6
    }

    /// Spent to the cap, or past it.
    pub fn is_spent(&self) -> bool {
        self.usd() >= self.cap_usd
    }

    /// The share of the cap spent.
    pub fn ratio(&self) -> f64 {
        self.usd() / self.cap_usd
    }

    /// What the thread is told when this budget ends a turn (`started`: the
    /// turn made a model call before): which budget, how much of it, until
    /// when, and whom to ask.
    pub fn message(&self, whom_to_ask: Option<&str>, started: bool, now: i64) -> String {
        let left = (self.resets_at - now).max(0);
        let until = crate::clock::iso8601_utc(self.resets_at);
        let (date, time) = (&until[..10], &until[11..16]);
        let mut message = format!(
            "{}: {} {} budget for this assistant is spent ({} of {}). \
             It starts again at {time} UTC on {date}, in {}.",
            if started { "I stopped before finishing" } else { "I can't start on this" },
            self.scope.described(),
            self.period.as_str(),
            dollars(self.usd()),
            dollars(self.cap_usd),
            in_words(left),
        );
        match whom_to_ask {
            Some(admins) => message.push_str(&format!(" To raise it, ask {admins}.")),
            None => {
                message.push_str(" To raise it, ask whoever deploys this assistant (`budgets` in its configuration).")
            }
        }
        message
    }
}

/// An amount as people read it: `$2.03`, and for amounts under a dollar up
/// to four decimals (`$0.0078`, `$0.005`), so a small budget is not `$0.00`.
pub fn dollars(usd: f64) -> String {
    if usd >= 1.0 {
        return format!("${usd:.2}");
    }
    let mut text = format!("{usd:.4}");
    while text.ends_with('0') && text.len() > "0.00".len() {
        text.pop();
    }
    format!("${text}")
}

/// `5 h 12 min`, `40 min`, `3 days`.
fn in_words(secs: i64) -> String {
    if secs < 3_600 {
        format!("{} min", (secs / 60).max(1))
    } else if secs < 86_400 {
        format!("{} h {} min", secs / 3_600, secs % 3_600 / 60)
    } else {
        format!("{} days", (secs + 43_200) / 86_400)
    }
}

/// The first budget spent among `used`, if any.
pub fn first_spent(used: &[Used]) -> Option<&Used> {
    used.iter().find(|used| used.is_spent())
}

/// One counter's record: its period, its total, and what recent turns
/// charged to it (`{turn: [micros, at]}`).
#[derive(Debug, Default, Serialize, Deserialize)]
struct Tally {
    period: String,
    micros: u64,
    #[serde(default)]
    turns: BTreeMap<String, (u64, i64)>,
}

impl Tally {
    /// The record as stored (its version and tally), begun afresh when
    /// there is none or it is of an earlier period (then `true`).
    fn read(stored: Option<&StoredRecord>, period: &str) -> Result<(u64, Tally, bool), PortError> {
        let fresh = || Tally { period: period.to_owned(), ..Tally::default() };
        let Some(stored) = stored else { return Ok((0, fresh(), true)) };
        let tally: Tally =
            serde_json::from_str(&stored.state).map_err(|err| PortError::new("spend counter", err.to_string()))?;
        if tally.period == period { Ok((stored.version, tally, false)) } else { Ok((stored.version, fresh(), true)) }
    }

    /// Forgets turns not heard of for [`TURN_ENTRY_SECS`], and the oldest
    /// past [`MAX_TURN_ENTRIES`].
    fn prune(&mut self, now: i64) {
        self.turns.retain(|_, (_, at)| *at >= now - TURN_ENTRY_SECS);
        if self.turns.len() > MAX_TURN_ENTRIES {
            let mut ages: Vec<i64> = self.turns.values().map(|(_, at)| *at).collect();
            ages.sort_unstable();
            let keep_from = ages[ages.len() - MAX_TURN_ENTRIES];
            self.turns.retain(|_, (_, at)| *at >= keep_from);
            while self.turns.len() > MAX_TURN_ENTRIES {
                let oldest = self.turns.iter().min_by_key(|(_, (_, at))| *at).map(|(turn, _)| turn.clone());
                self.turns.remove(&oldest.expect("more than none"));
            }
        }
    }
}

/// What one charge found.
#[derive(Debug, Default)]
pub struct Charged {
    /// Every counter the budgets name for the turn, after the charge.
    pub used: Vec<Used>,
    /// The deployment's month, when this charge found it past `alert_at`
    /// for the first time this process knows of.
    pub alert: Option<Used>,
    /// Every counter took the charge (none kept conflicting): only then
    /// does the turn record the total as charged, so a counter left out
    /// takes it at the next charge.
    pub complete: bool,
}

/// The spend counters on the turns table, and the deployment's month
/// alert. One per worker process.
pub struct Spending {
    records: Arc<dyn VersionedRecords>,
    organization: Option<EnterpriseId>,
    /// The worker's memory, for the compute part of a turn's cost.
    worker_memory_mb: u32,
    /// The months whose alert this process has raised.
    alerted: Mutex<HashSet<String>>,
}

impl Spending {
    pub fn new(records: Arc<dyn VersionedRecords>, worker_memory_mb: u32) -> Self {
        Self { records, organization: None, worker_memory_mb, alerted: Mutex::default() }
    }

    /// Under an org-wide deployment, a team's counters are listed for the
    /// organization's uninstall too ([`crate::departures::note`]).
    pub fn in_organization(mut self, organization: Option<EnterpriseId>) -> Self {
        self.organization = organization;
        self
    }

    pub fn worker_memory_mb(&self) -> u32 {
        self.worker_memory_mb
    }

    /// Charges the turn's cost so far (`total_micros`) to every counter the
    /// budgets name for `who`, then says what each holds. `charged_before`
    /// is what the turn's own record says it charged (where a counter holds
    /// nothing for the turn, it counts from there). A counter whose charge
    /// keeps conflicting is read, not charged: the next charge carries it.
    pub async fn charge(
        &self,
        budgets: &BudgetsConfig,
        who: Spender<'_>,
        total_micros: u64,
        charged_before: u64,
        now: i64,
    ) -> Result<Charged, PortError> {
        let counters = budgets.counters(&who);
        let charges = counters.iter().map(|(scope, period, cap)| async move {
            let (micros, took) = self.charge_one(scope, *period, who, total_micros, charged_before, now).await?;
            let used =
                Used { scope: scope.clone(), period: *period, micros, cap_usd: *cap, resets_at: period.at(now).1 };
            Ok::<_, PortError>((used, took))
        });
        let charged = futures_util::future::try_join_all(charges).await?;
        let complete = charged.iter().all(|(_, took)| *took);
        let used: Vec<Used> = charged.into_iter().map(|(used, _)| used).collect();
        let alert = budgets.deployment.and_then(|caps| {
            let month = used.iter().find(|used| used.scope == Scope::Deployment && used.period == Period::Month)?;
            (caps.monthly_usd.is_some() && month.ratio() >= caps.alert_at).then_some(month)?;
            let (name, _) = Period::Month.at(now);
            self.alerted.lock().expect("alerted lock").insert(name).then(|| month.clone())
        });
        Ok(Charged { used, alert, complete })
    }

    async fn charge_one(
        &self,
        scope: &Scope,
        period: Period,
        who: Spender<'_>,
        total_micros: u64,
        charged_before: u64,
        now: i64,
    ) -> Result<(u64, bool), PortError> {
        let key = &keys::spend(scope, period);
        let (name, ends) = period.at(now);
        let name = name.as_str();
        let expires_at = ends + keys::SPEND_KEPT_AFTER_SECS;
        let turn = who.turn.as_str();
        // The record as the last try found it (a conflict returns it).
        let found = &Mutex::new(None::<Option<StoredRecord>>);
        let charged = retry_races(CHARGE_TRIES, |_| async move {
            let last_found = found.lock().expect("found lock").take();
            let stored = match last_found {
                Some(stored) => stored,
                None => self.records.get(key).await?,
            };
            let (version, mut tally, new_record) = Tally::read(stored.as_ref(), name)?;
            let before = tally.turns.get(turn).map_or(charged_before, |(micros, _)| *micros);
            let add = total_micros.saturating_sub(before);
            if add == 0 {
                return Ok(tally.micros);
            }
            tally.micros += add;
            tally.turns.insert(turn.to_owned(), (total_micros, now));
            tally.prune(now);
            let state = serde_json::to_string(&tally).expect("a tally is JSON");
            match put_versioned(self.records.as_ref(), key, version, state, expires_at).await? {
                Put::Written => {
                    if new_record && let Some(team) = scope.team() {
                        // A person's or a channel's spend is the team's data:
                        // listed, so the app's uninstall forgets it.
                        crate::departures::note(
                            self.records.as_ref(),
                            self.organization.as_ref(),
                            team,
                            &key.partition,
                            keys::SPEND_SORT_PREFIX,
                            expires_at,
                        )
                        .await?;
                    }
                    Ok(tally.micros)
                }
                Put::Conflict { current } => {
                    *found.lock().expect("found lock") = current.map(Some);
                    Err(Raced::Lost)
                }
            }
        })
        .await?;
        match charged {
            Some(micros) => Ok((micros, true)),
            None => {
                tracing::warn!(counter = %key.partition, kind = key.kind, "spend counter kept conflicting: charged at the next step");
                let stored = self.records.get(key).await?;
                Ok((Tally::read(stored.as_ref(), name)?.1.micros, false))
            }
        }
    }

    /// The scopes whose counters `budgets` keep for a person asking in a
    /// channel: theirs, the channel's, the deployment's, where capped.
    pub fn scopes_of(budgets: &BudgetsConfig, team: &TeamId, user: &UserId, channel: &ChannelId) -> Vec<Scope> {
        let mut scopes = Vec::new();
        if budgets.per_person.is_some() {
            scopes.push(Scope::Person(team.clone(), user.clone()));
        }
        if budgets.per_channel.is_some() {
            scopes.push(Scope::Channel(team.clone(), channel.clone()));
        }
        if budgets.deployment.is_some() {
            scopes.push(Scope::Deployment);
        }
        scopes
    }

    /// What the counters of `scopes` hold now (the Home tab, a turn's
    /// start), for the caps the budgets set.
    pub async fn usage(&self, budgets: &BudgetsConfig, scopes: &[Scope], now: i64) -> Result<Vec<Used>, PortError> {
        let caps = |scope: &Scope| -> Caps {
            match scope {
                Scope::Person(..) => budgets.per_person.unwrap_or_default(),
                Scope::Channel(..) => budgets.per_channel.unwrap_or_default(),
                Scope::Deployment => budgets
                    .deployment
                    .map(|caps| Caps { daily_usd: caps.daily_usd, monthly_usd: caps.monthly_usd })
                    .unwrap_or_default(),
            }
        };
        let wanted: Vec<(Scope, Period, f64)> = scopes
            .iter()
            .flat_map(|scope| {
                let caps = caps(scope);
                [(Period::Day, caps.daily_usd), (Period::Month, caps.monthly_usd)]
                    .into_iter()
                    .filter_map(move |(period, cap)| cap.map(|cap| (scope.clone(), period, cap)))
            })
            .collect();
        let keys: Vec<RecordKey> = wanted.iter().map(|(scope, period, _)| keys::spend(scope, *period)).collect();
        let stored = self.records.get_many(&keys).await?;
        wanted
            .into_iter()
            .zip(stored)
            .map(|((scope, period, cap_usd), stored)| {
                let (name, resets_at) = period.at(now);
                let micros = Tally::read(stored.as_ref(), &name)?.1.micros;
                Ok(Used { scope, period, micros, cap_usd, resets_at })
            })
            .collect()
    }

    /// Tells the ops channel the deployment passed `alert_at` of its month
    /// (once a month: the alert's reference names it).
    pub async fn alert(&self, ops: &OpsAlerts, month: &Used, now: i64) -> Raised {
        let (name, _) = Period::Month.at(now);
        let reference = format!("budget-{name}");
        let what = format!(
            "This assistant has spent {} of its {} monthly budget ({:.0}%) in {name}. \
             At 100% every question is refused until the month ends.",
            dollars(month.usd()),
            dollars(month.cap_usd),
            month.ratio() * 100.0,
        );
        ops.raise(Alert { reference: &reference, what: &what, thread: None }).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// 2026-11-28T21:30:00Z.
    const NOW: i64 = 1_795_901_400;

    #[test]
    fn periods_are_utc_days_and_months_ending_where_the_next_begins() {
        assert_eq!(crate::clock::iso8601_utc(NOW), "2026-11-28T21:30:00Z");
        let (day, ends) = Period::Day.at(NOW);
        assert_eq!((day.as_str(), crate::clock::iso8601_utc(ends).as_str()), ("2026-11-28", "2026-11-29T00:00:00Z"));
        let (month, ends) = Period::Month.at(NOW);
        assert_eq!((month.as_str(), crate::clock::iso8601_utc(ends).as_str()), ("2026-11", "2026-12-01T00:00:00Z"));
        let december = unix_from_rfc3339("2026-12-31T23:59:59Z").unwrap();
        assert_eq!(crate::clock::iso8601_utc(Period::Month.at(december).1), "2027-01-01T00:00:00Z");
        assert_eq!(Period::Month.at(december + 1).0, "2027-01");
    }

    #[test]
    fn the_message_says_which_budget_how_much_until_when_and_whom_to_ask() {
        let used = Used {
            scope: Scope::Person(TeamId::new("T1"), UserId::new("U1")),
            period: Period::Day,
            micros: 2_031_000,
            cap_usd: 2.0,
            resets_at: Period::Day.at(NOW).1,
        };
        assert!(used.is_spent());
        let budgets = BudgetsConfig { admins: vec!["U0ADMIN1".into(), "S0OPS".into()], ..Default::default() };
        let said = used.message(budgets.whom_to_ask().as_deref(), true, NOW);
        assert_eq!(
            said,
            "I stopped before finishing: your daily budget for this assistant is spent ($2.03 of $2.00). \
             It starts again at 00:00 UTC on 2026-11-29, in 2 h 30 min. To raise it, ask <@U0ADMIN1> or <!subteam^S0OPS>."
        );
        let channel =
            Used { scope: Scope::Channel(TeamId::new("T1"), ChannelId::new("C1")), period: Period::Month, ..used };
        let said = channel.message(None, false, NOW);
        assert!(said.starts_with("I can't start on this: this channel's monthly budget"), "{said}");
        assert!(said.contains("in 2 h 30 min") && said.contains("`budgets` in its configuration"), "{said}");
    }

    #[test]
    fn amounts_read_as_dollars_and_cents_and_small_ones_keep_their_figures() {
        let said: Vec<String> = [2.031, 100.0, 0.5, 0.0078, 0.005, 0.00001, 0.0].into_iter().map(dollars).collect();
        assert_eq!(said, ["$2.03", "$100.00", "$0.50", "$0.0078", "$0.005", "$0.00", "$0.00"]);
    }

    #[test]
    fn a_budget_with_no_cap_a_cap_out_of_range_or_an_admin_not_an_id_is_refused_without_quoting_it() {
        let parse = |json: &str| {
            serde_json::from_str::<BudgetsConfig>(json)
                .map_err(|err| err.to_string())
                .map(|config| config.problem().map(|problem| problem.to_string()))
        };
        assert_eq!(parse(r#"{"per_person": {"daily_usd": 2}, "deployment": {"monthly_usd": 500}}"#), Ok(None));
        for (json, says) in [
            (r#"{}"#, "budgets names no daily_usd or monthly_usd"),
            (r#"{"per_person": {}}"#, "budgets names no daily_usd or monthly_usd"),
            (r#"{"per_person": {"daily_usd": 0}}"#, "budgets.per_person.daily_usd must be more than 0"),
            (r#"{"per_channel": {"monthly_usd": -4}}"#, "budgets.per_channel.monthly_usd must be more than 0"),
            (
                r#"{"deployment": {"monthly_usd": 10000000}}"#,
                "budgets.deployment.monthly_usd must be more than 0 and at most",
            ),
            (
                r#"{"deployment": {"monthly_usd": 5, "alert_at": 1.5}}"#,
                "budgets.deployment.alert_at must be more than 0",
            ),
            (
                r#"{"deployment": {"daily_usd": 5, "alert_at": 0.5}}"#,
                "budgets.deployment.alert_at needs deployment.monthly_usd",
            ),
            (r#"{"per_person": {"daily_usd": 1}, "admins": ["<!channel>"]}"#, "budgets.admins must name people"),
        ] {
            let said = parse(json).unwrap().unwrap_or_default();
            assert!(said.starts_with(says), "{json}: {said}");
            assert!(!said.contains("channel>") && !said.contains("10000000"), "values are not quoted: {said}");
        }
        assert!(parse(r#"{"per_person": {"daily_usd": 1, "weekly_usd": 5}}"#).is_err(), "unknown fields refused");
        assert!(parse(r#"{"per_person": {"daily_usd": 1}, "per_team": {}}"#).is_err(), "unknown fields refused");
    }

    #[test]
    fn a_counter_forgets_old_turns_and_the_oldest_past_its_bound() {
        let mut tally = Tally { period: "2026-11".into(), micros: 0, turns: BTreeMap::new() };
        tally.turns.insert("old".into(), (5, NOW - TURN_ENTRY_SECS - 1));
        for n in 0..MAX_TURN_ENTRIES + 10 {
            tally.turns.insert(format!("t{n:05}"), (1, NOW - 100 + n as i64 % 50));
        }
        tally.prune(NOW);
        assert_eq!(tally.turns.len(), MAX_TURN_ENTRIES);
        assert!(!tally.turns.contains_key("old"));
        let newest = tally.turns.values().map(|(_, at)| *at).max().unwrap();
        assert_eq!(newest, NOW - 51, "the newest are kept");
    }
}
