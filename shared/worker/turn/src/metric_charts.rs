//! `chart_result`: the model shows one of its `cloudwatch_metrics` results
//! as a chart beside its answer, the way `attach_result` attaches a result
//! as a file ([`crate::answer_files`]).
//!
//! The worker handles the call itself: it finds the named result and writes
//! its points, as they came from CloudWatch (never as the model retyped
//! them), as a Markdown table with a line saying what it shows; the table
//! goes below the answer when the turn settles ([`finish`]). The responder
//! charts a table of numbers as Slack's data visualization block
//! (`responder-logic`'s `charts`, which keeps Slack's limits: two charts a
//! message, title and label lengths), and the table stays as the chart's
//! text fallback.
//!
//! A chart takes at most [`METRIC_CHART_POINTS`] points. A series with more is
//! merged into that many runs of consecutive periods, each run one point
//! by the statistic's own rule (the maximum of maxima and percentiles, the
//! minimum of minima, the sum of sums and counts, the mean of averages), and
//! the line below the table says so: nothing is dropped or cut silently.
//! At most [`MAX_METRIC_CHARTS`] charts an answer, what one message shows.

use crate::answer_files::earlier_result;
use assistant_core::model::ToolSpec;
use assistant_core::turn::{Content, ToolOutput, ToolResult, ToolStatus, ToolUse, Turn};
use serde_json::{Value, json};
use std::time::Duration;
pub use tools_registry::{CHART_RESULT, METRICS_TOOL};
use tools_registry::{Effect, Tool};

/// Points a chart's series holds (Slack's data visualization block: 1 to
/// 20 data points; `responder_logic::charts::CHART_POINTS`).
pub const METRIC_CHART_POINTS: usize = 20;
/// Charts one answer gets (Slack: two data visualization blocks a message;
/// `responder_logic::charts::CHARTS_PER_MESSAGE`).
pub const MAX_METRIC_CHARTS: usize = 2;

/// The tool as the model is told about it; its calls are the worker's
/// ([`chart`]), never the registry's.
pub fn chart_result_tool() -> Tool {
    let spec = ToolSpec {
        name: CHART_RESULT.into(),
        description: format!(
            "Show the points of one of your earlier {METRICS_TOOL} results as a chart below your answer (Slack draws \
             it from the exact values; the points also appear as a table). Use it when the shape over time matters \
             more than one number. At most {MAX_METRIC_CHARTS} per answer; do not paste the points yourself."
        ),
        input_schema: json!({
            "type": "object",
            "properties": {
                "tool_use_id": {"type": "string", "description": format!("The id of the earlier {METRICS_TOOL} call whose result to chart.")}
            },
            "required": ["tool_use_id"],
            "additionalProperties": false
        }),
    };
    Tool::new(spec, Effect::ReadOnly, Duration::from_secs(5), |_| async {
        Err::<ToolOutput, _>("chart_result is handled by the worker".into())
    })
    .expect("the built-in schema is valid")
}

/// Runs a `chart_result` call for `turn`: its result for the model; the
/// chart's table is added to `turn.answer_charts`.
pub fn chart(turn: &mut Turn, call: &ToolUse) -> ToolResult {
    let reply =
        |status, text: String| ToolResult { tool_use_id: call.id.clone(), status, output: ToolOutput::Text(text) };
    if turn.answer_charts.len() >= MAX_METRIC_CHARTS {
        return reply(ToolStatus::Error, format!("This answer has {MAX_METRIC_CHARTS} charts already."));
    }
    let wanted = call.input["tool_use_id"].as_str().unwrap_or_default();
    let of_metrics = turn
        .transcript
        .iter()
        .flat_map(|m| &m.content)
        .any(|content| matches!(content, Content::ToolUse(made) if made.id == wanted && made.name == METRICS_TOOL));
    let result = of_metrics.then(|| earlier_result(turn, wanted)).flatten();
    let value = match result.map(|result| &result.output) {
        Some(ToolOutput::Json(value)) => value.clone(),
        Some(ToolOutput::Text(text)) => serde_json::from_str(text).unwrap_or_default(),
        // Metric results are small; one stored whole was cut for the model.
        Some(ToolOutput::Stored { .. } | ToolOutput::Task(_)) | None => {
            return reply(
                ToolStatus::Error,
                format!("No successful {METRICS_TOOL} call {wanted:?} in this turn to chart."),
            );
        }
    };
    match table(&value) {
        Some(table) => {
            turn.answer_charts.push(table);
            reply(
                ToolStatus::Success,
                "The chart will be shown below your answer with its points; do not paste them.".into(),
            )
        }
        None => reply(ToolStatus::Error, "That result has no datapoints to chart.".into()),
    }
}

/// How runs of consecutive periods merge into one point, by statistic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Merge {
    Max,
    Min,
    Sum,
    Mean,
}

impl Merge {
    fn of(stat: &str) -> Self {
        let lower = stat.to_ascii_lowercase();
        if lower == "maximum" || lower.starts_with('p') {
            Merge::Max
        } else if lower == "minimum" {
            Merge::Min
        } else if lower == "sum" || lower == "samplecount" {
            Merge::Sum
        } else {
            Merge::Mean
        }
    }

