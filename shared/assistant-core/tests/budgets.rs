//! Spend counters: every dollar counted once, per person, channel and
//! deployment, also when a put's answer was lost, a worker crashed between
//! a charge and its save, or many turns charge at once; a new day starts
//! afresh; what a person or a team spent is forgotten with them.

use assistant_core::TurnId;
use assistant_core::budgets::{BudgetsConfig, Caps, DeploymentCaps, Period, Scope, Spender, Spending, Used};
use assistant_core::departures::Departures;
use assistant_core::ports::{PortError, Put, RecordKey, RecordWrite, StoredRecord, VersionedRecords};
use slack::{ChannelId, TeamId, UserId};
use std::sync::Arc;
use testkit::memory::{LostAnswer, MemoryRecords};

/// 2026-11-28T21:30:00Z.
const NOW: i64 = 1_795_901_400;

fn budgets() -> BudgetsConfig {
    BudgetsConfig {
        per_person: Some(Caps { daily_usd: Some(2.0), monthly_usd: Some(20.0) }),
        per_channel: Some(Caps { daily_usd: Some(10.0), monthly_usd: None }),
        deployment: Some(DeploymentCaps { daily_usd: None, monthly_usd: Some(100.0), alert_at: 0.8 }),
        admins: vec!["U0ADMIN1".into()],
    }
}

struct Who {
    turn: TurnId,
    team: TeamId,
    user: UserId,
    channel: ChannelId,
}

impl Who {
    fn new(turn: &str, user: &str, channel: &str) -> Self {
        Self {
            turn: TurnId::new(turn),
            team: TeamId::new("T1"),
            user: UserId::new(user),
            channel: ChannelId::new(channel),
        }
    }

    fn spender(&self) -> Spender<'_> {
        Spender { turn: &self.turn, team: &self.team, user: &self.user, channel: &self.channel }
    }
}

fn micros(used: &[Used], scope: &str, period: Period) -> u64 {
    used.iter().find(|used| used.scope.as_str() == scope && used.period == period).expect("counted").micros
}

async fn read(spending: &Spending, who: &Who, now: i64) -> Vec<Used> {
    let scopes = [
        Scope::Person(who.team.clone(), who.user.clone()),
        Scope::Channel(who.team.clone(), who.channel.clone()),
        Scope::Deployment,
    ];
    spending.usage(&budgets(), &scopes, now).await.unwrap()
}

#[tokio::test]
async fn each_charge_adds_what_the_turn_cost_since_the_last_to_every_counter_a_budget_names() {
    let spending = Spending::new(Arc::new(MemoryRecords::default()), 512);
    let (a, b) = (Who::new("T1-Ev1", "U1", "C1"), Who::new("T1-Ev2", "U2", "C1"));
    let charged = spending.charge(&budgets(), a.spender(), 300_000, 0, NOW).await.unwrap();
    assert_eq!(charged.used.len(), 4, "person day and month, channel day, deployment month");
    assert_eq!(micros(&charged.used, "person", Period::Day), 300_000);
    // The same turn, a step later: only the difference is added.
    let charged = spending.charge(&budgets(), a.spender(), 450_000, 300_000, NOW + 5).await.unwrap();
    assert_eq!(micros(&charged.used, "person", Period::Month), 450_000);
    // Another person in the same channel: their own counters, the shared ones grow.
    let charged = spending.charge(&budgets(), b.spender(), 100_000, 0, NOW + 6).await.unwrap();
    assert_eq!(micros(&charged.used, "person", Period::Day), 100_000);
    assert_eq!(micros(&charged.used, "channel", Period::Day), 550_000);
    assert_eq!(micros(&charged.used, "deployment", Period::Month), 550_000);
    assert!(charged.used.iter().all(|used| !used.is_spent()));
    // A turn that costs nothing more writes nothing.
    let charged = spending.charge(&budgets(), b.spender(), 100_000, 100_000, NOW + 7).await.unwrap();
    assert_eq!(micros(&charged.used, "deployment", Period::Month), 550_000);
    assert_eq!(read(&spending, &a, NOW + 8).await, read(&spending, &a, NOW + 9).await);
}

