//! Scheduled turns: a question the bot asks itself in a channel on a
//! schedule (a daily on-call digest of alarms and incidents, say).
//!
//! ```json
//! "schedules": [
//!   { "name": "oncall-digest", "cron": "0 8 * * 1-5", "channel": "C0ONCALL01",
//!     "question": "Summarize yesterday's alarms and incidents, and what is still open." }
//! ]
//! ```
//!
//! `cron` is five fields in UTC (minute, hour, day of month, month, day of
//! week with 0 or 7 for Sunday), each `*`, `*/n`, a number, a range `a-b`
//! (`a-b/n`) or a list of those. The worker's minute sweep (the template's
//! every-minute schedule) finds the schedules due this minute or the one
//! before (a late sweep still fires them) and queues each firing; so a
//! changed `schedules` takes effect without a deploy, at the next
//! re-assembly.
//!
//! A firing opens its thread as an alert does ([`crate::incidents`]): one
//! root message in the channel and the question asked in its thread, named
//! by the schedule and the minute, so a repeated sweep, a retried delivery
//! or a redelivered message posts one digest.

use assistant_core::clock::civil_from_days;
use assistant_core::config_checks::ConfigError;
use assistant_core::incidents::{AlertNotice, AlertSource, AlertState};
use serde::Deserialize;
use slack::ChannelId;
use std::collections::BTreeMap;

/// Schedules one configuration may hold.
const MAX_SCHEDULES: usize = 20;
const MAX_QUESTION_CHARS: usize = 2_000;

/// One `schedules[]` entry.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawSchedule")]
pub struct Schedule {
    pub name: String,
    pub cron: Cron,
    pub channel: ChannelId,
    pub question: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSchedule {
    name: String,
    cron: String,
    channel: String,
    question: String,
}

impl TryFrom<RawSchedule> for Schedule {
    type Error = ConfigError;

    fn try_from(raw: RawSchedule) -> Result<Self, ConfigError> {
        let name_ok = (1..=64).contains(&raw.name.len())
            && raw.name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !name_ok {
            return Err(ConfigError::at(
                "schedules",
                format_args!("name {:?} must be 1 to 64 of a-z, A-Z, 0-9, - and _", raw.name),
            ));
        }
        let refused =
            |problem: std::fmt::Arguments<'_>| ConfigError::at("schedules", format_args!("{}: {problem}", raw.name));
        let cron = Cron::parse(&raw.cron).map_err(|err| refused(format_args!("cron {:?}: {err}", raw.cron)))?;
        if !(ChannelId::is_well_formed(&raw.channel) && matches!(raw.channel.as_bytes()[0], b'C' | b'G')) {
            return Err(refused(format_args!("channel {:?} must be a channel id (C… or G…)", raw.channel)));
        }
        let question = raw.question.trim();
        if question.is_empty() || question.chars().count() > MAX_QUESTION_CHARS {
            return Err(refused(format_args!("the question must be 1 to {MAX_QUESTION_CHARS} characters")));
        }
        Ok(Self { name: raw.name, cron, channel: ChannelId::new(raw.channel), question: question.to_owned() })
    }
}

/// `schedules` as the configuration deserializes it: names unique.
pub fn schedules<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Vec<Schedule>, D::Error> {
    let schedules = Vec::<Schedule>::deserialize(deserializer)?;
    assistant_core::config_checks::named_list(schedules, "schedules", MAX_SCHEDULES, |schedule| &schedule.name)
        .map_err(serde::de::Error::custom)
}

impl Schedule {
    /// The firing of this schedule at `minute` (Unix seconds, a whole
    /// minute), as a notice the incident desk opens a thread for.
    pub fn firing(&self, minute: i64) -> AlertNotice {
        AlertNotice {
            source: AlertSource::Schedule,
            fingerprint: format!("{}@{minute}", self.name),
            delivery: format!("{}@{minute}", self.name),
            state: AlertState::Firing,
            title: self.name.clone(),
            summary: String::new(),
            labels: BTreeMap::from([("schedule".to_owned(), self.name.clone())]),
            url: None,
            at: minute,
        }
    }
}

/// The firings due at `now` (Unix seconds): each schedule whose cron
/// matches this minute or the one before, with that minute.
pub fn due(schedules: &[Schedule], now: i64) -> Vec<(&Schedule, i64)> {
    let this_minute = now - now.rem_euclid(60);
    [this_minute - 60, this_minute]
        .into_iter()
        .flat_map(|minute| schedules.iter().filter(move |s| s.cron.matches(minute)).map(move |s| (s, minute)))
        .collect()
}

/// A five-field cron expression, in UTC.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cron {
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    /// Whether day of month and day of week were both restricted: then
    /// either matching is enough (as cron has it).
    either_day: bool,
}

