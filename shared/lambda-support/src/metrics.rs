//! CloudWatch metrics as Embedded Metric Format: one JSON line on stdout
//! per record, which Lambda's log capture hands to CloudWatch Logs and
//! CloudWatch turns into metrics, with no API call and no agent.
//!
//! A record names its metrics and dimensions in `_aws`; the values, the
//! dimensions' values and any other properties (a turn id, to find its logs)
//! sit at the top level:
//!
//! ```json
//! {"_aws":{"Timestamp":1763800000000,"CloudWatchMetrics":[{"Namespace":"SlackAssistant",
//!   "Dimensions":[["Function","Outcome"]],"Metrics":[{"Name":"Turns","Unit":"Count"}]}]},
//!  "Function":"worker","Outcome":"answered","Turns":1,"turn_id":"T1-Ev1"}
//! ```
//!
//! Names, units and dimensions are what the template's alarms and dashboard
//! use; change them together.

use assistant_core::telemetry::{TurnMetrics, TurnReport};
use serde_json::{Map, Value, json};
use std::time::{SystemTime, UNIX_EPOCH};

/// The CloudWatch namespace of every metric the bot emits.
pub const NAMESPACE: &str = "SlackAssistant";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Count,
    Milliseconds,
    /// A figure with no CloudWatch unit (an amount of money).
    None,
}

impl Unit {
    fn as_str(self) -> &'static str {
        match self {
            Unit::Count => "Count",
            Unit::Milliseconds => "Milliseconds",
            Unit::None => "None",
        }
    }
}

/// One EMF record: built, then [`emit`](Emf::emit)ted.
#[derive(Debug, Clone)]
pub struct Emf {
    dimension_sets: Vec<Vec<&'static str>>,
    metrics: Vec<(&'static str, Unit)>,
    values: Map<String, Value>,
}

impl Emf {
    /// A record of `function` (dimension `Function`), with `dimensions`
    /// besides it: each a dimension set `["Function", name]`, and their
    /// values.
    pub fn new(function: &str, dimensions: &[(&'static str, &str)]) -> Self {
        let mut values = Map::new();
        values.insert("Function".into(), json!(function));
        let mut dimension_sets = Vec::new();
        for (name, value) in dimensions {
            values.insert((*name).into(), json!(value));
            dimension_sets.push(vec!["Function", *name]);
        }
        if dimension_sets.is_empty() {
            dimension_sets.push(vec!["Function"]);
        }
        Self { dimension_sets, metrics: Vec::new(), values }
    }

    pub fn metric(mut self, name: &'static str, value: f64, unit: Unit) -> Self {
        self.metrics.push((name, unit));
        self.values.insert(name.into(), json!(value));
        self
    }

    pub fn count(self, name: &'static str, value: u64) -> Self {
        self.metric(name, value as f64, Unit::Count)
    }

    pub fn millis(self, name: &'static str, value: u64) -> Self {
        self.metric(name, value as f64, Unit::Milliseconds)
    }

    /// A value kept with the record but not a metric (an id to search logs
    /// by).
    pub fn property(mut self, name: &str, value: impl Into<Value>) -> Self {
        self.values.insert(name.into(), value.into());
        self
    }

    /// The record as the one line CloudWatch reads.
    pub fn to_line(&self, timestamp_ms: u64) -> String {
        let metrics: Vec<Value> =
            self.metrics.iter().map(|(name, unit)| json!({"Name": name, "Unit": unit.as_str()})).collect();
        let mut record = self.values.clone();
        record.insert(
            "_aws".into(),
            json!({
                "Timestamp": timestamp_ms,
                "CloudWatchMetrics": [{
                    "Namespace": NAMESPACE,
                    "Dimensions": self.dimension_sets,
                    "Metrics": metrics,
                }],
            }),
        );
        Value::Object(record).to_string()
    }

    /// Prints the record on stdout, where Lambda's log capture finds it.
    pub fn emit(&self) {
        let now = SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_millis() as u64).unwrap_or_default();
        println!("{}", self.to_line(now));
    }
}

/// Settled turns as one EMF record each: by `Function` and `Outcome`
/// (`answered`, `failed`), and by `Function` and `Limit` (`steps`,
/// `tokens`, `none`).
pub struct EmfTurnMetrics {
    pub function: &'static str,
    /// The worker's memory, for the compute part of the cost.
    pub memory_mb: u32,
}

impl EmfTurnMetrics {
    pub fn record(&self, report: &TurnReport) -> Emf {
        let limit = report.limit.map_or("none", |limit| limit.as_str());
        let cost = report.cost(self.memory_mb);
        // The enhancer's tokens count with the turn's; its cost is in the model's.
        let enhancer = report.enhancer.as_ref().map(|run| run.usage).unwrap_or_default();
        let mut record = Emf::new(self.function, &[("Outcome", report.status.as_str()), ("Limit", limit)])
            .count("Turns", 1)
            .count("Steps", u64::from(report.steps))
            .count("ToolCalls", u64::from(report.tool_calls))
            .count("ToolErrors", u64::from(report.tool_errors))
            .count("LimitHits", u64::from(report.limit.is_some()))
            .count("InputTokens", report.usage.input_tokens + enhancer.input_tokens)
            .count("OutputTokens", report.usage.output_tokens + enhancer.output_tokens)
            .count("CacheReadTokens", report.usage.cache_read_tokens)
            .count("CacheWriteTokens", report.usage.cache_write_tokens)
            .millis("TimeToAnswerMs", report.time_to_answer_ms)
            .metric("EstimatedCostUsd", cost.total(), Unit::None)
            .metric("AwsCostUsd", cost.aws, Unit::None)
            .property("turn_id", report.turn_id.as_str());
        if let Some(ms) = report.time_to_first_status_ms {
            record = record.millis("TimeToFirstStatusMs", ms);
        }
        if let Some(ms) = report.time_to_first_text_ms {
            record = record.millis("TimeToFirstTextMs", ms);
        }
        if let Some(run) = &report.enhancer {
            record =
                record.millis("EnhancerLatencyMs", run.latency_ms).count("EnhancerFallbacks", u64::from(!run.used));
        }
        if cost.model.is_none() {
            record = record.property("model_prices", "unknown: set model_prices in the assistant configuration");
        }
        record
    }
}

impl TurnMetrics for EmfTurnMetrics {
    fn turn_settled(&self, report: &TurnReport) {
        self.record(report).emit();
    }

