//! Handling an SQS batch with `ReportBatchItemFailures`: only the failed
//! records are retried, so one bad record never fails its batch-mates.
//!
//! On a FIFO queue a thread's messages must be handled in order: once a
//! record fails, the later records of the same message group in the batch
//! are not handled and are reported failed too, so they come back after it.
//! Records of other groups go on.
//!
//! Each record is handled inside a `sqs_record` span carrying its
//! `message_id`, so every log line of its handling names it; the functions
//! open a `turn` span inside it. [`settle`] is how both queue-driven
//! functions turn a handling result into what SQS should do, with one log
//! line.
//!
//! **When a failed record comes back** is decided here, not by the queue's
//! visibility timeout (which must outlast the function's timeout, so is
//! long): a retryable failure comes back after [`retry_delay`], a backoff
//! from its receive count with jitter (seconds at first, minutes at the
//! end); a record that can never succeed comes back at once, so it reaches
//! the dead-letter queue in seconds. [`handle_event`] sets them through the
//! [`MessageVisibility`] port (`ChangeMessageVisibility`); when that fails,
//! the queue's own visibility timeout still brings the record back.

use assistant_core::Retryable;
use assistant_core::ports::MessageVisibility;
use aws_lambda_events::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use std::fmt::{Debug, Display};
use std::future::Future;
use std::hash::{Hash, Hasher};
use std::time::Duration;
use tracing::{Instrument, error, info, info_span, warn};

/// How long a retryable failure waits before its next receive, by the
/// receive that failed (1st, 2nd, …); the last repeats. With the queues'
/// 8 receives, a message keeps trying for about ten minutes in all.
pub const RETRY_DELAYS_SECS: [u64; 7] = [5, 10, 20, 40, 80, 160, 300];

/// The backoff after the `receive_count`th receive failed: the schedule's
/// delay less up to a quarter of it, the same for the same message and
/// receive (so records that failed together do not all come back at once,
/// and a test can know the delay).
pub fn retry_delay(receive_count: u32, message_id: &str) -> Duration {
    let receive_count = receive_count.max(1);
    let index = (receive_count as usize - 1).min(RETRY_DELAYS_SECS.len() - 1);
    let delay_ms = RETRY_DELAYS_SECS[index] * 1_000;
    let mut hasher = std::hash::DefaultHasher::new();
    (message_id, receive_count).hash(&mut hasher);
    let jitter_ms = hasher.finish() % (delay_ms / 4 + 1);
    Duration::from_millis(delay_ms - jitter_ms)
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    pub message_id: &'a str,
    pub body: &'a str,
    /// The FIFO message group, `None` on a standard queue.
    pub group: Option<&'a str>,
    /// The queue it came from (`eventSourceARN`).
    pub source: &'a str,
    /// What `ChangeMessageVisibility` needs.
    pub receipt_handle: &'a str,
    /// How many times SQS has handed it out, this time included.
    pub receive_count: u32,
}

impl<'a> From<&'a SqsMessage> for Record<'a> {
    fn from(message: &'a SqsMessage) -> Self {
        Record {
            message_id: message.message_id.as_deref().unwrap_or_default(),
            body: message.body.as_deref().unwrap_or_default(),
            group: message.attributes.get("MessageGroupId").map(String::as_str),
            source: message.event_source_arn.as_deref().unwrap_or_default(),
            receipt_handle: message.receipt_handle.as_deref().unwrap_or_default(),
            receive_count: message
                .attributes
                .get("ApproximateReceiveCount")
                .and_then(|count| count.parse().ok())
                .unwrap_or(1),
        }
    }
}

/// A failed record and when SQS should hand it out again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Redelivery<'a> {
    pub record: Record<'a>,
    pub after: Duration,
}