#[tokio::test]
async fn a_charge_whose_answer_was_lost_or_whose_turn_was_never_saved_counts_once() {
    for lost in [LostAnswer::Error, LostAnswer::RetryRefused] {
        let records = Arc::new(MemoryRecords::default());
        let spending = Spending::new(records.clone(), 512);
        let who = Who::new("T1-Ev1", "U1", "C1");
        // Every counter's put is applied and its answer lost.
        records.lose_answers([lost; 4]);
        let charged = spending.charge(&budgets(), who.spender(), 300_000, 0, NOW).await.unwrap();
        assert_eq!(micros(&charged.used, "person", Period::Day), 300_000, "{lost:?}");
        // The worker died before saving the turn: its redelivery charges
        // again from what the turn's record says (nothing).
        let charged = spending.charge(&budgets(), who.spender(), 300_000, 0, NOW + 30).await.unwrap();
        for used in &charged.used {
            assert_eq!(used.micros, 300_000, "{lost:?}: {used:?}");
        }
        // ... and its next step adds only that step.
        let charged = spending.charge(&budgets(), who.spender(), 350_000, 0, NOW + 60).await.unwrap();
        assert_eq!(micros(&charged.used, "deployment", Period::Month), 350_000, "{lost:?}");
    }
}

#[tokio::test]
async fn a_counter_the_table_refused_is_an_error_and_the_retry_counts_it_once() {
    let records = Arc::new(MemoryRecords::default());
    let spending = Spending::new(records.clone(), 512);
    let who = Who::new("T1-Ev1", "U1", "C1");
    records.fail_next_put("SPEND#DEPLOYMENT", "SPEND_MONTH");
    assert!(spending.charge(&budgets(), who.spender(), 300_000, 0, NOW).await.is_err());
    let charged = spending.charge(&budgets(), who.spender(), 300_000, 0, NOW + 1).await.unwrap();
    for used in &charged.used {
        assert_eq!(used.micros, 300_000, "{used:?}");
    }
}

/// The table as the tests want it: giving way to other tasks before each
/// read and write, so that charges made together read, then write,
/// interleaved (and conflict: counted); and refusing the next `refusals`
/// puts of `contested` as if another writer always got there first.
#[derive(Default)]
struct TestTable {
    inner: MemoryRecords,
    conflicts: std::sync::atomic::AtomicUsize,
    contested: &'static str,
    refusals: std::sync::atomic::AtomicU32,
}

#[async_trait::async_trait]
impl VersionedRecords for TestTable {
    async fn get(&self, key: &RecordKey) -> Result<Option<StoredRecord>, PortError> {
        tokio::task::yield_now().await;
        self.inner.get(key).await
    }

    async fn put(&self, key: &RecordKey, write: &RecordWrite) -> Result<Put, PortError> {
        use std::sync::atomic::Ordering;
        tokio::task::yield_now().await;
        if key.partition == self.contested
            && self.refusals.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1)).is_ok()
        {
            return Ok(Put::Conflict { current: None });
        }
        let put = self.inner.put(key, write).await;
        if matches!(put, Ok(Put::Conflict { .. })) {
            self.conflicts.fetch_add(1, Ordering::SeqCst);
        }
        put
    }

    async fn put_part(&self, partition: &str, sort_key: &str, state: String, expires_at: i64) -> Result<(), PortError> {
        self.inner.put_part(partition, sort_key, state, expires_at).await
    }

    async fn delete_part(&self, partition: &str, sort_key: &str) -> Result<(), PortError> {
        self.inner.delete_part(partition, sort_key).await
    }

    async fn parts(&self, partition: &str, prefix: &str) -> Result<Vec<(String, String)>, PortError> {
        self.inner.parts(partition, prefix).await
    }
}

#[tokio::test]
async fn many_turns_charging_one_counter_at_once_are_all_counted() {
    let records = Arc::new(TestTable::default());
    let spending = Spending::new(records.clone(), 512);
    let people: Vec<Who> = (0..6).map(|n| Who::new(&format!("T1-Ev{n}"), &format!("U{n}"), "C1")).collect();
    let budgets = budgets();
    let charges = people.iter().map(|who| spending.charge(&budgets, who.spender(), 10_000, 0, NOW));
    for charged in futures_util::future::join_all(charges).await {
        charged.unwrap();
    }
    let used = read(&spending, &people[0], NOW).await;
    assert_eq!(micros(&used, "channel", Period::Day), 60_000);
    assert_eq!(micros(&used, "deployment", Period::Month), 60_000);
    assert_eq!(micros(&used, "person", Period::Day), 10_000);
    assert!(records.conflicts.load(std::sync::atomic::Ordering::SeqCst) > 0, "the charges did conflict");
}

#[tokio::test]
async fn a_new_day_starts_the_days_counter_afresh_and_a_turn_across_midnight_counts_from_what_it_charged() {
    let spending = Spending::new(Arc::new(MemoryRecords::default()), 512);
    let who = Who::new("T1-Ev1", "U1", "C1");
    let late = NOW + 2 * 3600 + 1_700; // 23:58:20
    spending.charge(&budgets(), who.spender(), 1_900_000, 0, late).await.unwrap();
    let after_midnight = late + 200;
    let charged = spending.charge(&budgets(), who.spender(), 2_100_000, 1_900_000, after_midnight).await.unwrap();
    assert_eq!(micros(&charged.used, "person", Period::Day), 200_000, "only what it cost after midnight");
    assert_eq!(micros(&charged.used, "person", Period::Month), 2_100_000, "the month goes on");
    let day = charged.used.iter().find(|used| used.period == Period::Day).unwrap();
    assert_eq!(day.resets_at, Period::Day.at(after_midnight).1);
}