/// Why a cron expression was refused; `field` is which of the five.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CronError {
    #[error("five fields (minute hour day month weekday), not {0}")]
    FieldCount(usize),
    #[error("{field}: step {step:?} is not a number")]
    Step { field: &'static str, step: String },
    #[error("{field}: a step of 0")]
    ZeroStep { field: &'static str },
    #[error("{field}: {text:?} is not a number")]
    NotANumber { field: &'static str, text: String },
    #[error("{field}: {value} is outside {min}-{max}")]
    OutOfRange { field: &'static str, value: u32, min: u32, max: u32 },
    #[error("{field}: the range {from}-{to} runs backwards")]
    Backwards { field: &'static str, from: u32, to: u32 },
}

impl Cron {
    pub fn parse(text: &str) -> Result<Self, CronError> {
        let fields: Vec<&str> = text.split_whitespace().collect();
        let [minute, hour, day, month, weekday] = fields[..] else {
            return Err(CronError::FieldCount(fields.len()));
        };
        let mut weekdays = field(weekday, 0, 7, "weekday")?;
        if weekdays & (1 << 7) != 0 {
            weekdays |= 1; // 7 is Sunday too
        }
        let restricted = |f: &str| f != "*" && f != "?";
        Ok(Self {
            minutes: field(minute, 0, 59, "minute")?,
            hours: field(hour, 0, 23, "hour")?,
            days: field(day, 1, 31, "day of month")?,
            months: field(month, 1, 12, "month")?,
            weekdays,
            either_day: restricted(day) && restricted(weekday),
        })
    }

    /// Whether the minute holding `unix` (seconds, UTC) matches.
    pub fn matches(&self, unix: i64) -> bool {
        let (days, secs) = (unix.div_euclid(86_400), unix.rem_euclid(86_400));
        let (minute, hour) = ((secs / 60) % 60, secs / 3600);
        let (_, month, day) = civil_from_days(days);
        // 1970-01-01 was a Thursday (4).
        let weekday = (days + 4).rem_euclid(7);
        let bit = |set: u64, n: i64| set & (1 << n) != 0;
        let day_matches = if self.either_day {
            bit(self.days, day) || bit(self.weekdays, weekday)
        } else {
            bit(self.days, day) && bit(self.weekdays, weekday)
        };
        bit(self.minutes, minute) && bit(self.hours, hour) && bit(self.months, month) && day_matches
    }
}

/// One field as a bit set over `min..=max`.
fn field(text: &str, min: u32, max: u32, what: &'static str) -> Result<u64, CronError> {
    let mut set = 0u64;
    for part in text.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((range, step)) => {
                let step: u32 = step.parse().map_err(|_| CronError::Step { field: what, step: step.to_owned() })?;
                if step == 0 {
                    return Err(CronError::ZeroStep { field: what });
                }
                (range, step)
            }
            None => (part, 1),
        };
        let number = |n: &str| -> Result<u32, CronError> {
            let value: u32 = n.parse().map_err(|_| CronError::NotANumber { field: what, text: n.to_owned() })?;
            if (min..=max).contains(&value) {
                Ok(value)
            } else {
                Err(CronError::OutOfRange { field: what, value, min, max })
            }
        };
        let (from, to) = match range {
            "*" | "?" => (min, max),
            _ => match range.split_once('-') {
                Some((from, to)) => (number(from)?, number(to)?),
                None if step > 1 => (number(range)?, max),
                None => {
                    let n = number(range)?;
                    (n, n)
                }
            },
        };
        if from > to {
            return Err(CronError::Backwards { field: what, from, to });
        }
        for n in (from..=to).step_by(step as usize) {
            set |= 1 << n;
        }
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;
    use assistant_core::clock::unix_from_rfc3339;

    fn at(text: &str) -> i64 {
        unix_from_rfc3339(text).unwrap()
    }

    #[test]
    fn cron_matches_the_minutes_it_names_in_utc() {
        let weekday_mornings = Cron::parse("0 8 * * 1-5").unwrap();
        assert!(weekday_mornings.matches(at("2026-11-25T08:00:00Z")), "a Wednesday");
        assert!(weekday_mornings.matches(at("2026-11-25T08:00:59Z")), "the whole minute");
        assert!(!weekday_mornings.matches(at("2026-11-25T08:01:00Z")));
        assert!(!weekday_mornings.matches(at("2026-11-29T08:00:00Z")), "a Sunday");
        let sundays = Cron::parse("30 */6 * * 7").unwrap();
        assert!(sundays.matches(at("2026-11-29T18:30:00Z")));
        assert!(!sundays.matches(at("2026-11-29T19:30:00Z")));
        let lists = Cron::parse("0,15-20/5 9 1,15 1-3 ?").unwrap();
        assert!(lists.matches(at("2026-02-15T09:20:00Z")));
        assert!(!lists.matches(at("2026-04-15T09:20:00Z")));
        // Day of month or day of week, when both are named.
        let either = Cron::parse("0 0 1 * 1").unwrap();
        assert!(either.matches(at("2026-12-01T00:00:00Z")), "the 1st, a Tuesday");
        assert!(either.matches(at("2026-11-30T00:00:00Z")), "a Monday");
        assert!(!either.matches(at("2026-12-02T00:00:00Z")));
    }

    #[test]
    fn broken_cron_says_what_is_wrong() {
        for (bad, says) in [
            ("0 8 * *", "five fields"),
            ("60 8 * * *", "outside 0-59"),
            ("0 24 * * *", "outside 0-23"),
            ("0 8 0 * *", "outside 1-31"),
            ("*/0 * * * *", "a step of 0"),
            ("5-1 * * * *", "backwards"),
            ("@daily * * * *", "not a number"),
        ] {
            let err = Cron::parse(bad).unwrap_err().to_string();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    #[test]
    fn a_schedule_is_due_in_its_minute_and_the_next_and_fires_under_one_name() {
        let schedule: Vec<Schedule> = serde_json::from_value::<Wrapper>(serde_json::json!({"schedules": [
            {"name": "oncall-digest", "cron": "0 8 * * *", "channel": "C0ONCALL01", "question": "What fired yesterday?"}
        ]}))
        .unwrap()
        .schedules;
        let eight = at("2026-11-25T08:00:00Z");
        for now in [eight + 5, eight + 65] {
            let due = due(&schedule, now);
            assert_eq!(due.len(), 1, "at {now}");
            assert_eq!(due[0].1, eight);
            assert_eq!(due[0].0.firing(due[0].1).dedupe_id(), schedule[0].firing(eight).dedupe_id());
        }
        assert!(due(&schedule, eight + 125).is_empty());
        assert!(due(&schedule, eight - 1).is_empty());
    }

    #[derive(Deserialize)]
    struct Wrapper {
        #[serde(deserialize_with = "schedules")]
        schedules: Vec<Schedule>,
    }

    #[test]
    fn schedules_refuse_bad_names_channels_questions_and_twins() {
        let entry = |name: &str, cron: &str, channel: &str, question: &str| serde_json::json!({"name": name, "cron": cron, "channel": channel, "question": question});
        for bad in [
            vec![entry("digest!", "0 8 * * *", "C0ONCALL01", "q")],
            vec![entry("digest", "0 8 * *", "C0ONCALL01", "q")],
            vec![entry("digest", "0 8 * * *", "D0DIRECT01", "q")],
            vec![entry("digest", "0 8 * * *", "C0ONCALL01", "  ")],
            vec![entry("digest", "0 8 * * *", "C0ONCALL01", "q"), entry("digest", "0 9 * * *", "C0ONCALL01", "q")],
        ] {
            let json = serde_json::json!({ "schedules": bad });
            assert!(serde_json::from_value::<Wrapper>(json.clone()).is_err(), "{json}");
        }
        let unknown = serde_json::json!({"schedules": [{"name": "d", "cron": "0 8 * * *", "channel": "C0ONCALL01", "question": "q", "tz": "Europe/Paris"}]});
        assert!(
            serde_json::from_value::<Wrapper>(unknown).is_err(),
            "time zones are UTC only: an unknown field stops the start"
        );
    }
}
