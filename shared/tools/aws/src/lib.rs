//! The account's own signals as built-in tools: `cloudwatch_alarms`,
//! `cloudwatch_metrics` and `logs_query`, each off until the assistant
//! configuration's `aws_tools` names it:
//!
//! ```json
//! "aws_tools": {
//!   "alarms":  { "name_prefixes": ["prod-"], "max_alarms": 50 },
//!   "metrics": { "namespaces": ["AWS/Lambda", "AWS/ApiGateway", "Checkout*"], "max_window_hours": 168, "max_points": 30 },
//!   "logs":    { "log_groups": ["/aws/lambda/checkout-*"], "max_window_hours": 24, "default_window_minutes": 60,
//!                "max_rows": 100, "max_bytes": 32768, "timeout_secs": 30,
//!                "account": { "role_arn": "arn:aws:iam::222222222222:role/assistant-read", "region": "eu-west-1" } }
//! }
//! ```
//!
//! Read-only (the template grants `cloudwatch:DescribeAlarms`,
//! `cloudwatch:GetMetricData` and the three Logs Insights actions on the
//! deployment's log-group ARNs, nothing else). Every input the model gives
//! is checked before any AWS call: a log group outside the globs, a window
//! past the maximum or a namespace not listed is an error result that says
//! why. What comes back is bounded (alarms, datapoints, rows, bytes) and,
//! like every tool's result, redacted by the registry and read by the
//! model within the turn's reading budget (`assistant_core::reading`). Logs Insights bills per GB scanned: the window, the number of
//! groups and the time limit (after which the query is stopped) keep one
//! query's scan small.

use assistant_core::Clock;
use assistant_core::catalog::ServiceCatalog;
use assistant_core::config_checks::ConfigError;
use assistant_core::model::ToolSpec;
use assistant_core::signals::{
    AlarmQuery, AwsAccount, AwsConnector, CloudWatch, LogsInsights, LogsQuery, MetricQuery, QueryStatus,
};
use assistant_core::turn::ToolOutput;
use serde::Deserialize;
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tools_registry::builtin::iso8601_utc;
use tools_registry::{Effect, Tool, ToolDefinitionError, ToolError, glob_matches};

/// `aws_tools` in the assistant configuration.
#[derive(Debug, Clone, PartialEq, Eq, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwsToolsConfig {
    #[serde(default)]
    pub alarms: Option<AlarmsConfig>,
    #[serde(default)]
    pub metrics: Option<MetricsConfig>,
    #[serde(default)]
    pub logs: Option<LogsConfig>,
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawAlarms")]
pub struct AlarmsConfig {
    /// Alarms whose names start with one of these; every alarm when empty.
    pub name_prefixes: Vec<String>,
    /// Alarms listed at most (1 to 100, default 50).
    pub max_alarms: usize,
    pub account: AwsAccount,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAlarms {
    #[serde(default)]
    name_prefixes: Vec<String>,
    max_alarms: Option<usize>,
    #[serde(default)]
    account: AwsAccount,
}

impl TryFrom<RawAlarms> for AlarmsConfig {
    type Error = ConfigError;

    fn try_from(raw: RawAlarms) -> Result<Self, ConfigError> {
        let max_alarms = within("aws_tools.alarms.max_alarms", raw.max_alarms, 50, 1..=100)?;
        if raw.name_prefixes.len() > MAX_PREFIXES || raw.name_prefixes.iter().any(|p| p.trim().is_empty()) {
            return Err(ConfigError::at(
                "aws_tools.alarms.name_prefixes",
                format_args!("up to {MAX_PREFIXES} prefixes, none empty"),
            ));
        }
        check_account("aws_tools.alarms", &raw.account)?;
        Ok(Self { name_prefixes: raw.name_prefixes, max_alarms, account: raw.account })
    }
}

/// Alarm name prefixes queried at most (one `DescribeAlarms` each).
const MAX_PREFIXES: usize = 5;

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawMetrics")]
pub struct MetricsConfig {
    /// Namespace globs the model may read (`AWS/Lambda`, `Checkout*`).
    pub namespaces: Vec<String>,
    /// The widest window (hours, default 24, at most 63 days' worth).
    pub max_window_hours: u64,
    /// Datapoints returned at most (default 30, at most 100).
    pub max_points: usize,
    pub account: AwsAccount,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetrics {
    namespaces: Option<Vec<String>>,
    max_window_hours: Option<u64>,
    max_points: Option<usize>,
    #[serde(default)]
    account: AwsAccount,
}

impl TryFrom<RawMetrics> for MetricsConfig {
    type Error = ConfigError;