    fn apply(self, values: &[f64]) -> f64 {
        match self {
            Merge::Max => values.iter().copied().fold(f64::MIN, f64::max),
            Merge::Min => values.iter().copied().fold(f64::MAX, f64::min),
            Merge::Sum => values.iter().sum(),
            Merge::Mean => values.iter().sum::<f64>() / values.len() as f64,
        }
    }

    fn words(self) -> &'static str {
        match self {
            Merge::Max => "the maximum",
            Merge::Min => "the minimum",
            Merge::Sum => "the sum",
            Merge::Mean => "the mean",
        }
    }
}

/// `points` in at most `max` runs of consecutive points (the first runs
/// one longer when they do not divide evenly), each merged by `merge` and
/// labelled by its first point's time; and the longest run.
fn merged(points: &[(String, f64)], max: usize, merge: Merge) -> (Vec<(String, f64)>, usize) {
    if points.len() <= max {
        return (points.to_vec(), 1);
    }
    let (base, extra) = (points.len() / max, points.len() % max);
    let mut out = Vec::with_capacity(max);
    let mut at = 0;
    for run in 0..max {
        let len = base + usize::from(run < extra);
        let values: Vec<f64> = points[at..at + len].iter().map(|(_, value)| *value).collect();
        out.push((points[at].0.clone(), merge.apply(&values)));
        at += len;
    }
    (out, base + usize::from(extra > 0))
}

/// A time as a chart's label: `10:05` when the series is within one UTC
/// day, `11-27 10:05` otherwise (from `2026-11-27T10:05:00Z`).
fn label(time: &str, one_day: bool) -> String {
    match (time.get(5..10), time.get(11..16)) {
        (Some(day), Some(clock)) if !one_day => format!("{day} {clock}"),
        (_, Some(clock)) => clock.to_owned(),
        _ => time.to_owned(),
    }
}

/// A value as a plain number the responder's charts read (`4200`,
/// `120.5`), at most three decimals.
fn plain(value: f64) -> String {
    let rounded = (value * 1_000.0).round() / 1_000.0;
    format!("{rounded}")
}

/// Text for a table cell: no pipes or line breaks.
fn cell(text: &str) -> String {
    text.replace(['|', '\n', '\r'], " ")
}

/// The Markdown the answer gets for a `cloudwatch_metrics` result: the
/// points as a table (time, value), then a line saying what the chart
/// shows and how its points were merged. `None` without datapoints.
fn table(result: &Value) -> Option<String> {
    let points: Vec<(String, f64)> = result["summary"]["points"]
        .as_array()?
        .iter()
        .filter_map(|point| Some((point[0].as_str()?.to_owned(), point[1].as_f64().filter(|v| v.is_finite())?)))
        .collect();
    if points.is_empty() {
        return None;
    }
    let stat = result["stat"].as_str().unwrap_or("Average");
    let metric = result["metric"].as_str().unwrap_or("metric");
    let name = metric.rsplit('/').next().unwrap_or(metric);
    let merge = Merge::of(stat);
    let (shown, longest) = merged(&points, METRIC_CHART_POINTS, merge);
    let one_day = points.first().and_then(|(t, _)| t.get(..10)) == points.last().and_then(|(t, _)| t.get(..10));
    let mut out = format!("| time (UTC) | {} {} |\n|---|---|\n", cell(name), cell(stat));
    for (time, value) in &shown {
        out.push_str(&format!("| {} | {} |\n", label(time, one_day), plain(*value)));
    }
    let dimensions: Vec<String> = result["dimensions"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(key, value)| format!("{key}={}", value.as_str().unwrap_or_default()))
        .collect();
    let of = if dimensions.is_empty() { String::new() } else { format!(" {{{}}}", dimensions.join(", ")) };
    let mut line = format!(
        "_{}{of}, {stat}, {} to {}: {} datapoints",
        cell(metric),
        result["from"].as_str().unwrap_or("?"),
        result["to"].as_str().unwrap_or("?"),
        points.len()
    );
    if shown.len() < points.len() {
        line.push_str(&format!(
            ", shown as {} points (a chart holds {METRIC_CHART_POINTS}), each {} of up to {longest} consecutive periods",
            shown.len(),
            merge.words()
        ));
    }
    if result["partial"].as_bool() == Some(true) {
        line.push_str("; CloudWatch returned only part of the window");
    }
    line.push_str("._");
    Some(format!("{out}\n{line}"))
}