/// Handles an SQS event's records in order (see [`handle_in_order`]), sets
/// when each failed one comes back, and answers which failed.
pub async fn handle_event<'a, F, Fut>(
    event: &'a SqsEvent,
    visibility: &dyn MessageVisibility,
    handle: F,
) -> SqsBatchResponse
where
    F: FnMut(Record<'a>) -> Fut,
    Fut: Future<Output = Handled>,
{
    let records: Vec<Record<'a>> = event.records.iter().map(Record::from).collect();
    let redeliveries = handle_in_order(&records, handle).await;
    for Redelivery { record, after } in &redeliveries {
        match visibility.set(record.source, record.receipt_handle, *after).await {
            Ok(()) => info!(message_id = record.message_id, after_ms = after.as_millis() as u64, "redelivery set"),
            Err(err) => warn!(
                message_id = record.message_id,
                error = %err,
                "redelivery not set: the queue's visibility timeout applies"
            ),
        }
    }
    let mut response = SqsBatchResponse::default();
    response.batch_item_failures = redeliveries
        .iter()
        .map(|redelivery| {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = redelivery.record.message_id.to_owned();
            failure
        })
        .collect();
    response
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handled {
    Done,
    /// May succeed later: back after [`retry_delay`].
    Retry,
    /// Can never succeed: back at once, so that the queue's last receive
    /// comes soon and moves it to the dead-letter queue.
    Failed,
}

/// What becomes of a record whose handling can never succeed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Permanent {
    /// Fail it: after the queue's last receive it moves to its dead-letter
    /// queue, where someone hears about it.
    ToDeadLetterQueue,
    /// Delete it: it already is a dead letter, and retrying cannot help.
    Drop,
}

/// One log line for the record's outcome, and what SQS should do with it:
/// done; failed for a retry (retryable errors); or, per `permanent`, left
/// for the dead-letter queue or dropped.
pub fn settle<O: Debug, E: Retryable>(result: Result<O, E>, permanent: Permanent) -> Handled {
    match result {
        Ok(outcome) => {
            info!(?outcome, "message handled");
            Handled::Done
        }
        Err(err) if err.is_retryable() => {
            warn!(error = %err, "message failed; SQS will redeliver it after a backoff");
            Handled::Retry
        }
        Err(err) => match permanent {
            Permanent::ToDeadLetterQueue => {
                error!(error = %err, "message cannot succeed: left for the dead-letter queue");
                Handled::Failed
            }
            Permanent::Drop => {
                error!(error = %err, "dead letter cannot be handled: dropped");
                Handled::Done
            }
        },
    }
}

/// A message that is not one of ours (or of a version this build does not
/// read): logged and left for the dead-letter queue, never retried forever.
pub fn malformed(err: &dyn Display) -> Handled {
    error!(error = %err, "malformed message: left for the dead-letter queue");
    Handled::Failed
}

/// Handles records one at a time in order; returns the records to report
/// as batch item failures, with when each should come back. A record held
/// back behind a failed one of its group comes back with it.
pub async fn handle_in_order<'a, F, Fut>(records: &[Record<'a>], mut handle: F) -> Vec<Redelivery<'a>>
where
    F: FnMut(Record<'a>) -> Fut,
    Fut: Future<Output = Handled>,
{
    let mut failed_groups: Vec<(&str, Duration)> = Vec::new();
    let mut failures = Vec::new();
    for record in records {
        if let Some((_, after)) = failed_groups.iter().find(|(group, _)| Some(*group) == record.group) {
            failures.push(Redelivery { record: *record, after: *after });
            continue;
        }
        let span = info_span!("sqs_record", message_id = record.message_id);
        let after = match handle(*record).instrument(span).await {
            Handled::Done => continue,
            Handled::Retry => retry_delay(record.receive_count, record.message_id),
            Handled::Failed => Duration::ZERO,
        };
        failures.push(Redelivery { record: *record, after });
        failed_groups.extend(record.group.map(|group| (group, after)));
    }
    failures
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record<'a>(id: &'a str, group: Option<&'a str>) -> Record<'a> {
        Record {
            message_id: id,
            body: id,
            group,
            source: "arn:aws:sqs:us-east-1:123456789012:work.fifo",
            receipt_handle: id,
            receive_count: 2,
        }
    }

    fn ids(failures: &[Redelivery<'_>]) -> Vec<String> {
        failures.iter().map(|failure| failure.record.message_id.to_owned()).collect()
    }

    #[tokio::test]
    async fn a_failure_holds_back_its_own_thread_only_and_its_followers_come_back_with_it() {
        let records = [
            record("1", Some("A")),
            record("2", Some("B")),
            record("3", Some("A")),
            record("4", Some("B")),
            record("5", Some("C")),
        ];
        let mut handled = Vec::new();
        let failures = handle_in_order(&records, |r| {
            handled.push(r.message_id.to_owned());
            async move { if r.message_id == "2" { Handled::Retry } else { Handled::Done } }
        })
        .await;
        assert_eq!(ids(&failures), ["2", "4"], "4 follows the failed 2 in thread B");
        assert_eq!(handled, ["1", "2", "3", "5"], "4 was not handled out of order");
        assert_eq!(failures[0].after, retry_delay(2, "2"));
        assert_eq!(failures[1].after, failures[0].after, "held back, it comes back with the one it follows");
    }

    #[tokio::test]
    async fn on_a_standard_queue_failures_stand_alone_and_a_permanent_one_comes_back_at_once() {
        let records = [record("1", None), record("2", None), record("3", None)];
        let failures = handle_in_order(&records, |r| async move {
            match r.message_id {
                "1" => Handled::Failed,
                "3" => Handled::Retry,
                _ => Handled::Done,
            }
        })
        .await;
        assert_eq!(ids(&failures), ["1", "3"]);
        assert_eq!(failures[0].after, Duration::ZERO, "bound for the dead-letter queue: no wait");
        assert!(failures[1].after >= Duration::from_millis(7_500), "{:?}", failures[1].after);
    }

    /// Records the visibility asked for; refuses one receipt.
    #[derive(Default)]
    struct Recorded(std::sync::Mutex<Vec<(String, String, Duration)>>);

    #[async_trait::async_trait]
    impl MessageVisibility for Recorded {
        async fn set(
            &self,
            queue_arn: &str,
            receipt_handle: &str,
            after: Duration,
        ) -> Result<(), assistant_core::PortError> {
            self.0.lock().unwrap().push((queue_arn.into(), receipt_handle.into(), after));
            match receipt_handle {
                "refused" => Err(assistant_core::PortError::new("ChangeMessageVisibility", "receipt expired")),
                _ => Ok(()),
            }
        }
    }

    #[tokio::test]
    async fn a_batch_sets_when_each_failed_record_comes_back_and_reports_them_even_if_that_fails() {
        let event: SqsEvent = serde_json::from_value(serde_json::json!({"Records": [
            {"messageId": "ok", "receiptHandle": "r-ok", "body": "", "eventSourceARN": "arn:q",
             "attributes": {"ApproximateReceiveCount": "1"}},
            {"messageId": "busy", "receiptHandle": "r-busy", "body": "", "eventSourceARN": "arn:q",
             "attributes": {"ApproximateReceiveCount": "3"}},
            {"messageId": "poison", "receiptHandle": "refused", "body": "", "eventSourceARN": "arn:q",
             "attributes": {}},
        ]}))
        .unwrap();
        let visibility = Recorded::default();
        let response = handle_event(&event, &visibility, |r| async move {
            match r.message_id {
                "busy" => Handled::Retry,
                "poison" => Handled::Failed,
                _ => Handled::Done,
            }
        })
        .await;
        let failed: Vec<_> = response.batch_item_failures.iter().map(|f| f.item_identifier.clone()).collect();
        assert_eq!(failed, ["busy", "poison"]);
        let set = visibility.0.lock().unwrap().clone();
        assert_eq!(
            set,
            [
                ("arn:q".to_owned(), "r-busy".to_owned(), retry_delay(3, "busy")),
                ("arn:q".to_owned(), "refused".to_owned(), Duration::ZERO),
            ]
        );
        assert!(retry_delay(3, "busy") >= Duration::from_secs(15), "the third receive waits ~20 s");
    }

    #[test]
    fn the_backoff_grows_with_the_receive_count_within_a_quarter_of_the_schedule() {
        let ids: Vec<String> = (0..200).map(|n| format!("message-{n}")).collect();
        for (receive, base) in RETRY_DELAYS_SECS.iter().enumerate() {
            let delays: Vec<Duration> = ids.iter().map(|id| retry_delay(receive as u32 + 1, id)).collect();
            let (min, max) = (delays.iter().min().unwrap(), delays.iter().max().unwrap());
            assert!(*max <= Duration::from_secs(*base), "receive {}: {max:?}", receive + 1);
            assert!(*min >= Duration::from_secs(*base) * 3 / 4, "receive {}: {min:?}", receive + 1);
            assert!(max > min, "receive {}: jittered, not all equal", receive + 1);
        }
        assert_eq!(retry_delay(40, "m"), retry_delay(40, "m"), "the same message and receive, the same delay");
        assert!(retry_delay(40, "m") <= Duration::from_secs(300), "the last delay repeats");
        assert_eq!(retry_delay(0, "m"), retry_delay(1, "m"), "a missing count is the first receive");
        let total: u64 = RETRY_DELAYS_SECS.iter().sum();
        assert!(total <= 620, "eight receives span about ten minutes: {total} s");
    }
}
