//! Calls a server runs as tasks ([`ToolOutput::Task`] in the last step's
//! results; MCP tasks, see `tools_mcp::tasks`): before its next model call
//! the turn polls each at the pace the server asks, puts each result in
//! its place once it is done (guarded and fitted like every result), and
//! goes on in a continuation when the invocation runs short. A task waited
//! for longer than its tool allows
//! ([`assistant_core::turn::RunningTask::wait_secs`]) is cancelled and the
//! model told; a
//! turn that ends with tasks still running (stopped, or its thread told it
//! failed) cancels them.

use crate::streaming::AnswerStream;
use crate::{Deadline, Worker, WorkerError, reading, streaming};
use assistant_core::turn::{ToolOutput, ToolResult, ToolStatus, Turn};
use std::time::Duration;
use tools_registry::Polled;
use tracing::{info, warn};

/// Kept of an invocation's time after the last poll: to save the turn
/// and queue its continuation.
const KEPT_AFTER_POLLS: Duration = Duration::from_secs(20);

/// What waiting for the step's tasks came to.
pub(crate) enum Waited {
    /// Every task has its result in place: the turn goes on.
    Done,
    /// Tasks still run and this invocation has no time for another poll.
    OutOfTime,
}

impl Worker {
    /// Polls the last step's tasks until each has its result or this
    /// invocation runs short.
    pub(crate) async fn wait_for_tasks(
        &self,
        turn: &mut Turn,
        deadline: &dyn Deadline,
        stream: &mut AnswerStream<'_>,
    ) -> Result<Waited, WorkerError> {
        loop {
            let running = turn.running_tasks();
            if running.is_empty() {
                return Ok(Waited::Done);
            }
            let now = self.clock.now_unix();
            let mut next_poll = Duration::MAX;
            let mut done = Vec::new();
            for (call, task) in running {
                let waited = Duration::from_secs(u64::try_from(now - task.started_at).unwrap_or(0));
                let allowed = Duration::from_secs(task.wait_secs);
                if waited >= allowed {
                    info!(tool = %call.name, waited_secs = waited.as_secs(), "a task ran past its wait: cancelled");
                    self.tools.cancel_task(&call, &task).await;
                    let message = format!(
                        "The tool ran as a task on its server for {} s, longer than this assistant waits for it \
                         ({} s); it was cancelled. Tell the person; do not start it again in this turn.",
                        waited.as_secs(),
                        allowed.as_secs()
                    );
                    let result = ToolResult {
                        tool_use_id: call.id.clone(),
                        status: ToolStatus::Error,
                        output: ToolOutput::Text(message),
                    };
                    done.push((call, result));
                    continue;
                }
                match self.tools.poll_task(&call, &task).await {
                    Polled::Working { message, poll } => {
                        next_poll = next_poll.min(poll);
                        if message.is_some() && message != task.message {
                            let mut task = task.clone();
                            task.message = message.clone();
                            turn.replace_result(ToolResult {
                                tool_use_id: call.id.clone(),
                                status: ToolStatus::Success,
                                output: ToolOutput::Task(task),
                            });
                            if let Some(said) = message {
                                self.show_progress(turn, format!("`{}` is running: {said}", call.name)).await;
                            }
                        }
                    }
                    Polled::Done(result) => done.push((call, result)),
                }
            }
            if !done.is_empty() {
                let (calls, mut results): (Vec<_>, Vec<_>) = done.into_iter().unzip();
                self.guard_results(turn, &mut results).await;
                reading::fit(self.artifacts.as_ref(), turn, &mut results, self.limits.reading)
                    .await
                    .map_err(WorkerError::Artifacts)?;
                let ended = calls.iter().zip(&results).map(|(call, result)| streaming::ended(call, result)).collect();
                stream.tasks(ended).await;
                for result in results {
                    turn.replace_result(result);
                }
                continue;
            }
            let wait = next_poll.min(Duration::from_secs(30));
            if deadline.time_left() < wait + KEPT_AFTER_POLLS {
                return Ok(Waited::OutOfTime);
            }
            tokio::time::sleep(wait).await;
        }
    }

    /// Cancels the tasks the turn's last step still runs (it ends without
    /// their results); best effort.
    pub(crate) async fn cancel_tasks(&self, turn: &Turn) {
        for (call, task) in turn.running_tasks() {
            warn!(tool = %call.name, "the turn ended with a task still running: cancelled");
            self.tools.cancel_task(&call, &task).await;
        }
    }
}