    fn try_from(raw: RawMetrics) -> Result<Self, ConfigError> {
        let namespaces = raw.namespaces.unwrap_or_else(|| vec!["*".into()]);
        if namespaces.is_empty() || namespaces.iter().any(|n| n.trim().is_empty()) {
            return Err(ConfigError::at("aws_tools.metrics.namespaces", "at least one namespace glob, none empty"));
        }
        check_account("aws_tools.metrics", &raw.account)?;
        Ok(Self {
            namespaces,
            max_window_hours: within("aws_tools.metrics.max_window_hours", raw.max_window_hours, 24, 1..=63 * 24)?,
            max_points: within("aws_tools.metrics.max_points", raw.max_points, 30, 2..=100)?,
            account: raw.account,
        })
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(try_from = "RawLogs")]
pub struct LogsConfig {
    /// Log group globs a query may name (required: no default reaches
    /// every group of the account).
    pub log_groups: Vec<String>,
    /// The widest window (hours, default 24, at most a week).
    pub max_window_hours: u64,
    /// The window when the model names none (minutes, default 60).
    pub default_window_minutes: u64,
    /// Rows returned at most (default 100, at most 1000).
    pub max_rows: usize,
    /// Bytes of rows returned at most (default 32 KiB, at most 256 KiB).
    pub max_bytes: usize,
    /// How long a query may run before it is stopped (seconds, default 30).
    pub timeout_secs: u64,
    pub account: AwsAccount,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLogs {
    log_groups: Vec<String>,
    max_window_hours: Option<u64>,
    default_window_minutes: Option<u64>,
    max_rows: Option<usize>,
    max_bytes: Option<usize>,
    timeout_secs: Option<u64>,
    #[serde(default)]
    account: AwsAccount,
}

impl TryFrom<RawLogs> for LogsConfig {
    type Error = ConfigError;