    fn feedback(&self, rating: assistant_core::feedback::Rating) {
        self.rating(rating).emit();
    }

    fn forgotten(&self, reason: assistant_core::messages::ForgetReason, records: usize) {
        self.departure(reason, records).emit();
    }

    fn guardrail_intervened(&self, kind: assistant_core::guardrail::Guarded) {
        self.intervention(kind).emit();
    }

    fn budget_alert(&self, ratio: f64) {
        self.budget(ratio).emit();
    }
}

impl EmfTurnMetrics {
    /// A rating of an answer: one `Feedback` by `Function` and `Rating`.
    pub fn rating(&self, rating: assistant_core::feedback::Rating) -> Emf {
        Emf::new(self.function, &[("Rating", rating.as_str())]).count("Feedback", 1)
    }

    /// The guardrail acted: one `GuardrailInterventions` by `Function` and
    /// `Guarded` (`question`, `tool_results`, `files`, `answer`).
    pub fn intervention(&self, kind: assistant_core::guardrail::Guarded) -> Emf {
        Emf::new(self.function, &[("Guarded", kind.as_str())]).count("GuardrailInterventions", 1)
    }

    /// The deployment passed its monthly budget's alert share: one
    /// `BudgetAlerts` by `Function`, with the share spent (`BudgetSpentRatio`).
    pub fn budget(&self, ratio: f64) -> Emf {
        Emf::new(self.function, &[]).count("BudgetAlerts", 1).metric("BudgetSpentRatio", ratio, Unit::None)
    }

