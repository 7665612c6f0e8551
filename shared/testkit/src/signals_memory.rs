//! In-memory CloudWatch, Logs Insights and knowledge bases: what the AWS
//! tools read, and what they asked for, for the worker's unit tests.

use assistant_core::ports::PortError;
use assistant_core::signals::{
    Alarm, AlarmQuery, AwsAccount, AwsConnector, CloudWatch, KnowledgeBases, LogsInsights, LogsQuery, MetricQuery,
    MetricSeries, Passage, QueryResults, QueryStatus,
};
use async_trait::async_trait;
use std::sync::{Arc, Mutex};

/// Answers what it was given; records every call.
#[derive(Default)]
pub struct MemorySignals {
    pub alarms: Mutex<Vec<Alarm>>,
    pub series: Mutex<MetricSeries>,
    /// Rows every query finds.
    pub rows: Mutex<Vec<Vec<(String, String)>>>,
    /// Polls before a query completes; `usize::MAX`: never.
    pub polls_to_complete: Mutex<usize>,
    pub passages: Mutex<Vec<Passage>>,
    /// Every call, in order, as `Operation detail`.
    pub calls: Mutex<Vec<String>>,
    pub alarm_queries: Mutex<Vec<AlarmQuery>>,
    pub metric_queries: Mutex<Vec<MetricQuery>>,
    pub logs_queries: Mutex<Vec<LogsQuery>>,
    /// Accounts the tools were opened for.
    pub accounts: Mutex<Vec<AwsAccount>>,
}

impl MemorySignals {
    pub fn calls(&self) -> Vec<String> {
        self.calls.lock().unwrap().clone()
    }

    fn record(&self, call: String) {
        self.calls.lock().unwrap().push(call);
    }
}

#[async_trait]
impl CloudWatch for MemorySignals {
    async fn alarms(&self, query: &AlarmQuery) -> Result<Vec<Alarm>, PortError> {
        self.record(format!("DescribeAlarms {:?} {:?}", query.state, query.name_prefix));
        self.alarm_queries.lock().unwrap().push(query.clone());
        Ok(self
            .alarms
            .lock()
            .unwrap()
            .iter()
            .filter(|alarm| query.state.as_ref().is_none_or(|state| &alarm.state == state))
            .filter(|alarm| query.name_prefix.as_ref().is_none_or(|prefix| alarm.name.starts_with(prefix.as_str())))
            .take(query.max)
            .cloned()
            .collect())
    }

    async fn metric(&self, query: &MetricQuery) -> Result<MetricSeries, PortError> {
        self.record(format!("GetMetricData {}/{}", query.namespace, query.metric));
        self.metric_queries.lock().unwrap().push(query.clone());
        Ok(self.series.lock().unwrap().clone())
    }
}

#[async_trait]
impl LogsInsights for MemorySignals {
    async fn start_query(&self, query: &LogsQuery) -> Result<String, PortError> {
        self.record(format!("StartQuery {}", query.log_groups.join(",")));
        self.logs_queries.lock().unwrap().push(query.clone());
        Ok("query-1".into())
    }

    async fn query_results(&self, query_id: &str) -> Result<QueryResults, PortError> {
        self.record(format!("GetQueryResults {query_id}"));
        let polls = self.calls.lock().unwrap().iter().filter(|call| call.starts_with("GetQueryResults")).count();
        let done = polls >= *self.polls_to_complete.lock().unwrap();
        Ok(QueryResults {
            status: Some(if done { QueryStatus::Complete } else { QueryStatus::Running }),
            rows: self.rows.lock().unwrap().clone(),
            bytes_scanned: 1_024.0,
            records_matched: 0.0,
        })
    }

    async fn stop_query(&self, query_id: &str) -> Result<(), PortError> {
        self.record(format!("StopQuery {query_id}"));
        Ok(())
    }
}

#[async_trait]
impl KnowledgeBases for MemorySignals {
    async fn retrieve(&self, id: &str, query: &str, max_results: usize) -> Result<Vec<Passage>, PortError> {
        self.record(format!("Retrieve {id} {query}"));
        Ok(self.passages.lock().unwrap().iter().take(max_results).cloned().collect())
    }
}

/// Opens every account on the same memory.
pub struct MemoryAws(pub Arc<MemorySignals>);

#[async_trait]
impl AwsConnector for MemoryAws {
    async fn cloudwatch(&self, account: &AwsAccount) -> Arc<dyn CloudWatch> {
        self.0.accounts.lock().unwrap().push(account.clone());
        self.0.clone()
    }

    async fn logs(&self, account: &AwsAccount) -> Arc<dyn LogsInsights> {
        self.0.accounts.lock().unwrap().push(account.clone());
        self.0.clone()
    }
}