    fn try_from(raw: RawLogs) -> Result<Self, ConfigError> {
        if raw.log_groups.is_empty() || raw.log_groups.iter().any(|g| g.trim().is_empty() || g.trim() == "*") {
            return Err(ConfigError::at(
                "aws_tools.logs.log_groups",
                "at least one log group glob, none empty and not \"*\" alone (name the groups the bot may read)",
            ));
        }
        let max_window_hours = within("aws_tools.logs.max_window_hours", raw.max_window_hours, 24, 1..=7 * 24)?;
        let default_window_minutes =
            within("aws_tools.logs.default_window_minutes", raw.default_window_minutes, 60, 1..=max_window_hours * 60)?;
        check_account("aws_tools.logs", &raw.account)?;
        Ok(Self {
            log_groups: raw.log_groups,
            max_window_hours,
            default_window_minutes,
            max_rows: within("aws_tools.logs.max_rows", raw.max_rows, 100, 1..=1_000)?,
            max_bytes: within("aws_tools.logs.max_bytes", raw.max_bytes, 32 * 1024, 1_024..=256 * 1024)?,
            timeout_secs: within("aws_tools.logs.timeout_secs", raw.timeout_secs, 30, 5..=100)?,
            account: raw.account,
        })
    }
}

fn within<T: PartialOrd + Copy + std::fmt::Display>(
    field: &str,
    value: Option<T>,
    default: T,
    range: std::ops::RangeInclusive<T>,
) -> Result<T, ConfigError> {
    let value = value.unwrap_or(default);
    if range.contains(&value) {
        Ok(value)
    } else {
        Err(ConfigError::must(field, format_args!("be from {} to {}", range.start(), range.end())))
    }
}

fn check_account(entry: &str, account: &AwsAccount) -> Result<(), ConfigError> {
    if let Some(role) = &account.role_arn {
        let parts: Vec<&str> = role.split(':').collect();
        if parts.len() != 6 || parts[0] != "arn" || parts[2] != "iam" || !parts[5].starts_with("role/") {
            return Err(ConfigError::at(
                format!("{entry}.account.role_arn"),
                format_args!("{role:?} is not an IAM role ARN"),
            ));
        }
    }
    if let Some(region) = &account.region
        && (region.is_empty() || !region.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'))
    {
        return Err(ConfigError::at(
            format!("{entry}.account.region"),
            format_args!("{region:?} is not a region name"),
        ));
    }
    Ok(())
}

/// CloudWatch's limit on a metric's dimensions.
const MAX_DIMENSIONS: usize = 30;
/// Log groups one query may name at most.
pub const MAX_GROUPS: usize = 10;
/// Characters of one field of a log row kept at most.
const MAX_FIELD_CHARS: usize = 2_000;
/// How often a running query is looked at.
const POLL_EVERY: Duration = Duration::from_millis(750);
/// Time kept after a query's limit to stop it and answer.
const STOP_MARGIN: Duration = Duration::from_secs(5);

/// The configured AWS tools, opened for their accounts.
/// `catalog` lets `logs_query` take a service's name for its log groups.
pub async fn aws_tools(
    config: &AwsToolsConfig,
    aws: &dyn AwsConnector,
    clock: Arc<dyn Clock>,
    catalog: Option<Arc<ServiceCatalog>>,
) -> Result<Vec<Tool>, ToolDefinitionError> {
    let mut tools = Vec::new();
    if let Some(alarms) = &config.alarms {
        tools.push(alarms_tool(alarms.clone(), aws.cloudwatch(&alarms.account).await)?);
    }
    if let Some(metrics) = &config.metrics {
        tools.push(metrics_tool(metrics.clone(), aws.cloudwatch(&metrics.account).await, clock.clone())?);
    }
    if let Some(logs) = &config.logs {
        tools.push(logs_tool(logs.clone(), aws.logs(&logs.account).await, clock, catalog)?);
    }
    Ok(tools)
}

pub fn alarms_tool(config: AlarmsConfig, cloudwatch: Arc<dyn CloudWatch>) -> Result<Tool, ToolDefinitionError> {
    let scope = if config.name_prefixes.is_empty() {
        String::new()
    } else {
        format!(" Only alarms whose names start with {} can be listed.", config.name_prefixes.join(", "))
    };
    let spec = ToolSpec {
        name: "cloudwatch_alarms".into(),
        description: format!(
            "List CloudWatch alarms by state (default ALARM) and name prefix: each with its state, since when, why, its metric and its threshold.{scope}"
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "state": {"type": "string", "enum": ["ALARM", "OK", "INSUFFICIENT_DATA", "ANY"]},
                "name_prefix": {"type": "string", "maxLength": 255}
            },
            "additionalProperties": false
        }),
    };
    let config = Arc::new(config);
    Tool::new(spec, Effect::ReadOnly, Duration::from_secs(20), move |input: Value| {
        let (config, cloudwatch) = (config.clone(), cloudwatch.clone());
        async move {
            let state = match input["state"].as_str().unwrap_or("ALARM") {
                "ANY" => None,
                state => Some(state.to_owned()),
            };
            let asked = input["name_prefix"].as_str().filter(|p| !p.is_empty());
            let prefixes: Vec<Option<String>> = match asked {
                Some(prefix) if config.name_prefixes.is_empty() => vec![Some(prefix.to_owned())],
                Some(prefix) => {
                    if !config.name_prefixes.iter().any(|allowed| prefix.starts_with(allowed.as_str())) {
                        return Err(format!(
                            "Alarms starting with {prefix:?} cannot be listed here: only names starting with {}.",
                            config.name_prefixes.join(", ")
                        )
                        .into());
                    }
                    vec![Some(prefix.to_owned())]
                }
                None if config.name_prefixes.is_empty() => vec![None],
                None => config.name_prefixes.iter().cloned().map(Some).collect(),
            };
            let mut alarms = Vec::new();
            for name_prefix in prefixes {
                let query = AlarmQuery { state: state.clone(), name_prefix, max: config.max_alarms };
                alarms.extend(cloudwatch.alarms(&query).await.map_err(|err| err.to_string())?);
            }
            let more = alarms.len() > config.max_alarms;
            alarms.truncate(config.max_alarms);
            let listed: Vec<Value> = alarms
                .iter()
                .map(|alarm| {
                    json!({
                        "name": alarm.name,
                        "state": alarm.state,
                        "since": alarm.since.map(iso8601_utc),
                        "reason": cut(&alarm.reason, 500),
                        "metric": alarm.metric,
                        "condition": alarm.condition,
                    })
                })
                .collect();
            Ok(ToolOutput::Json(json!({
                "alarms": listed,
                "count": listed.len(),
                "more_not_shown": more,
            })))
        }
    })
}

pub fn metrics_tool(
    config: MetricsConfig,
    cloudwatch: Arc<dyn CloudWatch>,
    clock: Arc<dyn Clock>,
) -> Result<Tool, ToolDefinitionError> {
    let spec = ToolSpec {
        name: tools_registry::METRICS_TOOL.into(),
        description: format!(
            "Summarize one CloudWatch metric over a window (default the last 60 minutes, at most {} hours): min, max, average, last value and up to {} datapoints. Namespaces: {}.",
            config.max_window_hours,
            config.max_points,
            config.namespaces.join(", ")
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "namespace": {"type": "string", "minLength": 1, "maxLength": 255},
                "metric": {"type": "string", "minLength": 1, "maxLength": 255},
                "dimensions": {"type": "object", "additionalProperties": {"type": "string"}},
                "stat": {"type": "string", "description": "Average (default), Sum, Minimum, Maximum, SampleCount, or a percentile such as p99", "maxLength": 20},
                "since_minutes": {"type": "integer", "minimum": 1, "description": "Start of the window, minutes ago (default 60)"},
                "until_minutes": {"type": "integer", "minimum": 0, "description": "End of the window, minutes ago (default 0: now)"}
            },
            "required": ["namespace", "metric"],
            "additionalProperties": false
        }),
    };
    let config = Arc::new(config);
    Tool::new(spec, Effect::ReadOnly, Duration::from_secs(20), move |input: Value| {
        let (config, cloudwatch, clock) = (config.clone(), cloudwatch.clone(), clock.clone());
        async move {
            let namespace = input["namespace"].as_str().unwrap_or_default().to_owned();
            if !config.namespaces.iter().any(|glob| glob_matches(glob, &namespace)) {
                return Err(format!(
                    "The namespace {namespace:?} cannot be read here: only {}.",
                    config.namespaces.join(", ")
                )
                .into());
            }
            let (start, end) = window(&input, 60, config.max_window_hours, clock.now_unix())?;
            if input["dimensions"].as_object().is_some_and(|dimensions| dimensions.len() > MAX_DIMENSIONS) {
                return Err(format!("A metric has at most {MAX_DIMENSIONS} dimensions.").into());
            }
            let stat = input["stat"].as_str().unwrap_or("Average").to_owned();
            // At most `max_points` periods over the window, whole minutes.
            let span = (end - start).max(60) as u64;
            let period = span.div_ceil(config.max_points as u64).div_ceil(60).max(1) * 60;
            let dimensions = input["dimensions"]
                .as_object()
                .into_iter()
                .flatten()
                .map(|(name, value)| (name.clone(), value.as_str().unwrap_or_default().to_owned()))
                .collect();
            let query = MetricQuery {
                namespace: namespace.clone(),
                metric: input["metric"].as_str().unwrap_or_default().to_owned(),
                dimensions,
                stat: stat.clone(),
                period_secs: period as u32,
                start,
                end,
                max_points: config.max_points,
            };
            let series = cloudwatch.metric(&query).await.map_err(|err| err.to_string())?;
            let mut points = series.points;
            let partial = series.partial || points.len() > config.max_points;
            if points.len() > config.max_points {
                points.drain(..points.len() - config.max_points);
            }
            let values: Vec<f64> = points.iter().map(|(_, value)| *value).collect();
            let summary = if values.is_empty() {
                json!({"datapoints": 0, "note": "No datapoints in this window: check the metric's name and dimensions (they must match exactly), or widen the window."})
            } else {
                let (min, max) = values.iter().fold((f64::MAX, f64::MIN), |(lo, hi), v| (lo.min(*v), hi.max(*v)));
                let last = points.last().expect("not empty");
                json!({
                    "datapoints": values.len(),
                    "min": round(min),
                    "max": round(max),
                    "average": round(values.iter().sum::<f64>() / values.len() as f64),
                    "last": {"time": iso8601_utc(last.0), "value": round(last.1)},
                    "points": points.iter().map(|(time, value)| json!([iso8601_utc(*time), round(*value)])).collect::<Vec<_>>(),
                })
            };
            Ok(ToolOutput::Json(json!({
                "metric": format!("{namespace}/{}", query.metric),
                "dimensions": input["dimensions"].clone(),
                "stat": stat,
                "period_secs": period,
                "from": iso8601_utc(start),
                "to": iso8601_utc(end),
                "summary": summary,
                "partial": partial,
            })))
        }
    })
}

pub fn logs_tool(
    config: LogsConfig,
    logs: Arc<dyn LogsInsights>,
    clock: Arc<dyn Clock>,
    catalog: Option<Arc<ServiceCatalog>>,
) -> Result<Tool, ToolDefinitionError> {
    let spec = ToolSpec {
        name: "logs_query".into(),
        description: format!(
            "Run a CloudWatch Logs Insights query (e.g. `fields @timestamp, @message | filter @message like /ERROR/ | sort @timestamp desc`) over up to {MAX_GROUPS} log groups matching {} and a window (default the last {} minutes, at most {} hours). Returns at most {} rows. Narrow with filter and fields: every query is billed by the bytes it scans.",
            config.log_groups.join(", "),
            config.default_window_minutes,
            config.max_window_hours,
            config.max_rows
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "log_groups": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 512}, "maxItems": MAX_GROUPS},
                "service": {"type": "string", "maxLength": 100, "description": "A service from the team's service catalog: its log groups are queried"},
                "query": {"type": "string", "minLength": 1, "maxLength": 10000},
                "since_minutes": {"type": "integer", "minimum": 1, "description": "Start of the window, minutes ago"},
                "until_minutes": {"type": "integer", "minimum": 0, "description": "End of the window, minutes ago (default 0: now)"}
            },
            "required": ["query"],
            "additionalProperties": false
        }),
    };
    let mut spec = spec;
    if catalog.is_none() {
        // Without a catalog there is no service to name.
        if let Some(properties) = spec.input_schema["properties"].as_object_mut() {
            properties.remove("service");
        }
    }
    let timeout = Duration::from_secs(config.timeout_secs);
    let config = Arc::new(config);
    Tool::new(spec, Effect::ReadOnly, timeout + STOP_MARGIN, move |input: Value| {
        let (config, logs, clock, catalog) = (config.clone(), logs.clone(), clock.clone(), catalog.clone());
        async move {
            let mut groups: Vec<String> = input["log_groups"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|g| g.as_str().map(str::to_owned))
                .collect();
            if let Some(name) = input["service"].as_str() {
                let service = catalog.as_ref().and_then(|catalog| catalog.find(name)).ok_or_else(|| {
                    format!("There is no service {name:?} in the team's service catalog: name its log groups instead.")
                })?;
                for group in &service.log_groups {
                    if !groups.contains(group) {
                        groups.push(group.clone());
                    }
                }
            }
            check_groups(&config, &groups)?;
            let (start, end) =
                window(&input, config.default_window_minutes as i64, config.max_window_hours, clock.now_unix())?;
            let query = LogsQuery {
                log_groups: groups.clone(),
                query: input["query"].as_str().unwrap_or_default().to_owned(),
                start,
                end,
                limit: config.max_rows,
            };
            run_query(&config, logs.as_ref(), &query).await
        }
    })
}

