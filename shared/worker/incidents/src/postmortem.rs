//! `write_postmortem`: on a person's request in an incident thread ("write
//! the postmortem"), a Slack canvas drafted from the thread's records, and
//! its link for the answer.
//!
//! The model writes the judgement (title, summary, impact, open
//! questions); the facts come from the records, not from the model's
//! memory of the conversation: the alert's incident (when it fired, was
//! acknowledged, fired again, resolved), every settled turn of the thread
//! (what was asked, what was answered, which tools ran) and every call that
//! changed things (the tool, who approved it, when, how it ended). All of
//! it is redacted before it leaves.
//!
//! One canvas per thread: the thread's `POSTMORTEM` record keeps the
//! canvas's id, so asking again rewrites the same canvas. The record is
//! marked before `canvases.create` and holds the id after; a create whose
//! answer was lost leaves a mark without an id, and the next run says it
//! may have made a canvas already before making another (Slack takes no
//! idempotency key and offers no search of canvases by a key of ours).
//!
//! Turned on by `"slack_tools": {"postmortems": true}`; like the other
//! Slack tools, allowed only where a `tool_policy` rule names it. Needs the
//! optional `canvases:write` scope.

use assistant_core::clock::iso8601_utc;
use assistant_core::incidents::{Happening, Incidents};
use assistant_core::keys::{self, RECORD_SECS};
use assistant_core::memory::ChannelMemory;
use assistant_core::model::ToolSpec;
use assistant_core::ports::{Canvases, Put, TurnStore, VersionedRecords};
use assistant_core::store::put_versioned;
use assistant_core::turn::{Content, ToolOutput, ToolStatus, Turn};
use assistant_core::{Clock, ThreadRef};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;
use std::time::Duration;
use tools_registry::{CallContext, Effect, RunTool, Tool, ToolFuture};

pub const WRITE_POSTMORTEM: &str = "write_postmortem";

/// What the tool reads and writes.
#[derive(Clone)]
pub struct PostmortemPorts {
    pub memory: ChannelMemory,
    pub incidents: Incidents,
    pub turns: Arc<dyn TurnStore>,
    pub records: Arc<dyn VersionedRecords>,
    pub canvases: Arc<dyn Canvases>,
    pub clock: Arc<dyn Clock>,
}