    /// A departure handled: one `Departures` and the `ForgottenRecords` it
    /// deleted, by `Function` and `Reason`.
    pub fn departure(&self, reason: assistant_core::messages::ForgetReason, records: usize) -> Emf {
        Emf::new(self.function, &[("Reason", reason.as_str())])
            .count("Departures", 1)
            .count("ForgottenRecords", records as u64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_intervention_is_one_count_by_what_was_guarded() {
        let metrics = EmfTurnMetrics { function: "worker", memory_mb: 512 };
        let line = metrics.intervention(assistant_core::guardrail::Guarded::ToolResults).to_line(1);
        let record: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(record["_aws"]["CloudWatchMetrics"][0]["Dimensions"], json!([["Function", "Guarded"]]));
        assert_eq!(
            (record["Guarded"].as_str(), record["GuardrailInterventions"].as_f64()),
            (Some("tool_results"), Some(1.0))
        );
    }

    #[test]
    fn a_budget_alert_is_one_count_by_function_with_the_share_spent() {
        let metrics = EmfTurnMetrics { function: "worker", memory_mb: 512 };
        let record: Value = serde_json::from_str(&metrics.budget(0.81).to_line(1)).unwrap();
        assert_eq!(record["_aws"]["CloudWatchMetrics"][0]["Dimensions"], json!([["Function"]]));
        assert_eq!((record["BudgetAlerts"].as_f64(), record["BudgetSpentRatio"].as_f64()), (Some(1.0), Some(0.81)));
    }

    #[test]
    fn a_rating_is_one_feedback_count_by_rating() {
        let metrics = EmfTurnMetrics { function: "worker", memory_mb: 512 };
        let line = metrics.rating(assistant_core::feedback::Rating::Negative).to_line(1);
        let record: Value = serde_json::from_str(&line).unwrap();
        assert_eq!(record["_aws"]["CloudWatchMetrics"][0]["Dimensions"], json!([["Function", "Rating"]]));
        assert_eq!((record["Rating"].as_str(), record["Feedback"].as_f64()), (Some("negative"), Some(1.0)));
    }

    #[test]
    fn a_record_names_its_metrics_and_dimensions_and_carries_their_values() {
        let line = Emf::new("worker", &[("Outcome", "answered"), ("Limit", "none")])
            .count("Turns", 1)
            .millis("TimeToAnswerMs", 4_200)
            .metric("EstimatedCostUsd", 0.0125, Unit::None)
            .property("turn_id", "T1-Ev1")
            .to_line(1_763_800_000_000);
        assert!(!line.contains('\n'), "one line");
        let record: Value = serde_json::from_str(&line).unwrap();
        let aws = &record["_aws"];
        assert_eq!(aws["Timestamp"], 1_763_800_000_000u64);
        let directive = &aws["CloudWatchMetrics"][0];
        assert_eq!(directive["Namespace"], NAMESPACE);
        assert_eq!(directive["Dimensions"], json!([["Function", "Outcome"], ["Function", "Limit"]]));
        assert_eq!(
            directive["Metrics"],
            json!([
                {"Name": "Turns", "Unit": "Count"},
                {"Name": "TimeToAnswerMs", "Unit": "Milliseconds"},
                {"Name": "EstimatedCostUsd", "Unit": "None"}
            ])
        );
        for (name, value) in [
            ("Function", json!("worker")),
            ("Outcome", json!("answered")),
            ("Limit", json!("none")),
            ("Turns", json!(1.0)),
            ("TimeToAnswerMs", json!(4200.0)),
            ("EstimatedCostUsd", json!(0.0125)),
            ("turn_id", json!("T1-Ev1")),
        ] {
            assert_eq!(record[name], value, "{name}");
        }
    }

    #[test]
    fn a_record_without_other_dimensions_is_by_function() {
        let record: Value = serde_json::from_str(&Emf::new("ingress", &[]).count("Accepted", 1).to_line(0)).unwrap();
        assert_eq!(record["_aws"]["CloudWatchMetrics"][0]["Dimensions"], json!([["Function"]]));
    }
}
