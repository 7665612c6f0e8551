//! CloudWatch (alarms, metrics) and CloudWatch Logs Insights behind the
//! core's [`CloudWatch`] and [`LogsInsights`] ports, read-only.
//!
//! CloudWatch speaks `awsJson1_0` (`GraniteServiceVersion20100801.*`) and
//! Logs `awsJson1_1` (`Logs_20140328.*`); both are called through
//! `adapters-sigv4` on the process's HTTP client, signed as the worker's
//! role or, per configured entry, a role assumed in another account
//! ([`SignedAws`]). The endpoint variables are the SDK's:
//! `AWS_ENDPOINT_URL_CLOUDWATCH`, `AWS_ENDPOINT_URL_CLOUDWATCH_LOGS`.
//!
//! Repeats: every call here is a read except `StartQuery`, which is sent
//! again only after a throttle (a repeated start would scan, and bill,
//! twice), and `StopQuery`, which is safe to repeat.

use adapters_sigv4::{AwsApi, AwsError, Repeat, Service, Signer};
use assistant_core::ports::PortError;
use assistant_core::signals::{
    Alarm, AlarmQuery, AwsAccount, AwsConnector, CloudWatch, LogsInsights, LogsQuery, MetricQuery, MetricSeries,
    QueryResults, QueryStatus,
};
use async_trait::async_trait;
use serde_json::{Value, json};
use std::collections::HashMap;
use std::sync::Arc;
use tokio::sync::Mutex;

pub const CLOUDWATCH: Service = Service {
    signing_name: "monitoring",
    endpoint_prefix: "monitoring",
    endpoint_variable: "AWS_ENDPOINT_URL_CLOUDWATCH",
    json_target: Some(("GraniteServiceVersion20100801", "1.0")),
};

pub const LOGS: Service = Service {
    signing_name: "logs",
    endpoint_prefix: "logs",
    endpoint_variable: "AWS_ENDPOINT_URL_CLOUDWATCH_LOGS",
    json_target: Some(("Logs_20140328", "1.1")),
};

/// The session name a second account's CloudTrail shows for the worker.
const SESSION_NAME: &str = "slack-assistant-worker";

fn port_error(operation: &'static str) -> impl Fn(AwsError) -> PortError {
    move |err| PortError::new(operation, err.to_string()).with_source(err)
}

/// CloudWatch's `DescribeAlarms` and `GetMetricData`.
pub struct CloudWatchApi {
    api: AwsApi,
}

impl CloudWatchApi {
    pub fn new(api: AwsApi) -> Self {
        Self { api }
    }
}

#[async_trait]
impl CloudWatch for CloudWatchApi {
    async fn alarms(&self, query: &AlarmQuery) -> Result<Vec<Alarm>, PortError> {
        let mut input =
            json!({ "MaxRecords": query.max.clamp(1, 100), "AlarmTypes": ["MetricAlarm", "CompositeAlarm"] });
        if let Some(state) = &query.state {
            input["StateValue"] = json!(state);
        }
        if let Some(prefix) = &query.name_prefix {
            input["AlarmNamePrefix"] = json!(prefix);
        }
        let answer = self
            .api
            .call("DescribeAlarms", &input, Repeat::Safe)
            .await
            .map_err(port_error("CloudWatch DescribeAlarms"))?;
        let alarm = |alarm: &Value, metric: Option<String>, condition: Option<String>| Alarm {
            name: text(&alarm["AlarmName"]),
            state: text(&alarm["StateValue"]),
            reason: text(&alarm["StateReason"]),
            since: alarm["StateUpdatedTimestamp"].as_f64().map(|t| t as i64),
            metric,
            condition,
        };
        let metric = answer["MetricAlarms"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|found| alarm(found, Some(metric_name(found)), Some(condition(found))));
        let composite = answer["CompositeAlarms"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|found| alarm(found, None, found["AlarmRule"].as_str().map(|rule| format!("composite: {rule}"))));
        Ok(metric.chain(composite).take(query.max).collect())
    }

