//! What the team runs, as the worker reads it: CloudWatch alarms and
//! metrics, CloudWatch Logs Insights, and Bedrock knowledge bases. The
//! domain's own types; the adapters (`shared/adapters/cloudwatch`,
//! `shared/adapters/knowledge-base`) translate AWS's wire formats at the
//! edge, the tools (`tools-aws`, `tools-knowledge`) bound
//! and shape what the model sees.

use crate::ports::PortError;
use async_trait::async_trait;
use std::sync::Arc;

/// Alarms to list.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct AlarmQuery {
    /// `ALARM`, `OK` or `INSUFFICIENT_DATA`; every state when `None`.
    pub state: Option<String>,
    /// Alarms whose name starts with this.
    pub name_prefix: Option<String>,
    /// At most this many.
    pub max: usize,
}

/// One alarm as the model needs it.
#[derive(Debug, Clone, PartialEq)]
pub struct Alarm {
    pub name: String,
    pub state: String,
    pub reason: String,
    /// When it entered its state (Unix seconds).
    pub since: Option<i64>,
    /// `Namespace/MetricName{Name=Value,…}`; `None` for a composite alarm.
    pub metric: Option<String>,
    /// `GreaterThanThreshold 5 (Sum over 60 s, 3 periods)`.
    pub condition: Option<String>,
}

/// One metric's statistic over a window.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricQuery {
    pub namespace: String,
    pub metric: String,
    pub dimensions: Vec<(String, String)>,
    /// `Average`, `Sum`, `Minimum`, `Maximum`, `SampleCount`, `p99`…
    pub stat: String,
    pub period_secs: u32,
    pub start: i64,
    pub end: i64,
    /// Datapoints asked for at most.
    pub max_points: usize,
}

/// The datapoints, oldest first.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct MetricSeries {
    pub points: Vec<(i64, f64)>,
    /// More datapoints existed than were read.
    pub partial: bool,
}

/// A Logs Insights query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogsQuery {
    pub log_groups: Vec<String>,
    pub query: String,
    pub start: i64,
    pub end: i64,
    /// Rows returned at most (`StartQuery`'s `limit`).
    pub limit: usize,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum QueryStatus {
    Scheduled,
    Running,
    Complete,
    Failed,
    Cancelled,
    Timeout,
    Unknown,
}

impl QueryStatus {
    pub fn is_done(self) -> bool {
        !matches!(self, QueryStatus::Scheduled | QueryStatus::Running)
    }
}

/// A query's rows so far: each a list of `(field, value)`.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct QueryResults {
    pub status: Option<QueryStatus>,
    pub rows: Vec<Vec<(String, String)>>,
    pub bytes_scanned: f64,
    pub records_matched: f64,
}

/// A passage a knowledge base returned.
#[derive(Debug, Clone, PartialEq)]
pub struct Passage {
    pub text: String,
    /// Where it comes from: an S3 URI, a URL, a document id.
    pub source: Option<String>,
    pub score: Option<f64>,
}

/// CloudWatch's alarms and metrics, read-only.
#[async_trait]
pub trait CloudWatch: Send + Sync {
    async fn alarms(&self, query: &AlarmQuery) -> Result<Vec<Alarm>, PortError>;
    async fn metric(&self, query: &MetricQuery) -> Result<MetricSeries, PortError>;
}

/// CloudWatch Logs Insights: start a query, read its results, stop it.
#[async_trait]
pub trait LogsInsights: Send + Sync {
    /// The query's id.
    async fn start_query(&self, query: &LogsQuery) -> Result<String, PortError>;
    async fn query_results(&self, query_id: &str) -> Result<QueryResults, PortError>;
    async fn stop_query(&self, query_id: &str) -> Result<(), PortError>;
}

/// Bedrock knowledge bases: the passages nearest a query.
#[async_trait]
pub trait KnowledgeBases: Send + Sync {
    async fn retrieve(
        &self,
        knowledge_base_id: &str,
        query: &str,
        max_results: usize,
    ) -> Result<Vec<Passage>, PortError>;
}

/// Which account and region a tool reads: the worker's own, or a role to
/// assume in another account (production apart from tooling).
#[derive(Debug, Clone, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AwsAccount {
    #[serde(default)]
    pub role_arn: Option<String>,
    #[serde(default)]
    pub region: Option<String>,
}

/// Opens the AWS services the tools read, per account.
#[async_trait]
pub trait AwsConnector: Send + Sync {
    async fn cloudwatch(&self, account: &AwsAccount) -> Arc<dyn CloudWatch>;
    async fn logs(&self, account: &AwsAccount) -> Arc<dyn LogsInsights>;
}