/// The answer as it settles: the charts the model asked for below it,
/// then a line for each time the guardrail acted.
pub(crate) fn finish(turn: &Turn, answer: String) -> String {
    let answer =
        if turn.answer_charts.is_empty() { answer } else { format!("{answer}\n\n{}", turn.answer_charts.join("\n\n")) };
    crate::guarding::with_interventions(turn, answer)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn result(points: usize, stat: &str) -> Value {
        let points: Vec<Value> =
            (0..points).map(|n| json!([format!("2026-11-27T10:{n:02}:00Z"), n as f64 + 0.5])).collect();
        json!({
            "metric": "AWS/ApiGateway/Latency", "dimensions": {"ApiName": "checkout"}, "stat": stat,
            "period_secs": 60, "from": "2026-11-27T10:00:00Z", "to": "2026-11-27T10:30:00Z",
            "summary": {"datapoints": points.len(), "points": points}, "partial": false
        })
    }

    #[test]
    fn a_series_a_chart_holds_is_shown_point_for_point() {
        let table = table(&result(3, "p99")).unwrap();
        assert!(
            table.starts_with("| time (UTC) | Latency p99 |\n|---|---|\n| 10:00 | 0.5 |\n| 10:01 | 1.5 |\n"),
            "{table}"
        );
        assert!(table.ends_with(
            "_AWS/ApiGateway/Latency {ApiName=checkout}, p99, 2026-11-27T10:00:00Z to 2026-11-27T10:30:00Z: 3 datapoints._"
        ));
    }

    #[test]
    fn a_longer_series_is_merged_by_its_statistic_and_says_so_never_cut() {
        // 30 points into 20: ten runs of two, then ten of one.
        let table = table(&result(30, "Maximum")).unwrap();
        let rows: Vec<&str> = table.lines().filter(|line| line.starts_with("| 10:")).collect();
        assert_eq!(rows.len(), METRIC_CHART_POINTS);
        assert_eq!(rows[0], "| 10:00 | 1.5 |", "the maximum of 0.5 and 1.5");
        assert_eq!(rows[19], "| 10:29 | 29.5 |", "the last point is kept");
        assert!(
            table.contains(": 30 datapoints, shown as 20 points (a chart holds 20), each the maximum of up to 2"),
            "{table}"
        );
        let sum = super::table(&result(30, "Sum")).unwrap();
        assert!(sum.contains("| 10:00 | 2 |") && sum.contains("each the sum of up to 2"), "{sum}");
        let mean = super::table(&result(41, "Average")).unwrap();
        assert!(mean.contains("| 10:00 | 1.5 |") && mean.contains("each the mean of up to 3"), "{mean}");
        // Every point counted once: the sums add up.
        let total: f64 = sum
            .lines()
            .filter(|line| line.starts_with("| 10:"))
            .map(|line| line.rsplit('|').nth(1).unwrap().trim().parse::<f64>().unwrap())
            .sum();
        assert_eq!(total, (0..30).map(|n| n as f64 + 0.5).sum::<f64>());
    }

    #[test]
    fn only_a_metrics_result_is_charted_and_at_most_two_an_answer() {
        use assistant_core::turn::{Message, Role};
        let mut turn = testkit::store_contract::new_turn("EvChart1");
        let call = |id: &str, name: &str| ToolUse { id: id.into(), name: name.into(), input: json!({}) };
        let done = |id: &str, output: ToolOutput| {
            Content::ToolResult(ToolResult { tool_use_id: id.into(), status: ToolStatus::Success, output })
        };
        turn.transcript.push(Message {
            role: Role::Assistant,
            content: vec![Content::ToolUse(call("m1", METRICS_TOOL)), Content::ToolUse(call("l1", "logs_query"))],
        });
        turn.transcript.push(Message {
            role: Role::User,
            content: vec![
                done("m1", ToolOutput::Json(result(25, "p99"))),
                done("l1", ToolOutput::Json(result(25, "p99"))),
            ],
        });
        let asking =
            |of: &str| ToolUse { id: "c".into(), name: CHART_RESULT.into(), input: json!({"tool_use_id": of}) };
        let not_metrics = chart(&mut turn, &asking("l1"));
        assert_eq!(not_metrics.status, ToolStatus::Error, "a logs result, even with points, is not charted");
        assert_eq!(chart(&mut turn, &asking("nope")).status, ToolStatus::Error);
        assert_eq!(chart(&mut turn, &asking("m1")).status, ToolStatus::Success);
        assert_eq!(chart(&mut turn, &asking("m1")).status, ToolStatus::Success);
        let third = chart(&mut turn, &asking("m1"));
        assert_eq!(third.output, ToolOutput::Text(format!("This answer has {MAX_METRIC_CHARTS} charts already.")));
        assert_eq!(turn.answer_charts.len(), MAX_METRIC_CHARTS);
        let answer = finish(&turn, "Latency is up.".into());
        assert!(answer.starts_with("Latency is up.\n\n| time (UTC) | Latency p99 |"), "{answer}");
    }

    #[test]
    fn no_datapoints_no_chart_and_other_days_are_dated() {
        assert_eq!(table(&json!({"summary": {"datapoints": 0}})), None);
        let mut two_days = result(2, "Average");
        two_days["summary"]["points"][1][0] = json!("2026-11-28T09:00:00Z");
        assert!(table(&two_days).unwrap().contains("| 11-28 09:00 | 1.5 |"));
    }
}