#[tokio::test]
async fn a_spent_budget_is_said_and_the_deployments_month_alerts_once_past_its_share() {
    let spending = Spending::new(Arc::new(MemoryRecords::default()), 512);
    let who = Who::new("T1-Ev1", "U1", "C1");
    let charged = spending.charge(&budgets(), who.spender(), 2_000_000, 0, NOW).await.unwrap();
    let spent = assistant_core::budgets::first_spent(&charged.used).expect("the person's day is spent");
    assert_eq!((spent.scope.as_str(), spent.period), ("person", Period::Day));
    assert!(charged.alert.is_none(), "2 of 100");
    let big = BudgetsConfig { per_person: None, per_channel: None, ..budgets() };
    let other = Who::new("T1-Ev2", "U2", "C2");
    let charged = spending.charge(&big, other.spender(), 77_000_000, 0, NOW).await.unwrap();
    assert!(charged.alert.is_none(), "79 of 100");
    // The charge that passes 80% alerts, once for this process and month.
    let charged = spending.charge(&big, other.spender(), 78_000_000, 77_000_000, NOW + 1).await.unwrap();
    let month = charged.alert.expect("80 of 100");
    assert_eq!((month.micros, month.scope.as_str(), month.period), (80_000_000, "deployment", Period::Month));
    let charged = spending.charge(&big, other.spender(), 79_500_000, 78_000_000, NOW + 2).await.unwrap();
    assert!(charged.alert.is_none(), "raised once");
}

#[tokio::test]
async fn what_a_person_or_a_team_spent_is_forgotten_with_them_and_no_one_elses() {
    let records = Arc::new(MemoryRecords::default());
    let spending = Spending::new(records.clone(), 512);
    let (leaver, stayer) = (Who::new("T1-Ev1", "U1", "C1"), Who::new("T1-Ev2", "U2", "C2"));
    let elsewhere = Who { team: TeamId::new("T2"), ..Who::new("T2-Ev3", "U1", "C1") };
    for who in [&leaver, &stayer, &elsewhere] {
        spending.charge(&budgets(), who.spender(), 100_000, 0, NOW).await.unwrap();
    }
    let departures = Departures::new(records.clone());
    departures.forget_person(&leaver.team, &leaver.user).await.unwrap();
    assert_eq!(micros(&read(&spending, &leaver, NOW).await, "person", Period::Day), 0);
    assert_eq!(micros(&read(&spending, &stayer, NOW).await, "person", Period::Day), 100_000);
    assert_eq!(micros(&read(&spending, &elsewhere, NOW).await, "person", Period::Day), 100_000, "T2's U1");

    departures.forget_team(&TeamId::new("T1")).await.unwrap();
    let used = read(&spending, &stayer, NOW).await;
    assert_eq!((micros(&used, "person", Period::Day), micros(&used, "channel", Period::Day)), (0, 0));
    assert_eq!(micros(&used, "deployment", Period::Month), 300_000, "the deployment's spend is no team's data");
    let used = read(&spending, &elsewhere, NOW).await;
    assert_eq!(micros(&used, "channel", Period::Day), 100_000, "another team's channel is kept");
    let records: &dyn VersionedRecords = records.as_ref();
    assert!(records.parts("TEAM_RECORDS#T1", "KEPT#").await.unwrap().is_empty());
}

#[tokio::test]
async fn a_counter_that_keeps_conflicting_is_left_out_and_takes_the_whole_amount_at_the_next_charge() {
    let records = Arc::new(TestTable {
        contested: "SPEND#DEPLOYMENT",
        refusals: std::sync::atomic::AtomicU32::new(8),
        ..TestTable::default()
    });
    let spending = Spending::new(records, 512);
    let who = Who::new("T1-Ev1", "U1", "C1");
    let charged = spending.charge(&budgets(), who.spender(), 300_000, 0, NOW).await.unwrap();
    assert!(!charged.complete, "the deployment's counter never took it");
    assert_eq!(micros(&charged.used, "deployment", Period::Month), 0);
    assert_eq!(micros(&charged.used, "person", Period::Day), 300_000);
    // The turn records nothing charged; the next charge carries all of it
    let charged = spending.charge(&budgets(), who.spender(), 350_000, 0, NOW + 5).await.unwrap();
    assert!(charged.complete);
    for used in &charged.used {
        assert_eq!(used.micros, 350_000, "{used:?}");
    }
}
