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

use assistant_core::Retryable;
use aws_lambda_events::sqs::{BatchItemFailure, SqsBatchResponse, SqsEvent, SqsMessage};
use std::collections::HashSet;
use std::fmt::{Debug, Display};
use std::future::Future;
use tracing::{Instrument, error, info, info_span, warn};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Record<'a> {
    pub message_id: &'a str,
    pub body: &'a str,
    /// The FIFO message group, `None` on a standard queue.
    pub group: Option<&'a str>,
    /// The queue it came from (`eventSourceARN`).
    pub source: &'a str,
}

impl<'a> From<&'a SqsMessage> for Record<'a> {
    fn from(message: &'a SqsMessage) -> Self {
        Record {
            message_id: message.message_id.as_deref().unwrap_or_default(),
            body: message.body.as_deref().unwrap_or_default(),
            group: message.attributes.get("MessageGroupId").map(String::as_str),
            source: message.event_source_arn.as_deref().unwrap_or_default(),
        }
    }
}

/// Handles an SQS event's records in order (see [`handle_in_order`]); the
/// response that names the failed ones.
pub async fn handle_event<'a, F, Fut>(event: &'a SqsEvent, handle: F) -> SqsBatchResponse
where
    F: FnMut(Record<'a>) -> Fut,
    Fut: Future<Output = Handled>,
{
    let records: Vec<Record<'a>> = event.records.iter().map(Record::from).collect();
    let failures = handle_in_order(&records, handle).await;
    let mut response = SqsBatchResponse::default();
    response.batch_item_failures = failures
        .into_iter()
        .map(|id| {
            let mut failure = BatchItemFailure::default();
            failure.item_identifier = id;
            failure
        })
        .collect();
    response
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handled {
    Done,
    /// Leave it on the queue: SQS redelivers it, and after the queue's
    /// maximum receives moves it to the dead-letter queue.
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
            warn!(error = %err, "message failed; SQS will redeliver it");
            Handled::Failed
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

/// Handles records one at a time in order; returns the ids to report as
/// batch item failures.
pub async fn handle_in_order<'a, F, Fut>(records: &[Record<'a>], mut handle: F) -> Vec<String>
where
    F: FnMut(Record<'a>) -> Fut,
    Fut: Future<Output = Handled>,
{
    let mut failed_groups: HashSet<&str> = HashSet::new();
    let mut failures = Vec::new();
    for record in records {
        if record.group.is_some_and(|group| failed_groups.contains(group)) {
            failures.push(record.message_id.to_owned());
            continue;
        }
        let span = info_span!("sqs_record", message_id = record.message_id);
        if handle(*record).instrument(span).await == Handled::Failed {
            failures.push(record.message_id.to_owned());
            failed_groups.extend(record.group);
        }
    }
    failures
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record<'a>(id: &'a str, group: Option<&'a str>) -> Record<'a> {
        Record { message_id: id, body: id, group, source: "arn:aws:sqs:us-east-1:123456789012:work.fifo" }
    }

    #[tokio::test]
    async fn a_failure_holds_back_its_own_thread_only() {
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
            async move { if r.message_id == "2" { Handled::Failed } else { Handled::Done } }
        })
        .await;
        assert_eq!(failures, ["2", "4"], "4 follows the failed 2 in thread B");
        assert_eq!(handled, ["1", "2", "3", "5"], "4 was not handled out of order");
    }

    #[tokio::test]
    async fn on_a_standard_queue_failures_stand_alone() {
        let records = [record("1", None), record("2", None)];
        let failures =
            handle_in_order(
                &records,
                |r| async move { if r.message_id == "1" { Handled::Failed } else { Handled::Done } },
            )
            .await;
        assert_eq!(failures, ["1"]);
    }
}