pub fn write_postmortem(ports: PostmortemPorts) -> Tool {
    let list = json!({"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 500}, "maxItems": 15});
    let spec = ToolSpec {
        name: WRITE_POSTMORTEM.into(),
        description: "Write (or rewrite) this thread's postmortem as a Slack canvas, when a person asks for it. You \
                      give the title, a short summary, the impact and the open questions; the timeline and the \
                      actions taken are filled in from the incident's and the thread's records. Returns the \
                      canvas's link: put it in your answer."
            .into(),
        input_schema: json!({
            "type": "object",
            "properties": {
                "title": {"type": "string", "minLength": 3, "maxLength": 150},
                "summary": {"type": "string", "minLength": 1, "maxLength": 3000},
                "impact": {"type": "string", "minLength": 1, "maxLength": 3000,
                    "description": "Who or what was affected, how badly, for how long."},
                "open_questions": list,
                "follow_ups": {"type": "array", "items": {"type": "string", "minLength": 1, "maxLength": 500}, "maxItems": 15}
            },
            "required": ["title", "summary", "impact"],
            "additionalProperties": false
        }),
    };
    Tool::new(spec, Effect::ReadOnly, Duration::from_secs(30), WritePostmortem(ports))
        .expect("the built-in schema is valid")
}

struct WritePostmortem(PostmortemPorts);

/// The thread's postmortem canvas, as kept.
#[derive(Debug, Default, Serialize, Deserialize)]
struct PostmortemRecord {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    canvas_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    url: Option<String>,
    /// A create began whose outcome was not recorded.
    #[serde(default)]
    attempted: bool,
}

impl RunTool for WritePostmortem {
    fn run(&self, input: Value, context: CallContext) -> ToolFuture<'_> {
        Box::pin(async move {
            let thread = context.thread.clone().ok_or("write_postmortem works only inside a thread.")?;
            let ports = &self.0;
            let markdown = redact::redact(&self.draft(&input, &thread, context.turn.as_ref()).await).into_owned();
            let title = redact::redact(input["title"].as_str().unwrap_or("Postmortem")).into_owned();
            let key = keys::postmortem(&thread);
            let unreadable =
                |err: String| format!("The postmortem's record cannot be read or kept now ({err}); try again.");
            let stored = ports.records.get(&key).await.map_err(|err| unreadable(err.to_string()))?;
            let version = stored.as_ref().map_or(0, |stored| stored.version);
            let record: PostmortemRecord =
                stored.and_then(|stored| serde_json::from_str(&stored.state).ok()).unwrap_or_default();
            let expires = ports.clock.now_unix() + RECORD_SECS;
            if let (Some(id), Some(url)) = (&record.canvas_id, &record.url) {
                ports.canvases.replace(id, &markdown).await.map_err(|err| {
                    format!("Slack did not take the rewrite of the postmortem canvas ({err}); it is still at {url}.")
                })?;
                return Ok(ToolOutput::Text(format!("The postmortem canvas is rewritten: {url}")));
            }
            let maybe_made = record.attempted;
            let attempt = serde_json::to_string(&PostmortemRecord { attempted: true, ..record }).expect("serializes");
            if put_versioned(ports.records.as_ref(), &key, version, attempt, expires)
                .await
                .map_err(|err| unreadable(err.to_string()))?
                != Put::Written
            {
                return Err(
                    "Another postmortem of this thread is being written right now; ask again in a moment.".into()
                );
            }
            let canvas = ports.canvases.create(&title, &markdown, &thread.channel).await.map_err(|err| {
                format!(
                    "Slack did not take the postmortem canvas ({err}); it may or may not exist. (Creating canvases \
                     needs the optional canvases:write scope.)"
                )
            })?;
            let made = PostmortemRecord {
                canvas_id: Some(canvas.id.clone()),
                url: Some(canvas.url.clone()),
                attempted: false,
            };
            let made = serde_json::to_string(&made).expect("serializes");
            if let Err(err) = put_versioned(ports.records.as_ref(), &key, version + 1, made, expires).await {
                tracing::warn!(error = %err, "the postmortem canvas is made but not recorded: asking again makes another");
            }
            let note = if maybe_made {
                " (An earlier attempt may have made one too, its answer lost: delete the older one if so.)"
            } else {
                ""
            };
            Ok(ToolOutput::Text(format!("The postmortem canvas is written: {}{note}", canvas.url)))
        })
    }
}

impl WritePostmortem {
    /// The canvas's markdown: the model's words, and the records' facts.
    async fn draft(&self, input: &Value, thread: &ThreadRef, current: Option<&assistant_core::TurnId>) -> String {
        let ports = &self.0;
        let text = |field: &str| input[field].as_str().unwrap_or_default().trim().to_owned();
        let items = |field: &str| -> Vec<String> {
            input[field].as_array().into_iter().flatten().filter_map(Value::as_str).map(str::to_owned).collect()
        };
        let mut timeline: Vec<(i64, String)> = Vec::new();
        let incident = ports.incidents.of_thread(thread).await.unwrap_or_else(|err| {
            tracing::warn!(error = %err, "the thread's incident cannot be read: the postmortem goes without it");
            None
        });
        if let Some(incident) = &incident {
            for entry in &incident.timeline {
                let what = match &entry.happening {
                    Happening::Fired => format!("{} alert fired: {}", incident.source.display_name(), incident.title),
                    Happening::FiredAgain => "Fired again".to_owned(),
                    Happening::Acknowledged { by: Some(by) } => format!("Acknowledged by {by}"),
                    Happening::Acknowledged { by: None } => "Acknowledged".to_owned(),
                    Happening::InvestigationStarted => "The assistant started investigating".to_owned(),
                    Happening::Resolved => "Resolved".to_owned(),
                };
                timeline.push((entry.at, what));
            }
        }
        let settled = ports.memory.of_thread(&thread.team, &thread.channel, &thread.thread_ts).await.unwrap_or_else(|err| {
            tracing::warn!(error = %err, "the thread's settled turns cannot be read: the postmortem goes without them");
            Vec::new()
        });
        let mut turn_ids: Vec<_> = settled.iter().map(|memory| memory.turn_id.clone()).collect();
        for memory in &settled {
            let question: String = memory.question.chars().take(200).collect();
            timeline.push((memory.settled_at, format!("Asked: \"{question}\" ({})", memory.status.as_str())));
        }
        turn_ids.extend(current.cloned());
        turn_ids.dedup();
        let mut actions = Vec::new();
        for id in &turn_ids {
            match ports.turns.load(id).await {
                Ok(Some(turn)) => actions.extend(actions_of(&turn)),
                Ok(None) => {}
                Err(err) => tracing::warn!(error = %err, turn = %id, "a turn's actions cannot be read"),
            }
        }
        actions.sort_by_key(|(at, _)| *at);
        for (at, action) in &actions {
            timeline.push((*at, action.clone()));
        }
        timeline.sort_by_key(|(at, _)| *at);

        let mut canvas = format!(
            "# {}\n\n*A draft the assistant wrote from this thread's records on {}. Edit it freely.*\n\n## Summary\n\n{}\n\n## Impact\n\n{}\n\n## Timeline (UTC)\n\n",
            text("title"),
            iso8601_utc(ports.clock.now_unix()),
            text("summary"),
            text("impact"),
        );
        if timeline.is_empty() {
            canvas.push_str("Nothing is on record for this thread.\n");
        }
        for (at, what) in &timeline {
            canvas.push_str(&format!("- {} {what}\n", iso8601_utc(*at)));
        }
        canvas.push_str("\n## Actions taken\n\n");
        if actions.is_empty() {
            canvas.push_str("No call that changed anything was made from this thread.\n");
        }
        for (_, action) in &actions {
            canvas.push_str(&format!("- {action}\n"));
        }
        for (heading, field) in [("Open questions", "open_questions"), ("Follow-ups", "follow_ups")] {
            let list = items(field);
            if !list.is_empty() {
                canvas.push_str(&format!("\n## {heading}\n\n"));
                for item in list {
                    canvas.push_str(&format!("- {item}\n"));
                }
            }
        }
        if let Some(url) = incident.as_ref().and_then(|incident| incident.url.as_ref()) {
            canvas.push_str(&format!("\n[The alert at its source]({url})\n"));
        }
        canvas
    }
}

/// The calls that changed things in `turn`, with who approved each and how
/// it ended.
fn actions_of(turn: &Turn) -> Vec<(i64, String)> {
    turn.actions
        .iter()
        .map(|action| {
            let outcome = turn
                .transcript
                .iter()
                .flat_map(|message| &message.content)
                .find_map(|content| match content {
                    Content::ToolResult(result) if result.tool_use_id == action.tool_use_id => Some(result.status),
                    _ => None,
                })
                .map_or("outcome not recorded", |status| match status {
                    ToolStatus::Success => "succeeded",
                    _ => "failed",
                });
            let how = match &action.grant {
                Some(_) => format!("under a thread grant from ![](@{})", action.approved_by),
                None => format!("approved by ![](@{})", action.approved_by),
            };
            (action.at, format!("`{}`, {how}: {outcome}", action.tool))
        })
        .collect()
}

#[cfg(test)]
mod tests;
