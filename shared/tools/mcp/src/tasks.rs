//! A server's long calls run as tasks (`"tasks": true`; MCP tasks,
//! 2025-11-25). A tool the server lists with `execution.taskSupport`
//! `required` or `optional` is called as a task: the call answers at once
//! with the task ([`ToolOutput::Task`]), which the turn keeps in place of
//! the result. Before its next model call the turn polls each task it
//! keeps, at the pace the server suggests, and a task's result, once it
//! completed, takes its place, redacted and guarded like every result.
//! When the invocation runs short the turn goes on in a continuation,
//! which polls the same task in the same server session (any worker can:
//! the session's id is kept with it). A turn that waited for a task longer
//! than the server's `task_wait_secs` (default and at most
//! [`MAX_TASK_WAIT`]) cancels it (`tasks/cancel`) and tells the model.
//!
//! What a server says of its task is untrusted: its status words are
//! capped and redacted before they are shown as progress; a status this
//! client does not know, a result that is not a tool's result, or a
//! session the server forgot ends the wait with an error the model reads.

use super::{ServerSession, call_error, output};
use assistant_core::mcp::{McpError, McpTask, McpTaskState};
use assistant_core::turn::RunningTask;
use std::time::Duration;
use tools_registry::TaskPoll;
use tracing::{info, warn};

/// The longest a turn waits for one task before it cancels it.
pub const MAX_TASK_WAIT: Duration = Duration::from_secs(900);

/// How long a turn waits for one of `config`'s tasks.
pub(crate) fn wait(config: &super::McpServerConfig) -> Duration {
    config.task_wait_secs.map_or(MAX_TASK_WAIT, Duration::from_secs).min(MAX_TASK_WAIT)
}

/// The task as the turn keeps it.
pub(crate) fn running(task: McpTask, wait: Duration) -> RunningTask {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    RunningTask {
        task_id: task.id,
        session: task.session,
        started_at: i64::try_from(now).unwrap_or(i64::MAX),
        poll_ms: u64::try_from(task.poll.as_millis()).unwrap_or(u64::MAX),
        wait_secs: wait.as_secs(),
        message: None,
    }
}

fn as_task(task: &RunningTask) -> McpTask {
    McpTask { id: task.task_id.clone(), session: task.session.clone(), poll: Duration::from_millis(task.poll_ms) }
}

/// How the task goes; its result once it completed. A server that cannot
/// be reached for a moment leaves it running (asked again at the next
/// poll; the turn's wait is bounded).
pub(crate) async fn poll(server: &ServerSession, task: &RunningTask, reader: Option<&str>) -> TaskPoll {
    let name = &server.endpoint.name;
    let working = |message: Option<String>, poll: Duration| TaskPoll::Working { message, poll };
    let session = match server.get().await {
        Ok(session) => session,
        Err(err) => {
            warn!(server = %name, error = %err, "a task's server could not be reached: asked again at the next poll");
            return working(task.message.clone(), Duration::from_millis(task.poll_ms));
        }
    };
    let mcp_task = as_task(task);
    let (state, poll) = match session.task_state(&mcp_task).await {
        Ok(state) => state,
        Err(err @ (McpError::Unreachable(_) | McpError::TimedOut(_))) => {
            warn!(server = %name, error = %err, "a task's state could not be read: asked again at the next poll");
            return working(task.message.clone(), mcp_task.poll);
        }
        Err(err) => return TaskPoll::Done(Err(call_error(name, err, false))),
    };
    match state {
        McpTaskState::Working(message) => working(message.map(|m| m.chars().take(MAX_MESSAGE).collect()), poll),
        McpTaskState::Completed => {
            info!(server = %name, "a task completed: its result is read");
            TaskPoll::Done(match session.task_result(&mcp_task).await {
                Ok(result) => output(result, reader),
                Err(err) => Err(call_error(name, err, false)),
            })
        }
        McpTaskState::Failed(reason) => {
            let reason: String = reason.chars().take(MAX_MESSAGE).collect();
            TaskPoll::Done(Err(format!("The task on the MCP server {name} failed: {reason}").into()))
        }
        McpTaskState::Cancelled => {
            TaskPoll::Done(Err(format!("The MCP server {name} cancelled the task before it finished.").into()))
        }
        McpTaskState::InputRequired(_) => {
            if let Err(err) = session.cancel_task(&mcp_task).await {
                warn!(server = %name, error = %err, "a task that needs input could not be cancelled");
            }
            TaskPoll::Done(Err(format!(
                "The task on the MCP server {name} stopped to ask the person for input, which this bot gives \
                 only while a call runs, not to a task; it was cancelled. Tell them; do not retry it as it is."
            )
            .into()))
        }
    }
}

/// Asks the server to stop the task; what it answers is only logged.
pub(crate) async fn cancel(server: &ServerSession, task: &RunningTask) {
    let name = &server.endpoint.name;
    let cancelled = match server.get().await {
        Ok(session) => session.cancel_task(&as_task(task)).await,
        Err(err) => Err(err),
    };
    match cancelled {
        Ok(()) => info!(server = %name, "a task the turn gave up on was cancelled"),
        Err(err) => {
            warn!(server = %name, error = %err, "a task the turn gave up on could not be cancelled: the server's TTL ends it")
        }
    }
}

/// The most of a server's words about a task that is kept.
const MAX_MESSAGE: usize = 300;