/// Every group named must match an allowed glob, and no more than
/// [`MAX_GROUPS`]; a glob itself is not a group name.
fn check_groups(config: &LogsConfig, groups: &[String]) -> Result<(), ToolError> {
    if groups.is_empty() || groups.len() > MAX_GROUPS {
        return Err(format!("Name 1 to {MAX_GROUPS} log groups (log_groups, or a service from the catalog).").into());
    }
    for group in groups {
        if group.contains(['*', '?']) {
            return Err(format!(
                "{group:?} is a pattern: name log groups exactly (allowed: {}).",
                config.log_groups.join(", ")
            )
            .into());
        }
        if !config.log_groups.iter().any(|glob| glob_matches(glob, group)) {
            return Err(format!(
                "The log group {group:?} is not one this assistant may read: only groups matching {}.",
                config.log_groups.join(", ")
            )
            .into());
        }
    }
    Ok(())
}

/// The window the input names (`since_minutes` ago to `until_minutes`
/// ago), refused past `max_hours`.
fn window(input: &Value, default_minutes: i64, max_hours: u64, now: i64) -> Result<(i64, i64), ToolError> {
    let since = input["since_minutes"].as_i64().unwrap_or(default_minutes);
    let until = input["until_minutes"].as_i64().unwrap_or(0);
    if since <= until {
        return Err(format!("since_minutes ({since}) must be more than until_minutes ({until}).").into());
    }
    let minutes = since - until;
    if minutes as u64 > max_hours * 60 {
        return Err(format!(
            "A window of {minutes} minutes is wider than the {max_hours} hours allowed: ask for a shorter window, or several."
        ).into());
    }
    Ok((now - since * 60, now - until * 60))
}