    async fn metric(&self, query: &MetricQuery) -> Result<MetricSeries, PortError> {
        let dimensions: Vec<Value> =
            query.dimensions.iter().map(|(name, value)| json!({"Name": name, "Value": value})).collect();
        let input = json!({
            "MetricDataQueries": [{
                "Id": "m0",
                "MetricStat": {
                    "Metric": {"Namespace": query.namespace, "MetricName": query.metric, "Dimensions": dimensions},
                    "Period": query.period_secs,
                    "Stat": query.stat,
                },
                "ReturnData": true,
            }],
            "StartTime": query.start,
            "EndTime": query.end,
            "MaxDatapoints": query.max_points,
            "ScanBy": "TimestampAscending",
        });
        let answer = self
            .api
            .call("GetMetricData", &input, Repeat::Safe)
            .await
            .map_err(port_error("CloudWatch GetMetricData"))?;
        let result = &answer["MetricDataResults"][0];
        let times = result["Timestamps"].as_array().cloned().unwrap_or_default();
        let values = result["Values"].as_array().cloned().unwrap_or_default();
        let mut points: Vec<(i64, f64)> = times
            .iter()
            .zip(&values)
            .filter_map(|(time, value)| Some((time.as_f64()? as i64, value.as_f64()?)))
            .collect();
        points.sort_by_key(|(time, _)| *time);
        let partial = result["StatusCode"].as_str().is_some_and(|code| code != "Complete")
            || answer["NextToken"].as_str().is_some_and(|token| !token.is_empty());
        Ok(MetricSeries { points, partial })
    }
}

fn text(value: &Value) -> String {
    value.as_str().unwrap_or_default().to_owned()
}

/// `AWS/ApiGateway/5XXError{ApiName=checkout}`; an alarm on a metric math
/// expression names its expressions.
fn metric_name(alarm: &Value) -> String {
    if let Some(name) = alarm["MetricName"].as_str() {
        let dimensions: Vec<String> = alarm["Dimensions"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|d| format!("{}={}", text(&d["Name"]), text(&d["Value"])))
            .collect();
        return format!("{}/{name}{{{}}}", text(&alarm["Namespace"]), dimensions.join(","));
    }
    let expressions: Vec<String> = alarm["Metrics"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|m| {
            m["Expression"].as_str().or(m["MetricStat"]["Metric"]["MetricName"].as_str()).map(str::to_owned)
        })
        .collect();
    format!("metric math: {}", expressions.join("; "))
}

/// `GreaterThanThreshold 5 (Sum over 60 s, 3 of 3 periods)`.
fn condition(alarm: &Value) -> String {
    let threshold =
        alarm["Threshold"].as_f64().map(|t| t.to_string()).unwrap_or_else(|| text(&alarm["ThresholdMetricId"]));
    let statistic = alarm["Statistic"].as_str().or(alarm["ExtendedStatistic"].as_str()).unwrap_or("expression");
    let period = alarm["Period"].as_u64().unwrap_or_default();
    let evaluation = alarm["EvaluationPeriods"].as_u64().unwrap_or(1);
    let datapoints = alarm["DatapointsToAlarm"].as_u64().unwrap_or(evaluation);
    format!(
        "{} {threshold} ({statistic} over {period} s, {datapoints} of {evaluation} periods)",
        text(&alarm["ComparisonOperator"])
    )
}

/// CloudWatch Logs' `StartQuery`, `GetQueryResults` and `StopQuery`.
pub struct LogsApi {
    api: AwsApi,
}

impl LogsApi {
    pub fn new(api: AwsApi) -> Self {
        Self { api }
    }
}

