//! Tools every deployment has, needing nothing but the process itself.

use crate::{Effect, Tool};
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

pub use assistant_core::clock::iso8601_utc;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ToolPolicy, ToolRegistry};
    use assistant_core::turn::{ToolStatus, ToolUse};
    use testkit::clock::ManualClock;

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
            ToolRegistry::new(vec![current_time(Arc::new(ManualClock::at(1_763_800_000)))], ToolPolicy::allow_all())
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