/// Runs `query` to its end or its time limit; a failure is what the model reads.
async fn run_query(config: &LogsConfig, logs: &dyn LogsInsights, query: &LogsQuery) -> Result<ToolOutput, ToolError> {
    let started = tokio::time::Instant::now();
    let deadline = started + Duration::from_secs(config.timeout_secs);
    let id = logs.start_query(query).await.map_err(|err| err.to_string())?;
    let mut stopped = false;
    let results = loop {
        tokio::time::sleep(POLL_EVERY.min(deadline.saturating_duration_since(tokio::time::Instant::now()))).await;
        let results = logs.query_results(&id).await.map_err(|err| err.to_string())?;
        if results.status.is_some_and(QueryStatus::is_done) {
            break results;
        }
        if tokio::time::Instant::now() >= deadline {
            // Stop the scan (and its bill); what it found so far is kept.
            if let Err(err) = logs.stop_query(&id).await {
                tracing::warn!(error = %err, "a Logs Insights query could not be stopped");
            }
            stopped = true;
            break results;
        }
    };
    if let Some(status @ (QueryStatus::Failed | QueryStatus::Cancelled | QueryStatus::Timeout | QueryStatus::Unknown)) =
        results.status
    {
        return Err(format!("The query ended {status:?}: check its syntax, or narrow it.").into());
    }
    let total = results.rows.len();
    let mut rows = Vec::new();
    let mut bytes = 0;
    for row in results.rows.iter().take(config.max_rows) {
        let row: serde_json::Map<String, Value> =
            row.iter().map(|(field, value)| (field.clone(), Value::String(cut(value, MAX_FIELD_CHARS)))).collect();
        let size = serde_json::to_string(&row).map(|text| text.len()).unwrap_or_default();
        if bytes + size > config.max_bytes {
            break;
        }
        bytes += size;
        rows.push(Value::Object(row));
    }
    let mut answer = json!({
        "log_groups": query.log_groups,
        "from": iso8601_utc(query.start),
        "to": iso8601_utc(query.end),
        "rows": rows,
        "rows_shown": rows.len(),
        "rows_found": total,
        "bytes_scanned": results.bytes_scanned,
    });
    if rows.len() < total {
        answer["note"] = json!(format!(
            "Only {} of {total} rows fit ({} bytes at most): narrow the query (fields, filter, stats) to see the rest.",
            rows.len(),
            config.max_bytes
        ));
    }
    if stopped {
        answer["stopped"] = json!(format!(
            "The query was stopped after {} s; these are the rows it had found. Narrow the window or the filter.",
            config.timeout_secs
        ));
    }
    Ok(ToolOutput::Json(answer))
}

/// At most `max` characters, marked when cut.
fn cut(text: &str, max: usize) -> String {
    match text.char_indices().nth(max) {
        Some((at, _)) => format!("{}… [cut]", &text[..at]),
        None => text.to_owned(),
    }
}

fn round(value: f64) -> f64 {
    (value * 1_000.0).round() / 1_000.0
}

#[cfg(test)]
mod tests;
