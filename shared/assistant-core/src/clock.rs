//! Wall-clock time as Unix seconds, behind a trait so tests and benchmarks
//! can pin it (signature windows and record expiry both depend on it).

use std::time::{SystemTime, UNIX_EPOCH};

pub trait Clock: Send + Sync {
    fn now_unix(&self) -> i64;

    /// Milliseconds since the epoch, for durations people wait through.
    fn now_millis(&self) -> i64 {
        self.now_unix() * 1_000
    }
}

#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_unix(&self) -> i64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs() as i64).unwrap_or_default()
    }

    fn now_millis(&self) -> i64 {
        SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as i64).unwrap_or_default()
    }
}

impl<C: Clock + ?Sized> Clock for &C {
    fn now_unix(&self) -> i64 {
        (**self).now_unix()
    }

    fn now_millis(&self) -> i64 {
        (**self).now_millis()
    }
}

/// `2025-11-22T08:26:40Z` for Unix seconds (proleptic Gregorian calendar).
pub fn iso8601_utc(unix: i64) -> String {
    let (days, secs) = (unix.div_euclid(86_400), unix.rem_euclid(86_400));
    let (year, month, day) = civil_from_days(days);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", secs / 3600, secs % 3600 / 60, secs % 60)
}

/// (year, month, day) of a count of days since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
pub fn civil_from_days(days: i64) -> (i64, i64, i64) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    (yoe + era * 400 + i64::from(month <= 2), month, day)
}

/// Unix seconds for an RFC 3339 timestamp as monitoring systems write them
/// (`2026-05-20T14:00:00Z`, `2026-05-20T14:00:00.123456789+02:00`); `None`
/// for anything else.
pub fn unix_from_rfc3339(text: &str) -> Option<i64> {
    let bytes = text.as_bytes();
    let number = |range: std::ops::Range<usize>| -> Option<i64> {
        let part = text.get(range)?;
        part.bytes().all(|b| b.is_ascii_digit()).then(|| part.parse().ok())?
    };
    if bytes.len() < 20 || bytes[4] != b'-' || bytes[7] != b'-' || !matches!(bytes[10], b'T' | b't' | b' ') {
        return None;
    }
    if bytes[13] != b':' || bytes[16] != b':' {
        return None;
    }
    let (year, month, day) = (number(0..4)?, number(5..7)?, number(8..10)?);
    let (hour, minute, second) = (number(11..13)?, number(14..16)?, number(17..19)?);
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    let mut rest = &text[19..];
    if let Some(fraction) = rest.strip_prefix('.') {
        let digits = fraction.bytes().take_while(u8::is_ascii_digit).count();
        if digits == 0 {
            return None;
        }
        rest = &fraction[digits..];
    }
    let offset = match rest {
        "Z" | "z" => 0,
        _ if rest.len() == 6 && matches!(rest.as_bytes()[0], b'+' | b'-') && rest.as_bytes()[3] == b':' => {
            let hours: i64 = rest.get(1..3)?.parse().ok()?;
            let minutes: i64 = rest.get(4..6)?.parse().ok()?;
            let sign = if rest.starts_with('-') { -1 } else { 1 };
            sign * (hours * 3600 + minutes * 60)
        }
        _ => return None,
    };
    // Howard Hinnant's days_from_civil.
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (month + 9) % 12;
    let doy = (153 * mp + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(days * 86_400 + hour * 3600 + minute * 60 + second - offset)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rfc3339_reads_back_what_iso8601_utc_writes_and_the_sources_shapes() {
        for unix in [0, 951_782_400, 1_763_800_000, 4_102_444_799, -1] {
            assert_eq!(unix_from_rfc3339(&iso8601_utc(unix)), Some(unix));
        }
        assert_eq!(unix_from_rfc3339("2025-11-22T08:26:40.123Z"), Some(1_763_800_000));
        assert_eq!(unix_from_rfc3339("2025-11-22T10:26:40+02:00"), Some(1_763_800_000));
        assert_eq!(unix_from_rfc3339("2025-11-22T08:26:40.123456789+00:00"), Some(1_763_800_000));
        for bad in [
            "",
            "2025-11-22",
            "2025-13-22T08:26:40Z",
            "2025-11-22T08:26:40",
            "2025-11-22T08:26:40.Z",
            "2025-11-22T08:26:4xZ",
            "0001-01-01T00:00:00",
        ] {
            assert_eq!(unix_from_rfc3339(bad), None, "{bad}");
        }
    }
}