#[async_trait]
impl LogsInsights for LogsApi {
    async fn start_query(&self, query: &LogsQuery) -> Result<String, PortError> {
        let input = json!({
            "logGroupNames": query.log_groups,
            "queryString": query.query,
            "startTime": query.start,
            "endTime": query.end,
            "limit": query.limit,
        });
        let answer = self
            .api
            .call("StartQuery", &input, Repeat::OnlyIfRefused)
            .await
            .map_err(port_error("CloudWatch Logs StartQuery"))?;
        answer["queryId"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| PortError::new("CloudWatch Logs StartQuery", "the answer has no queryId"))
    }

    async fn query_results(&self, query_id: &str) -> Result<QueryResults, PortError> {
        let answer = self
            .api
            .call("GetQueryResults", &json!({"queryId": query_id}), Repeat::Safe)
            .await
            .map_err(port_error("CloudWatch Logs GetQueryResults"))?;
        let rows = answer["results"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|row| {
                row.as_array()
                    .into_iter()
                    .flatten()
                    .map(|cell| (text(&cell["field"]), text(&cell["value"])))
                    // A pointer to the record: nothing the model can use.
                    .filter(|(field, _)| field != "@ptr")
                    .collect()
            })
            .collect();
        let status = match answer["status"].as_str() {
            Some("Scheduled") => Some(QueryStatus::Scheduled),
            Some("Running") => Some(QueryStatus::Running),
            Some("Complete") => Some(QueryStatus::Complete),
            Some("Failed") => Some(QueryStatus::Failed),
            Some("Cancelled") => Some(QueryStatus::Cancelled),
            Some("Timeout") => Some(QueryStatus::Timeout),
            Some(_) => Some(QueryStatus::Unknown),
            None => None,
        };
        let statistics = &answer["statistics"];
        Ok(QueryResults {
            status,
            rows,
            bytes_scanned: statistics["bytesScanned"].as_f64().unwrap_or_default(),
            records_matched: statistics["recordsMatched"].as_f64().unwrap_or_default(),
        })
    }

    async fn stop_query(&self, query_id: &str) -> Result<(), PortError> {
        match self.api.call("StopQuery", &json!({"queryId": query_id}), Repeat::Safe).await {
            Ok(_) => Ok(()),
            // Finished before it could be stopped: nothing to stop.
            Err(err) if err.kind == "InvalidParameterException" => Ok(()),
            Err(err) => Err(port_error("CloudWatch Logs StopQuery")(err)),
        }
    }
}

/// The AWS services the tools read, signed as the worker's role or as a
/// role assumed in another account; one client per account, built on first
/// use and kept for the process.
pub struct SignedAws {
    aws: aws_config::SdkConfig,
    http: reqwest::Client,
    /// The worker's own account.
    own: Signer,
    /// Roles assumed so far, by ARN.
    roles: Mutex<HashMap<String, Signer>>,
}

impl SignedAws {
    /// `signer` is the process's own (the worker's account); `aws` the
    /// configuration a second account's role is assumed with.
    pub fn new(aws: &aws_config::SdkConfig, signer: Signer, http: reqwest::Client) -> Self {
        Self { aws: aws.clone(), http, own: signer, roles: Mutex::default() }
    }

    async fn api(&self, account: &AwsAccount, service: Service) -> AwsApi {
        let signer = match &account.role_arn {
            None => self.own.clone(),
            Some(role) => {
                let mut roles = self.roles.lock().await;
                match roles.get(role) {
                    Some(signer) => signer.clone(),
                    None => {
                        let signer = Signer::assuming(&self.aws, role, SESSION_NAME).await;
                        roles.insert(role.clone(), signer.clone());
                        signer
                    }
                }
            }
        };
        AwsApi::new(self.http.clone(), signer, service, account.region.as_deref())
    }
}

#[async_trait]
impl AwsConnector for SignedAws {
    async fn cloudwatch(&self, account: &AwsAccount) -> Arc<dyn CloudWatch> {
        Arc::new(CloudWatchApi::new(self.api(account, CLOUDWATCH).await))
    }

    async fn logs(&self, account: &AwsAccount) -> Arc<dyn LogsInsights> {
        Arc::new(LogsApi::new(self.api(account, LOGS).await))
    }
}
