//! Tools every deployment has, needing nothing but the process itself.

use crate::tools::{Effect, Tool};
use assistant_core::Clock;
use assistant_core::model::ToolSpec;
use assistant_core::turn::ToolOutput;
use std::sync::Arc;
use std::time::Duration;

/// `current_time`: the date and time now, in UTC. Models do not know it,
/// and "since yesterday's deploy" needs it.
pub fn current_time(clock: Arc<dyn Clock>) -> Tool {
    let spec = ToolSpec {
        name: "current_time".into(),
        description: "The current date and time in UTC (ISO 8601) and as Unix seconds.".into(),
        input_schema: serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false}),
    };
    Tool::new(spec, Effect::ReadOnly, Duration::from_secs(1), move |_| {
        let now = clock.now_unix();
        async move { Ok(ToolOutput::Json(serde_json::json!({"utc": iso8601_utc(now), "unix": now}))) }
    })
    .expect("the built-in schema is valid")
}

/// `2025-11-22T08:26:40Z` for Unix seconds (proleptic Gregorian calendar).
pub fn iso8601_utc(unix: i64) -> String {
    let (days, secs) = (unix.div_euclid(86_400), unix.rem_euclid(86_400));
    // Howard Hinnant's civil_from_days.
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1_460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = doy - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = yoe + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}Z", secs / 3600, secs % 3600 / 60, secs % 60)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tools::{ToolPolicy, ToolRegistry};
    use assistant_core::FixedClock;
    use assistant_core::turn::{ToolStatus, ToolUse};

    #[test]
    fn formats_known_instants() {
        assert_eq!(iso8601_utc(0), "1970-01-01T00:00:00Z");
        assert_eq!(iso8601_utc(1_763_800_000), "2025-11-22T08:26:40Z");
        assert_eq!(iso8601_utc(951_782_400), "2000-02-29T00:00:00Z");
        assert_eq!(iso8601_utc(4_102_444_799), "2099-12-31T23:59:59Z");
        assert_eq!(iso8601_utc(-1), "1969-12-31T23:59:59Z");
    }

    #[tokio::test]
    async fn current_time_reads_the_injected_clock() {
        let registry =
            ToolRegistry::new(vec![current_time(Arc::new(FixedClock::at(1_763_800_000)))], ToolPolicy::allow_all())
                .unwrap();
        let call = ToolUse { id: "t".into(), name: "current_time".into(), input: serde_json::json!({}) };
        let result = registry.run(&call, &slack::ChannelId::new("C1")).await;
        assert_eq!(result.status, ToolStatus::Success);
        assert_eq!(
            result.output,
            ToolOutput::Json(serde_json::json!({"utc": "2025-11-22T08:26:40Z", "unix": 1_763_800_000}))
        );
    }
}
